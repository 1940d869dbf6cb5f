"""Host facts remembered across processes (``util/remembered.py``): the tool probes a
later ``llm4cov sim`` process no longer repeats, and when they are asked again."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from llm4cov.sim.backends.verilator import artifacts
from llm4cov.sim.safety import isolation
from llm4cov.util.remembered import HOST_DIR, file_identity, remembered


def counting_ask(answer: str | None):
    calls: list[int] = []

    def ask() -> str | None:
        calls.append(1)
        return answer

    return ask, calls


def test_an_answer_is_asked_once_per_identity(tmp_path):
    ask, calls = counting_ask("v1")
    assert remembered(tmp_path, "tool", ["a"], ask) == "v1"
    assert remembered(tmp_path, "tool", ["a"], ask) == "v1"
    assert len(calls) == 1
    assert remembered(tmp_path, "tool", ["b"], ask) == "v1"  # another identity
    assert remembered(tmp_path, "other", ["a"], ask) == "v1"  # another question
    assert len(calls) == 3
    assert len(list((tmp_path / HOST_DIR).iterdir())) == 3


def test_a_failed_answer_is_never_kept(tmp_path):
    ask, calls = counting_ask(None)
    assert remembered(tmp_path, "tool", ["a"], ask) is None
    assert remembered(tmp_path, "tool", ["a"], ask) is None
    assert len(calls) == 2
    assert not (tmp_path / HOST_DIR).exists() or not any((tmp_path / HOST_DIR).iterdir())


def test_a_planted_link_or_oversized_file_is_not_read(tmp_path):
    ask, calls = counting_ask("real")
    remembered(tmp_path, "tool", ["a"], ask)
    (kept,) = (tmp_path / HOST_DIR).iterdir()
    secret = tmp_path / "secret"
    secret.write_text("forged")
    kept.unlink()
    kept.symlink_to(secret)
    assert remembered(tmp_path, "tool", ["a"], ask) == "real"
    assert len(calls) == 2
    assert not kept.is_symlink()  # replaced by the answer, the link target untouched
    assert secret.read_text() == "forged"
    kept.write_text("x" * 5000)
    assert remembered(tmp_path, "tool", ["a"], ask) == "real"
    assert len(calls) == 3


def test_an_unwritable_store_still_answers(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("")  # the root is a file: nothing can be kept below it
    ask, calls = counting_ask("v")
    assert remembered(blocked, "tool", ["a"], ask) == "v"
    assert remembered(blocked, "tool", ["a"], ask) == "v"
    assert len(calls) == 2


def test_file_identity_moves_with_any_rewrite(tmp_path):
    tool = tmp_path / "tool"
    tool.write_text("one")
    before = file_identity(tool)
    st = tool.stat()
    tool.write_text("two")  # same size; mtime set back: the change time still moves
    os.utime(tool, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert file_identity(tool) != before
    link = tmp_path / "link"
    link.symlink_to(tool)
    assert file_identity(link) == file_identity(tool)  # the file, not the name
    assert file_identity(tmp_path / "absent") == "missing"
    assert file_identity(None) == "missing"


@pytest.fixture
def fake_compiler(tmp_path, monkeypatch):
    """A compiler on PATH whose ``--version`` counts its own runs in ``runs``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "fakecxx"
    runs = tmp_path / "runs"
    script.write_text(f"#!/bin/sh\necho x >> {runs}\necho 'fakecxx 1.0'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("LLM4COV_CACHE_DIR", str(tmp_path / "cache"))
    artifacts.compiler_version.cache_clear()
    yield script, runs
    artifacts.compiler_version.cache_clear()


def test_a_later_process_does_not_run_the_compiler_again(fake_compiler):
    script, runs = fake_compiler
    assert artifacts.compiler_version("fakecxx") == "fakecxx 1.0"
    artifacts.compiler_version.cache_clear()  # as a new process
    assert artifacts.compiler_version("fakecxx") == "fakecxx 1.0"
    assert runs.read_text().count("x") == 1
    script.write_text(script.read_text().replace("1.0", "2.0"))  # upgraded in place
    artifacts.compiler_version.cache_clear()
    assert artifacts.compiler_version("fakecxx") == "fakecxx 2.0"
    assert runs.read_text().count("x") == 2


def test_the_sandbox_identity_names_the_boot_namespaces_and_bwrap():
    facts = isolation.host_identity()
    assert facts[0] == file_identity(isolation.bwrap_path())
    assert any(f.startswith("user:[") for f in facts)
    assert any(f.startswith("mnt:[") for f in facts)
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert f"/proc/sys/kernel/random/boot_id {boot}" in facts
    assert any(f.startswith("Seccomp:") for f in facts)


@pytest.fixture
def counting_bwrap(tmp_path, monkeypatch):
    """A real shim in front of bwrap that counts its starts in ``starts``; ``fail``
    (a file) makes it exit 1 like a host that forbids user namespaces."""
    shim = tmp_path / "bwrap"
    starts, fail = tmp_path / "starts", tmp_path / "fail"
    real = isolation.bwrap_path()
    shim.write_text(f'#!/bin/sh\necho x >> "{starts}"\n'
                    f'[ -e "{fail}" ] && {{ echo "bwrap: no permission" >&2; exit 1; }}\n'
                    f'exec "{real}" "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setattr(isolation, "bwrap_path", lambda: shim)
    monkeypatch.setenv("LLM4COV_CACHE_DIR", str(tmp_path / "cache"))
    isolation._probe.cache_clear()
    yield shim, starts, fail
    isolation._probe.cache_clear()


def test_a_later_process_does_not_probe_the_sandbox_again(counting_bwrap):
    _shim, starts, _fail = counting_bwrap
    if not isolation.available():
        pytest.skip("the OS sandbox cannot start on this host")
    isolation._probe.cache_clear()  # as a new process
    assert isolation.available()
    assert starts.read_text().count("x") == 1


def test_a_sandbox_that_fails_is_asked_again_and_reported(counting_bwrap):
    _shim, starts, fail = counting_bwrap
    fail.write_text("")
    assert not isolation.available()
    isolation._probe.cache_clear()
    with pytest.raises(isolation.SandboxUnavailable, match="bwrap: no permission"):
        isolation.require()
    assert starts.read_text().count("x") == 2
    fail.unlink()  # fixed: the next process sees it (the failure was not kept)
    isolation._probe.cache_clear()
    if isolation._run_probe() is not None:
        pytest.skip("the OS sandbox cannot start on this host")
    isolation._probe.cache_clear()
    assert isolation.available()
    assert starts.read_text().count("x") == 4  # the check above, then this probe
