"""The build steps are untrusted too (issue 20): probes of every kind, each of which
got out on the code before the fix.

Kinds: make code from a `` `line`` file name or a task/aux file name, the user's
environment (API keys) inside a build step, names that collide with the evaluator's
own files, a build store fed by a build a testbench took part in, two views of one
testbench, untrusted names pasted into generated code, and builds without per-call
bounds. The API-key canaries are set in this process's environment, as a user's keys
would be.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

import pytest

from llm4cov.cli.app import main
from llm4cov.sim.analysis.structure import StructureError, plan_testbench
from llm4cov.sim.backends.verilator.artifacts import _pch_intact
from llm4cov.sim.backends.verilator.build import DRY_RUN_DIR
from llm4cov.sim.cache import BUILD_DIR, cache_root
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.call import SimCall
from llm4cov.sim.model.observation import EndReason, Status
from llm4cov.sim.safety import isolation, workdirs
from llm4cov.sim.safety.process import Limits, run_limited
from llm4cov.sim.safety.static_check import inspect_testbench
from llm4cov.tasks.model import SourceFile, Task
from support import default_preprocessor

COUNTER = """module counter(input logic clk, input logic rst, input logic en,
               output logic [3:0] q);
  always_ff @(posedge clk) if (rst) q <= 4'd0; else if (en) q <= q + 4'd1;
endmodule
"""
TASK = Task(id="probe/counter", rtl_files=[SourceFile(name="counter.sv", content=COUNTER)],
            dut_module_name="counter")
PORTS = "  logic clk = 0, rst = 1, en = 0; logic [3:0] q;\n"
DUT = "  counter dut(.clk(clk), .rst(rst), .en(en), .q(q));\n"
STIMULUS = ("  always #5 clk = ~clk;\n"
            "  initial begin #12 rst = 0; en = 1; #200 $finish; end\n")
TB = "module tb;\n" + PORTS + DUT + STIMULUS + "endmodule\n"
MAKE_CODE = "$(info MAKE-RAN-$(shell echo $$((6*7))) key=$(OPENAI_API_KEY))"
CANARY = {"OPENAI_API_KEY": "canary-openai-5f1e", "LLM4COV_API_KEY": "canary-llm4cov-9b2d"}

pytestmark = pytest.mark.skipif(not isolation.available(), reason="bubblewrap cannot run here")


@pytest.fixture()
def keys(monkeypatch):
    """The user's API keys, set in the environment of the process that simulates."""
    for name, value in CANARY.items():
        monkeypatch.setenv(name, value)
    return CANARY


def _leaked(text: str) -> list[str]:
    return [v for v in CANARY.values() if v in text]


# -- make code from untrusted text -------------------------------------------------------


@pytest.mark.requires_verilator
@pytest.mark.parametrize("name", [f"x{MAKE_CODE}.sv", "a b.sv", "a:b.sv", "x;y.sv",
                                  "x#y.sv", "p%q.sv", "t'q.sv", "~x.sv"])
def test_a_line_file_name_outside_the_name_rule_is_rejected(name):
    tb = TB.replace(STIMULUS, STIMULUS + f'`line 20 "{name}" 0\n  initial $display("x");\n')
    reasons = inspect_testbench(tb, "tb.sv", TASK,
                                preprocessor=default_preprocessor(TASK)).reasons
    assert len(reasons) == 1 and reasons[0].startswith("tb.sv:6: `line names the file"), reasons


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_make_never_reads_the_dependency_files_verilator_writes(keys, tmp_path):
    """With the static check off: the `line name reaches obj/*__ver.d, which make
    included as a makefile (it printed MAKE-RAN-42 and the key)."""
    tb = TB.replace(STIMULUS, STIMULUS + f'`line 20 "x{MAKE_CODE}.sv" 0\n'
                    '  initial $display("after the line directive");\n')
    obs = Evaluator(SimConfig(static_check=False, result_cache=False)).evaluate(TASK, tb)
    assert obs.status is Status.SUCCESS, obs.log
    assert "MAKE-RAN" not in obs.log and not _leaked(obs.log)
    assert "after the line directive" in obs.log


