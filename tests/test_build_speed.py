"""The later-call levers of issue 22 item 5, each checked for doing the same work as
what it replaces: Verilator run without its Perl script, the shell includer, the
two-unit split of a small model, the split builds' compile commands, the exit wait on
a pidfd, and the signal line of a Verilator step that a signal ended."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from llm4cov.sim.backends.verilator.build import (
    INCLUDER,
    NO_MODEL_PCH,
    TOP_PREFIX,
    UNITS,
    _say_signal,
    compile_commands,
    make_command,
    mark_no_model_pch,
    split_units,
)
from llm4cov.sim.config import SimConfig
from llm4cov.sim.safety.process import ProcessResult, _exit_waiter

CLASSES_MK = f"""\
VM_PARALLEL_BUILDS = {{parallel}}
VM_CLASSES_FAST += \\
  {TOP_PREFIX} \\
  {TOP_PREFIX}___024root__0 \\

VM_CLASSES_SLOW += \\
  {TOP_PREFIX}___024root__Slow \\

VM_SUPPORT_FAST += \\

VM_SUPPORT_SLOW += \\
  {TOP_PREFIX}__Syms__Slow \\

VM_GLOBAL_FAST += \\
  verilated \\
"""


def _classes(tmp_path, parallel: int = 0, text: str = CLASSES_MK):
    obj = tmp_path / "obj"
    obj.mkdir(parents=True)
    (obj / f"{TOP_PREFIX}_classes.mk").write_text(text.format(parallel=parallel))
    return obj


def test_a_small_model_is_split_into_its_fast_and_slow_files(tmp_path):
    obj = _classes(tmp_path)
    fast, slow = UNITS["FAST"], UNITS["SLOW"]
    assert split_units(obj) == ["VM_PARALLEL_BUILDS=1", f"VM_CLASSES_FAST={fast}",
                                "VM_SUPPORT_FAST=", f"VM_CLASSES_SLOW={slow}",
                                "VM_SUPPORT_SLOW="]
    includes = [line for line in (obj / f"{fast}.cpp").read_text().splitlines()
                if line.startswith("#include")]
    assert includes == [f'#include "{TOP_PREFIX}.cpp"', f'#include "{TOP_PREFIX}___024root__0.cpp"']
    slow_text = (obj / f"{slow}.cpp").read_text()
    assert "#define VL_INCLUDE_OPT include\n" in slow_text
    assert slow_text.count("#include") == 2 and "__Syms__Slow.cpp" in slow_text


def test_models_verilator_splits_itself_or_odd_names_keep_verilators_build(tmp_path):
    assert split_units(_classes(tmp_path / "a", parallel=1)) == []
    odd = CLASSES_MK.replace(f"{TOP_PREFIX}___024root__0 ", "../../evil ")
    assert split_units(_classes(tmp_path / "b", text=odd)) == []
    assert split_units(tmp_path / "missing") == []


def test_split_compiles_without_an_output_name_are_object_compiles(tmp_path):
    """A split build's rule is ``c++ ... -c X.cpp`` (no ``-o``): it writes ``X.o``, and
    the build store must see it to pick the runtime header's flags."""
    obj = tmp_path / "obj"
    obj.mkdir()
    unit = UNITS["FAST"]
    (obj / f"{TOP_PREFIX}.mk").write_text(f"all:\n\tg++ -O0 -include h.h -c {unit}.cpp\n")
    make = make_command(SimConfig(fast_linker=False), 1)
    assert compile_commands(make, tmp_path, {"PATH": "/usr/bin:/bin"}) == {
        f"{unit}.o": f"g++ -O0 -include h.h -c {unit}.cpp"}


def test_the_models_own_header_is_never_precompiled(tmp_path):
    """Make takes the two empty stand-ins as built: no ``-x c++-header`` rule runs."""
    obj = tmp_path / "obj"
    obj.mkdir()
    mark_no_model_pch(obj)
    (obj / f"{TOP_PREFIX}.mk").write_text(
        "VK_PCH_H = real__pch.h\nall: $(VK_PCH_H).fast.gch\n"
        "%.fast.gch: %\n\tg++ -x c++-header $< -o $@\n")
    make = make_command(SimConfig(fast_linker=False), 1)
    assert f"VK_PCH_H={NO_MODEL_PCH}" in make
    dry = subprocess.run([*make, "-n"], cwd=tmp_path, capture_output=True, text=True)
    assert dry.returncode == 0 and "c++-header" not in dry.stdout, dry.stdout + dry.stderr


@pytest.mark.requires_verilator
def test_the_shell_includer_writes_what_verilators_includer_writes(tmp_path):
    from llm4cov.sim.backends.verilator.toolchain import find_toolchain

    args = ["-DVL_INCLUDE_OPT=include", "-DODD=a=b", "Va.cpp", "Va__Slow.cpp"]
    ours = subprocess.run(["/bin/sh", str(INCLUDER), *args], capture_output=True, text=True)
    script = find_toolchain().verilator_root / "bin" / "verilator_includer"
    theirs = subprocess.run([sys.executable, str(script), *args], capture_output=True,
                            text=True)
    assert ours.returncode == theirs.returncode == 0
    assert ours.stdout == theirs.stdout
    assert ours.stdout.splitlines()[1:] == [
        "#define VL_INCLUDE_OPT include", "#define ODD a=b",
        '#include "Va.cpp"', '#include "Va__Slow.cpp"']