@pytest.mark.requires_verilator
def test_files_named_like_the_evaluators_own_are_ordinary_repo_files(keys, tmp_path):
    """Aux files named `obj/x.d` (make read it as a makefile), like the precompiled
    header (every object force-included it, and the store kept them) or the driver's
    hooks header now lie in the sources folder, apart from the evaluator's files; log
    names stay the repo's own."""
    aux = [SourceFile(name="obj/llm4cov_extra.d", content=f"{MAKE_CODE}\n"),
           SourceFile(name="llm4cov_pch/llm4cov_pch.h", content="#error POISONED-PCH\n"),
           SourceFile(name="driver_hooks.h", content="#error POISONED-HOOKS\n")]
    config = SimConfig(result_cache=False, keep_workdir=True, workdir_root=str(tmp_path))
    obs = Evaluator(config).evaluate(TASK, TB, aux_files=aux)
    assert obs.status is Status.SUCCESS, obs.log
    assert "MAKE-RAN" not in obs.log and "POISONED" not in obs.log and not _leaked(obs.log)
    assert "tb.sv:5: Verilog $finish" in obs.log and str(tmp_path) not in obs.log
    assert {f.file for f in obs.uncovered} <= {"counter.sv"}
    (work,) = tmp_path.glob("llm4cov-*")
    src = workdirs.sources(work)
    assert sorted(p.name for p in src.iterdir()) == [
        "counter.sv", "driver_hooks.h", "llm4cov_pch", "obj", "tb.sv"]
    assert (src / "obj" / "llm4cov_extra.d").is_file()
    assert {"obj", "driver_main.cpp", "coverage.dat"} <= {p.name for p in work.iterdir()}
    assert not (work / "obj" / "llm4cov_extra.d").exists()
    assert (work / "driver_hooks.h").read_text() != "#error POISONED-HOOKS\n"


# -- the environment of every sandboxed step ---------------------------------------------


def test_a_sandboxed_step_gets_only_allowlisted_variables():
    env = {"OPENAI_API_KEY": "k", "LD_PRELOAD": "/x.so", "MAKEFILES": "/x.mk",
           "HOME": "/home/u", "LC_ALL": "C", "CCACHE_DIR": "/c", "MINE": "1"}
    assert isolation.sandbox_env(env, keep=("MINE",)) == {
        "HOME": "/home/u", "LC_ALL": "C", "CCACHE_DIR": "/c", "MINE": "1",
        "PATH": isolation.sandbox_env({})["PATH"], "TMPDIR": "/tmp"}


@pytest.mark.requires_verilator
def test_every_sandboxed_step_runs_without_the_users_keys(keys, tmp_path, monkeypatch):
    """A real shim in front of bwrap records the environment each sandboxed step
    gets (the static check's -E, Verilator, make's dry run, make, the simulation)."""
    shim = tmp_path / "bwrap"
    shim.write_text(f'#!/bin/sh\nenv > "{tmp_path}/step-$$.env"\n'
                    f'exec "{isolation.bwrap_path()}" "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setattr(isolation, "bwrap_path", lambda: shim)
    monkeypatch.setattr("llm4cov.sim.backends.verilator.build._DRY_RUNS", {})  # dry run too
    shutil.rmtree(cache_root(SimConfig()) / BUILD_DIR / DRY_RUN_DIR, ignore_errors=True)
    tb = TB.replace("#200", "#210")  # not a testbench any cache holds
    obs = Evaluator(SimConfig(result_cache=False)).evaluate(TASK, tb)
    assert obs.status is Status.SUCCESS, obs.log
    steps = [p.read_text() for p in tmp_path.glob("step-*.env")]
    assert len(steps) >= 5
    assert any("LLM4COV_COVERAGE_FILE=" in s for s in steps)  # the simulation
    assert sum("VERILATOR_ROOT=" in s for s in steps) >= 4  # check, verilate, make -n, make
    for step in steps:
        assert not _leaked(step) and "API_KEY" not in step, step


def test_a_formal_job_runs_without_the_users_keys(keys, tmp_path):
    """Formal jobs use the same sandboxed runner; the job here prints its environment."""
    from llm4cov.formal.tools import FormalToolError, find_tools, run_tool

    try:
        tools = find_tools()
    except FormalToolError as exc:
        pytest.skip(str(exc))
    done = run_tool(tools, ["env"], tmp_path, 60)
    assert done.returncode == 0 and "PATH=" in done.output, done.output
    assert not _leaked(done.output) and "API_KEY" not in done.output


@pytest.mark.requires_verilator
def test_a_make_variable_naming_a_key_expands_to_nothing(keys):
    """make expands $(NAME) from its environment: a key there reached the log."""
    config = SimConfig(result_cache=False,
                       extra_verilator_args=("-CFLAGS", "-include$(OPENAI_API_KEY)"))
    obs = Evaluator(config).evaluate(TASK, TB)
    assert obs.status is Status.COMPILE_ERROR
    assert not _leaked(obs.log), obs.log


# -- names that collide with the evaluator's files ---------------------------------------


@pytest.mark.parametrize(("names", "message"), [
    (["counter.sv", "x$(shell id).sv"], "holds '$'"),
    (["counter.sv", "a b.sv"], "holds ' '"),
    (["counter.sv", "in\nc.vh"], "holds '\\n'"),
    (["counter.sv", "./inc.vh"], "without empty, '.' or '..'"),
    (["counter.sv", "inc.vh", "inc.vh"], "collides"),
    (["counter.sv", "inc.vh", "inc.vh/x.vh"], "collides"),
    # a part past 200 characters, a path past 1,024 or 32 folders (a twenty-seventh red
    # team: 303 characters failed every use with ENAMETOOLONG and stopped a bench)
    (["counter.sv", "a" * 201 + ".sv"], "has a part longer than 200 characters"),
    (["counter.sv", "/".join(["d" * 100] * 11) + ".sv"], "longer than 1024 characters"),
    (["counter.sv", "d/" * 32 + "x.sv"], "or 32 folders deep"),
])
def test_unusable_or_colliding_rtl_names_are_refused_when_the_task_loads(names, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        Task(id="t", rtl_files=[SourceFile(name=n, content=COUNTER) for n in names],
             dut_module_name="counter")


@pytest.mark.parametrize(("field", "value", "message"), [
    ("include_dirs", ["i" * 201], "has a part longer than 200 characters"),
    ("defines", {"BIG": "1" * 4097}, "the value of BIG is longer than 4096 characters"),
    ("parameters", {"W" * 1025: "1"}, "... is longer than 1024 characters"),
    ("defines", {f"D{i}": "1" for i in range(1025)}, "more than 1024 defines or parameters"),
])
def test_task_data_that_would_pass_the_command_line_limits_is_refused(field, value, message):
    """Each define, parameter, file and include dir is a command-line argument: a
    200,000-character define passed the kernel's limit on one (E2BIG: Verilator never
    started, a bench never ended; a twenty-seventh red team)."""
    with pytest.raises(ValueError, match=re.escape(message)):
        Task(id="t", rtl_files=[SourceFile(name="counter.sv", content=COUNTER)],
             dut_module_name="counter", **{field: value})
    assert Task(id="t", rtl_files=[SourceFile(name="counter.sv", content=COUNTER)],
                dut_module_name="counter", defines={"OK": "1" * 4096}).defines["OK"]


def test_a_check_the_host_cannot_start_is_a_tool_error_not_an_exception():
    """An OSError of the static check (its scratch dir cannot be made, Verilator cannot
    be started) is an observation, as one of the build is."""
    obs = Evaluator(SimConfig(result_cache=False, workdir_root="/nonexistent/llm4cov")
                    ).evaluate(TASK, TB)
    assert (obs.status, obs.tool_error) == (Status.TOOL_ERROR, True)
    assert obs.log.startswith("evaluator infrastructure error (not the testbench): [Errno 2]")


@pytest.mark.parametrize("aux", ["counter.sv", "counter.sv/x.hex", "x$(y).hex", "a\x1b]0;t"])
def test_an_unusable_aux_name_never_reaches_the_work_dir(aux):
    call = SimCall(TASK, TB, aux_files=(SourceFile(name=aux, content="x\n"),))
    with pytest.raises(ValueError, match="aux file name"):
        Evaluator(SimConfig(result_cache=False)).evaluate_call(call)


def test_the_cli_refuses_a_bad_repo_or_aux_name_in_one_line(tmp_path, capsys):
    rtl = tmp_path / "rtl"
    rtl.mkdir()
    (rtl / "counter.sv").write_text(COUNTER)
    tb = tmp_path / "tb.sv"
    tb.write_text(TB)
    (tmp_path / "counter.sv").write_text("not rtl\n")
    assert main(["sim", "--rtl", str(rtl), "--tb", str(tb),
                 "--aux", str(tmp_path / "counter.sv")]) == 2
    assert capsys.readouterr().err == (
        "error: --aux file name 'counter.sv' collides with another file of the same "
        "work dir\n")
    (rtl / "x$(id).vh").write_text("\n")
    assert main(["sim", "--rtl", str(rtl), "--tb", str(tb)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {rtl}: rtl file name 'x$(id).vh' holds '$'")
    assert err.count("\n") == 1


# -- the build store ---------------------------------------------------------------------


def _store(cache_dir: Path | None = None) -> Path:
    return cache_root(SimConfig(cache_dir=str(cache_dir) if cache_dir else None)) / BUILD_DIR


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_a_foreign_stored_object_is_rebuilt_not_used():
    """Entries whose content hashes right but belong to another key (an old-format
    entry, a copy of another object) are foreign: rebuilt, never linked."""
    evaluator = Evaluator(SimConfig(result_cache=False))
    assert evaluator.evaluate(TASK, TB.replace("#200", "#220")).status is Status.SUCCESS
    objects = sorted((_store() / "objects").glob("*.obj"))
    drivers = [p for p in objects if b"llm4cov-end/1" in p.read_bytes()]
    others = [p for p in objects if p not in drivers]
    assert drivers and others
    foreign = others[0].read_bytes().split(b"\n", 1)[1]
    for driver in drivers:  # the old format: the content's hash only, no key
        driver.write_bytes(b"sha256:" + hashlib.sha256(foreign).hexdigest().encode()
                           + b"\n" + foreign)
    obs = evaluator.evaluate(TASK, TB.replace("#200", "#230"))
    assert obs.status is Status.SUCCESS, obs.log
    rebuilt = [d for d in drivers if b"llm4cov-end/1" in d.read_bytes()]
    assert rebuilt and all(d.read_bytes().startswith(
        f"llm4cov-object/2 key={d.stem} sha256=".encode()) for d in rebuilt)


def _pch_entry(tmp_path: Path, key: str) -> Path:
    """A well-formed precompiled-header entry of ``key`` (a 3-byte stand-in header)."""
    entry = tmp_path / key
    entry.mkdir()
    (entry / "llm4cov_pch.h").write_text("// header\n")
    (entry / "llm4cov_pch.h.gch").write_bytes(b"gch")
    sums = [f"{hashlib.sha256(entry.joinpath(n).read_bytes()).hexdigest()}  {n}"
            for n in ("llm4cov_pch.h", "llm4cov_pch.h.gch")]
    (entry / "SHA256SUMS").write_text("\n".join([f"key {key}", *sums]) + "\n")
    return entry


def test_a_precompiled_header_entry_of_another_key_is_foreign(tmp_path):
    entry = _pch_entry(tmp_path, "abc")
    assert _pch_intact(entry, "abc")
    assert not _pch_intact(entry, "def")


def test_a_recorded_check_spares_a_later_process_the_hash_but_not_a_changed_file(
        tmp_path, monkeypatch):
    """The signature of a full check is kept beside the entry: a later process (here:
    the in-process memo cleared) trusts an unchanged entry without hashing; a file
    rewritten with its size and mtime put back still has a new ctime, so it is hashed
    again and found changed."""
    from llm4cov.sim.backends.verilator import artifacts

    entry = _pch_entry(tmp_path, "abc")
    assert _pch_intact(entry, "abc")
    assert (tmp_path / "abc.verified").is_file()
    hashed: list[Path] = []
    real_hash = artifacts.sha256_file
    monkeypatch.setattr(artifacts, "sha256_file", lambda p: hashed.append(p) or real_hash(p))
    artifacts._verified_pch.clear()
    assert _pch_intact(entry, "abc") and hashed == []
    assert not _pch_intact(entry, "def")  # the record is of key abc only
    gch = entry / "llm4cov_pch.h.gch"
    before = gch.stat()
    gch.write_bytes(b"GCH")  # same size
    os.utime(gch, ns=(before.st_atime_ns, before.st_mtime_ns))
    artifacts._verified_pch.clear()
    assert not _pch_intact(entry, "abc") and hashed


@pytest.mark.slow  # a cold store: the precompiled header and runtime objects, once
@pytest.mark.requires_verilator
def test_the_store_is_built_from_pristine_inputs_never_from_a_build(tmp_path):
    """A work dir whose evaluator files were replaced (as make code once could) builds
    with them, but the store keeps the objects compiled from the evaluator's own."""
    config = SimConfig(result_cache=False, cache_dir=str(tmp_path / "cache"),
                       keep_workdir=True, workdir_root=str(tmp_path))
    evaluator = Evaluator(config)
    backend = evaluator.backend
    tb = SourceFile(name="tb.sv", content=TB)
    plan = plan_testbench(TASK.rtl_files, tb, "counter", "dut")
    work = workdirs.create(str(tmp_path))
    for f in [*TASK.rtl_files, tb]:
        (workdirs.sources(work) / f.name).parent.mkdir(parents=True, exist_ok=True)
        (workdirs.sources(work) / f.name).write_text(f.content)
    backend.stage(work)
    driver = work / "driver_main.cpp"
    driver.write_text(driver.read_text()
                      + '\n__attribute__((used)) const char tampered[] = "TAMPERED-DRIVER";\n')
    (work / "llm4cov_pch").mkdir()
    (work / "llm4cov_pch" / "llm4cov_pch.h").write_text(
        '#include "verilated.h"\n#include "verilated_cov.h"\n'
        '__attribute__((used)) static const char poison[] = "TAMPERED-HEADER";\n')
    build = backend.build(TASK, tb, plan, work)
    assert build.returncode == 0, build.output
    stored = list((tmp_path / "cache" / BUILD_DIR / "objects").glob("*.obj"))
    assert len(stored) >= 4
    for entry in stored:
        assert b"TAMPERED" not in entry.read_bytes(), entry
    assert any(b"llm4cov-end/1" in e.read_bytes() for e in stored)  # the driver, pristine


# -- one view of the testbench -----------------------------------------------------------


@pytest.mark.requires_verilator
def test_a_module_hidden_from_the_parser_is_the_testbenchs(evaluator):
    """Under `ifdef VERILATOR the testbench instantiates its own module named like a
    specialized copy of the DUT, with `line into counter.sv; the parser without
    Verilator's macros saw the real DUT, and the run scored 100%."""
    tb = ("module tb;\n" + PORTS
          + "`ifdef VERILATOR\n  counter__fake dut(.clk(clk), .rst(rst), .en(en), .q(q));\n"
          + "`else\n" + DUT + "`endif\n" + STIMULUS + "endmodule\n"
          + "`ifdef VERILATOR\nmodule counter__fake(input logic clk, input logic rst,"
          + " input logic en, output logic [3:0] q);\n`line 2 \"counter.sv\" 0\n"
          + "  always_ff @(posedge clk) begin q <= 4'd0; q <= 4'd15; end\n"
          + "endmodule\n`endif\n")
    obs = evaluator.evaluate(TASK, tb)
    assert obs.status is Status.COMPILE_ERROR
    assert "does not instantiate the DUT module `counter`" in obs.log


@pytest.mark.requires_verilator
def test_the_plan_follows_verilators_macros_and_includes(evaluator):
    """What Verilator compiles decides: a DUT instance only Verilator's macros reveal is
    found (the parser's view had none), and a testbench that includes the RTL file
    still counts the RTL's module (Verilator keeps its first declaration)."""
    tb = ('`include "counter.sv"\nmodule tb;\n' + PORTS
          + "`ifdef VERILATOR\n" + DUT + "`else\n  wire unused;\n`endif\n"
          + STIMULUS + "endmodule\n")
    inspection = evaluator.inspect(TASK, SourceFile(name="tb.sv", content=tb))
    plan = plan_testbench(TASK.rtl_files, SourceFile(name="tb.sv", content=tb), "counter",
                          "dut", view=inspection.view)
    assert (plan.tb_top, plan.dut_hier) == ("tb", "tb.dut")
    assert plan.modules.rtl == {"counter"} and plan.modules.testbench == {"tb"}
    with pytest.raises(StructureError):
        plan_testbench(TASK.rtl_files, SourceFile(name="tb.sv", content=tb), "counter", "dut")
    obs = evaluator.evaluate(TASK, tb)
    assert obs.status is Status.SUCCESS, obs.log
    assert obs.coverage.overall > 50


# -- generated source --------------------------------------------------------------------


@pytest.mark.requires_verilator
def test_an_escaped_genvar_pasted_by_the_rewrite_is_checked_like_the_testbench(evaluator):
    """The per-instance rewrite pastes a generate loop's genvar into a parameter
    expression; an escaped identifier then became code that the check never saw (it
    printed GENVAR-INJECTED twice: `g` names a localparam, so the pasted text compiles).
    The name holds no `.` or `*` (those alone are refused at once, the first check)."""
    genvar = r'\g)))u_x();initial#0$system("echo${IFS}GENVAR-INJECTED");//'
    tb = ("module tb;\n" + PORTS + DUT + "  localparam int g = 0;\n" + f"  genvar {genvar} ;\n"
          + f"  for ({genvar} = 0; {genvar} < 2; {genvar} ++) begin : gen\n"
          + "    counter c(.clk(clk), .rst(rst), .en(en), .q());\n  end\n"
          + STIMULUS + "endmodule\n")
    obs = evaluator.evaluate(TASK, tb)
    assert obs.status is Status.REJECTED, obs.log
    assert "rewrote or extended" in obs.log and "$system is not allowed" in obs.log
    assert "GENVAR-INJECTED" not in obs.log


@pytest.mark.slow  # a traced build
@pytest.mark.requires_verilator
def test_the_waveform_wrapper_binds_an_escaped_top_name_as_a_name(tmp_path):
    """The wrapper pasted the top's name into `bind NAME ...`: an escaped identifier
    with /**/ in it became statements."""
    from llm4cov.report.capture import capture

    name = (r"\counter/**/llm4cov_trace/**/u0();module/**/inj;initial/**/"
            r'$display("TRACE-INJECTED");endmodule/**/bind/**/counter/**/inj/**/u1();//')
    tb = TB.replace("module tb;", f"module {name} ;")
    cap = capture(TASK, tb, SimConfig(workdir_root=str(tmp_path)), tmp_path / "out",
                  trace="vcd")
    assert cap.observation.end_reason is EndReason.FINISH, cap.observation.log
    assert "TRACE-INJECTED" not in cap.observation.log
    assert cap.trace is not None and "$scope module dut $end" in cap.trace.read_text()


# -- per-call bounds of the build --------------------------------------------------------

#: An elaboration that takes Verilator ~15 s of CPU and ~550 MB (100,000 generate blocks;
#: the stimulus check's own elaboration stops past its symbol bound, so the build's
#: bounds are tested with that check off).
EXPLODING = TB.replace(STIMULUS, STIMULUS + (
    "  for (genvar j = 0; j < 100; j++) begin : o\n"
    "    for (genvar i = 0; i < 1000; i++) begin : g\n"
    "      logic [3:0] x; assign x = q ^ i[3:0];\n    end\n  end\n"))


@pytest.mark.requires_verilator
@pytest.mark.parametrize(("bounds", "message", "tb"), [
    ({"build_cpu_limit_s": 1.0}, "CPU-time bound (1 s of CPU", EXPLODING),
    ({"build_memory_bytes": 150 << 20}, "memory bound (150 MiB of memory", EXPLODING),
    # any C++ compile passes 3 processes (verilator, make, the compiler driver, cc1plus):
    # the plain testbench reaches it without EXPLODING's ~15 s elaboration first
    ({"build_processes": 3}, "process-count bound (3 processes", TB),
    # the plain testbench's C++ and objects pass 256 KiB (a red team's suspicion: no
    # bound on what a build writes, so a design that makes Verilator write without end
    # within its CPU bound could fill the host's disk)
    ({"build_dir_bytes": 256 << 10}, "disk bound (256 KiB written", TB),
])
def test_a_build_past_a_per_call_bound_is_rejected_and_cached(bounds, message, tb):
    # the session's cache dir (conftest): a fresh one would first precompile the runtime
    # (the bounds are in the result key, so no other test's verdict serves this one)
    config = SimConfig(stimulus_only=False, **bounds)
    obs = Evaluator(config).evaluate(TASK, tb)
    assert obs.status is Status.REJECTED, obs.log
    assert message in obs.log and obs.notes[0].startswith("the build passed its")
    again = Evaluator(config).evaluate(TASK, tb)
    assert again.cached and again.status is Status.REJECTED


@pytest.mark.parametrize(("cmd", "limits", "bound"), [
    (["sh", "-c", "while :; do :; done"], {"tree_cpu_s": 0.5}, "cpu"),
    (["sh", "-c", "while :; do :; done"], {"process_cpu_s": 0.5}, "cpu"),
    (["sh", "-c", "sleep 30 & sleep 30 & sleep 30 & wait"], {"tree_processes": 3},
     "processes"),
    (["python3", "-c", "import time; b = b'x' * (200 << 20); time.sleep(30)"],
     {"tree_memory_bytes": 100 << 20}, "memory"),
])
def test_the_process_tree_bounds_kill_the_whole_tree(tmp_path, cmd, limits, bound):
    run = run_limited(cmd, cwd=str(tmp_path), env={"PATH": os.environ["PATH"]},
                      timeout_s=120, limits=Limits(**limits))
    assert (run.exceeded, run.timed_out, run.returncode) == (bound, False, -9)


@pytest.mark.requires_verilator
@pytest.mark.parametrize("order", [(2, 1), (1, 2)])
def test_a_bound_verdict_does_not_depend_on_the_build_parallelism(tmp_path, order):
    """Issue 40, kind 4: ``build_jobs`` is outside the result key, so the verdict of a
    bound may not depend on it. At a CPU bound below what this build needs, whichever
    parallelism builds first, the cached verdict equals what a fresh build with the
    other parallelism gives (before the fix: jobs=1 rejected at 0.5 s, jobs=2
    succeeded at 2 x 0.5 s, and the first run fixed the verdict for the other)."""
    tb = TB.replace("#200", "#201")  # a key no other test warmed
    # without the build store (speed-only levers): four fresh cache dirs build no runtime
    plain = {"build_cpu_limit_s": 0.5, "runtime_pch": False, "reuse_runtime": False}
    shared, fresh = {}, {}
    for jobs in order:
        config = SimConfig(cache_dir=str(tmp_path / "shared"), build_jobs=jobs, **plain)
        shared[jobs] = Evaluator(config).evaluate(TASK, tb)
        own = SimConfig(cache_dir=str(tmp_path / f"own{jobs}"), build_jobs=jobs, **plain)
        fresh[jobs] = Evaluator(own).evaluate(TASK, tb).status
    assert shared[order[1]].cached
    assert shared[order[1]].status is fresh[order[1]] is fresh[order[0]]


def test_a_parallel_build_past_a_bound_is_built_again_serially(monkeypatch, tmp_path):
    """The rule behind that verdict (``build.run_build``): a make that ran in parallel
    and passed a bound is not the verdict; the serial build (one job) is. The two
    builds are recorded, not run."""
    from llm4cov.sim.backends.verilator import build
    from llm4cov.sim.safety.process import ProcessResult

    seen = []

    def fake_build(cmd, workdir, env, config, store, toolchain, deadline):
        seen.append(config.jobs())
        over = "memory" if config.jobs() > 1 else None
        result = ProcessResult(returncode=-9 if over else 0, output="", timed_out=False,
                               wall_s=0.0, output_bytes=0, exceeded=over)
        return build._Built(result, deadline + 1.0, parallel=config.jobs() > 1)

    monkeypatch.setattr(build, "_build", fake_build)
    got = build.run_build(["verilator"], tmp_path, {}, SimConfig(build_jobs=4), None)
    assert seen == [4, 1] and got.exceeded is None and got.returncode == 0
    seen.clear()
    build.run_build(["verilator"], tmp_path, {}, SimConfig(build_jobs=1), None)
    assert seen == [1]
    assert build._Budget(SimConfig(build_cpu_limit_s=7.0), 0.0).limits().tree_cpu_s == 7.0