@pytest.mark.requires_verilator
def test_verilator_runs_without_its_script_with_the_stack_unlimited():
    from llm4cov.sim.backends.verilator.toolchain import find_toolchain

    chain = find_toolchain()
    command = chain.command()
    assert command[-1] == str(chain.verilator_bin) and command[0] == "/bin/sh"
    out = subprocess.run([*command, "--version"], capture_output=True, text=True,
                         env=chain.env())
    assert out.returncode == 0 and out.stdout.strip() == chain.version
    stack = subprocess.run([*command[:-1], "/bin/sh", "-c", "ulimit -s"],
                           capture_output=True, text=True)
    hard = subprocess.run(["/bin/sh", "-c", "ulimit -Hs"], capture_output=True, text=True)
    assert stack.stdout.strip() == hard.stdout.strip()  # unlimited where allowed


def test_the_exit_wait_reports_a_running_then_an_ended_process():
    proc = subprocess.Popen(["sleep", "30"])
    with _exit_waiter(proc) as exited:
        assert exited(0.0) is False and proc.returncode is None
        proc.kill()
        assert exited(30.0) is True
    assert proc.returncode == -9


def test_a_signal_that_ended_verilator_is_said_in_its_output():
    def result(code: int) -> ProcessResult:
        return ProcessResult(returncode=code, output="%Error: x\n", timed_out=False,
                             wall_s=0.1, output_bytes=9)

    assert "ended on signal 11" in _say_signal(result(139)).output  # under bubblewrap
    assert "ended on signal 6" in _say_signal(result(-6)).output  # bare
    assert _say_signal(result(1)).output == "%Error: x\n"  # Verilator's own errors


def test_a_dry_run_is_repeated_only_when_what_it_depends_on_changes(tmp_path, monkeypatch):
    from llm4cov.sim.backends.verilator import build

    runs = []
    real = build.run_limited
    monkeypatch.setattr(build, "run_limited", lambda *a, **k: runs.append(a) or real(*a, **k))
    monkeypatch.setattr(build, "_DRY_RUNS", {})
    obj = tmp_path / "obj"
    obj.mkdir()
    mk = obj / f"{TOP_PREFIX}.mk"
    mk.write_text("all:\n\tg++ -O0 -c -o a.o a.cpp\n")
    make = make_command(SimConfig(fast_linker=False), 1)
    env = {"PATH": "/usr/bin:/bin"}
    first = compile_commands(make, tmp_path, env)
    assert compile_commands(make, tmp_path, env) == first == {"a.o": "g++ -O0 -c -o a.o a.cpp"}
    assert len(runs) == 1
    mk.write_text("all:\n\tg++ -O1 -c -o a.o a.cpp\n")  # another makefile: run again
    assert compile_commands(make, tmp_path, env) == {"a.o": "g++ -O1 -c -o a.o a.cpp"}
    (obj / "new.cpp").write_text("")  # another file in obj/: run again
    compile_commands(make, tmp_path, env)
    assert len(runs) == 3


def test_a_later_process_reads_the_dry_run_from_the_store(tmp_path, monkeypatch):
    from llm4cov.sim.backends.verilator import build

    runs = []
    real = build.run_limited
    monkeypatch.setattr(build, "run_limited", lambda *a, **k: runs.append(a) or real(*a, **k))
    monkeypatch.setattr(build, "_DRY_RUNS", {})
    work, store = tmp_path / "work", tmp_path / "store"
    (work / "obj").mkdir(parents=True)
    (work / "obj" / f"{TOP_PREFIX}.mk").write_text("all:\n\tg++ -O0 -c -o a.o a.cpp\n")
    make = make_command(SimConfig(fast_linker=False), 1)
    env = {"PATH": "/usr/bin:/bin"}
    want = {"a.o": "g++ -O0 -c -o a.o a.cpp"}
    assert compile_commands(make, work, env, store_root=store) == want
    (kept,) = (store / build.DRY_RUN_DIR).iterdir()
    build._DRY_RUNS.clear()  # as a new process
    assert compile_commands(make, work, env, store_root=store) == want
    assert len(runs) == 1
    kept.write_text('{"a.o": 1}')  # damaged: asked again and replaced
    build._DRY_RUNS.clear()
    assert compile_commands(make, work, env, store_root=store) == want
    assert len(runs) == 2
    assert json.loads(kept.read_text()) == want
    (work / "obj" / f"{TOP_PREFIX}.mk").write_text("include absent.mk\n")  # fails: not kept
    assert compile_commands(make, work, env, store_root=store) == {}
    assert len(list((store / build.DRY_RUN_DIR).iterdir())) == 1
