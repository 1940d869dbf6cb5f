"""Untrusted text is parsed only where it cannot reach the host (issue 40).

pyslang runs in llm4cov's own process: every parse of a testbench, an answer or task RTL
either opens no file at all (a text alone: ``hdl.parse_tree``), or is checked with the
include rule first (``tasks/includes.py``: every branch, every macro trick that can build
an include), and an answer that uses the preprocessor is parsed in a bounded child. The
hostile texts here include a host file (/etc/hostname, /etc/passwd) or a device that never
ends (/dev/zero) in a branch Verilator skips but pyslang takes (``__slang__``).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pyslang
import pytest

from conftest import EXAMPLES
from llm4cov.bench.answer_checks import UNPARSED, AnswerChecks, AnswerLimits, Deferred
from llm4cov.bench.config import Arm, ArmKind
from llm4cov.bench.plan import RunPlan, task_info
from llm4cov.sim.safety import isolation, precheck, static_check
from llm4cov.tasks import includes
from llm4cov.tasks.hdl import UnsafeIncludeError, parse_design, parse_tree, task_ports
from llm4cov.tasks.loaders import iter_tasks, task_from_dir
from llm4cov.tasks.model import SourceFile, TaskError
from support.replay_server import ReplayServer

HIDDEN = """module tb;
  logic [3:0] a, b; logic [1:0] op; wire [3:0] y; wire carry, zero;
`ifdef __slang__
`include "/dev/zero"
`endif
  alu4 dut(.a(a), .b(b), .op(op), .y(y), .carry(carry), .zero(zero));
  initial begin a = 1; b = 2; op = 0; #1 $finish; end
endmodule
"""
BOMB = "\n".join(["module tb;", "`define B0 1",
                  *(f"`define B{k} (`B{k - 1}+`B{k - 1})" for k in range(1, 40)),
                  "  localparam int N = `B39;", "  alu4 dut(.*);", "endmodule", ""])
CLI = "from llm4cov.cli.app import main; raise SystemExit(main())"


def _bounded() -> None:
    """A child that would allocate without end dies at 2 GiB instead of the machine."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=_bounded)


def _opened(tree) -> list[str]:
    sm = tree.sourceManager
    return [str(sm.getFullPath(b)) for b in sm.getAllBuffers()
            if not str(sm.getFullPath(b)).startswith("/llm4cov-virtual/")
            and str(sm.getFullPath(b)) not in ("", ".")]


# -- (a) a text alone never opens a file -------------------------------------------------

def test_parse_tree_opens_no_file_in_any_branch():
    text = ('`include "/etc/hostname"\n`ifdef __slang__\n`include "/dev/zero"\n`endif\n'
            '`define F "/etc/passwd"\n`include `F\n`define D(x) `x\n`D(include) "/etc/hosts"\n'
            "module m; endmodule\n")
    tree = parse_tree(text, "tb.sv")
    assert _opened(tree) == []
    assert [m.name for m in _decls(tree)] == ["m"]


def _decls(tree):
    from llm4cov.tasks.hdl import VIRTUAL_ROOT, Design
    return Design(tree, VIRTUAL_ROOT).decls()


# -- the rule ------------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    '`include "/etc/hostname"\n',
    '`include "../../../../../../../../etc/hostname"\n',
    '`define F "/etc/passwd"\n`include `F\n',                       # computed name
    '`include "\\057etc/passwd"\n',                                  # escaped name
    "`include </etc/passwd>\n",
    '`define D(x) `x\n`D(include) "defs.vh"\n',                      # `arg builds `include
    '`define E(a, b) a``b\n`E(`, include) "defs.vh"\n',             # pasted onto an argument
    '`define ID(x) x\n`ID(`in``clude) "defs.vh"\n',                  # pasted in a call
    '`pragma protect begin_protected\n`pragma protect data_block\n/*\n'
    '`pragma protect end_protected\n`include "/etc/passwd" // */\n',  # hidden by an envelope
    'x = """\n"""; `include "/etc/passwd"\n',                        # 2023 vs 2017 strings
])
def test_include_rule_refuses(text):
    assert includes.problems({"tb.sv": text}, ["."])


@pytest.mark.parametrize("text", [
    '`include "defs.vh"\n',
    '// `include "/etc/passwd" in a comment\n',
    '`define CHECK(signal) if (errors_``signal == 0) stats.time_``signal = $time;\n',
    '`define MAX(a, b) ((a) > (b) ? (a) : (b))\n`define W `MAX(3, 4)\n',
    "//  THIS SOFTWARE IS PROVIDED ``AS IS'' AND WITHOUT ANY WARRANTY\n",
])
def test_include_rule_keeps_ordinary_code(text):
    assert includes.problems({"tb.sv": text, "defs.vh": "`define X 1\n"}, ["."]) == []


# Two macros copied from pulp-platform common_cells (include/common_cells/assertions.svh:
# Copyright lowRISC contributors, Apache-2.0; include/common_cells/registers.svh: Copyright
# 2018, 2021 ETH Zurich and University of Bologna, SHL-0.51), trimmed to the pasting lines.
COMMON_CELLS_ASSERTIONS = (
    "// Copyright lowRISC contributors.\n"
    "// Licensed under the Apache License, Version 2.0, see LICENSE for details.\n"
    "// SPDX-License-Identifier: Apache-2.0\n"
    "`define ASSERT_KNOWN_IF(__name, __sig, __enable, __clk = `ASSERT_DEFAULT_CLK, "
    "__rst = `ASSERT_DEFAULT_RST, __desc = \"\") \\\n"
    "`ifdef INC_ASSERT \\\n"
    "  `ASSERT_KNOWN(__name``KnownEnable, __enable, __clk, __rst, __desc) \\\n"
    "  `ASSERT_IF(__name, !$isunknown(__sig), __enable, __clk, __rst, __desc) \\\n"
    "`endif\n")
COMMON_CELLS_REGISTERS = """// Copyright 2018, 2021 ETH Zurich and University of Bologna.
// SPDX-License-Identifier: SHL-0.51
`define FFSR(__q, __d, __reset_value, __clk, __reset_clk) \\
  `ifndef NO_SYNOPSYS_FF                                  \\
  /``* synopsys sync_set_reset `"__reset_clk`" *``/       \\
  `endif                                                  \\
  always_ff @(posedge (__clk)) begin                      \\
    __q <= (__reset_clk) ? (__reset_value) : (__d);       \\
  end
"""


@pytest.mark.parametrize("text", [COMMON_CELLS_ASSERTIONS, COMMON_CELLS_REGISTERS])
def test_include_rule_keeps_common_cells_pasting(text):
    """``__name``KnownEnable`` can build at most the macro call `` `xKnownEnable``, and
    ``/``*`` ... ``*``/`` a comment: neither can build a directive."""
    assert includes.problems({"cc.svh": text}, ["."]) == []


@pytest.mark.parametrize(("text", "why"), [
    ('`define M(y) y``de\n`M(`inclu) "defs.vh"\n',
     "t.sv:1: token pasting (``) of the macro argument y onto de can complete the directive "
     "`include (from an argument ending in `inclu), whose file cannot be checked (rename "
     "the pasted text so that it ends no directive name)"),
    # two arguments pasted together: judged where the macro is called (the definition
    # alone is kept: test_include_rule_keeps_pulp_axi_assign_pasting)
    ("`define M(y, x) y``KnownEnable``x\n`M(`inclu, de)\n",
     "t.sv:2: `M is given text holding a backtick as its argument 1, which the macro "
     "pastes to another argument: the joined text can form a directive, such as an "
     "`include, whose file cannot be checked (pass plain names there)"),
    ("`define SC(kind) `systemc_``kind\n",
     "t.sv:1: token pasting (``) joins `systemc_, which holds a backtick: the joined text "
     "can form a directive, such as an `include, whose file cannot be checked"),
    ("`define M(y) y``Known`E\n",
     "t.sv:1: token pasting (``) joins `E, which holds a backtick: the joined text can form "
     "a directive, such as an `include, whose file cannot be checked"),
    ('`define M(x) \\a``x\n',
     "t.sv:1: the escaped name \\a followed by `` in a `define body: pyslang splits it and "
     "pastes the pieces, and an escaped name swallows a pasted argument's quote, exposing "
     "its text as directives (write a space after the escaped name)"),
])
def test_include_rule_names_the_paste_hazard(text, why):
    assert [str(p) for p in includes.problems({"t.sv": text}, ["."])] == [why]


def test_include_rule_paste_verdicts_hold_in_pyslang(tmp_path: Path):
    """The rule's verdicts against pyslang itself: each hostile call refused above makes
    pyslang open a file no `include names (here a marker file beside the text), and the
    common_cells macro, called with an argument that ends in a backtick, does not."""
    (tmp_path / "marker.vh").write_text("`define MARKER 1\n")
    bt = "`define BT() `\n"

    def opens(text: str) -> bool:
        sm = pyslang.SourceManager()
        sm.setDisableLocalIncludes(True)
        sm.addUserDirectories(str(tmp_path))
        buf = sm.assignText(str(tmp_path / "t.sv"), text)
        pyslang.syntax.SyntaxTree.fromBuffers([buf], sm, pyslang.Bag([]))
        return any("marker" in str(sm.getFullPath(b)) for b in sm.getAllBuffers())

    refused = '`define M(y) y``de\n`M(`inclu) "marker.vh"\n'
    assert includes.problems({"t.sv": refused}, ["."]) and opens(refused)
    kept = (bt + '`define KnownEnable "x"\n`define Q(n) n``KnownEnable\n'
            "module m; string s = `Q(`BT()); endmodule\n")
    assert includes.problems({"t.sv": kept}, ["."]) == [] and not opens(kept)


def test_precheck_refuses_before_parsing(tmp_path: Path):
    """diagnose parses nothing (no findings: Verilator decides) when a text breaks it."""
    (tmp_path / "dut.v").write_text("module dut(input a); endmodule\n")
    rtl = [SourceFile(name="dut.v", content=(tmp_path / "dut.v").read_text())]
    hostile = SourceFile(name="tb.sv", content=HIDDEN.replace("/dev/zero", "/etc/hostname")
                         .replace("alu4", "dut") + "module x; initial nope = 1; endmodule\n")
    assert precheck.diagnose(rtl, hostile, "tb", [tmp_path]) == []
    assert precheck.unsafe_includes(rtl, hostile, [tmp_path])
    benign = SourceFile(name="tb.sv", content="module tb; initial nope = 1; endmodule\n")
    assert [f.code for f in precheck.diagnose(rtl, benign, "tb", [tmp_path])] == [
        "UndeclaredIdentifier"]


# -- (b) the static check sees every branch ------------------------------------------------

@pytest.mark.parametrize(("branch", "include", "line"), [
    ("`ifdef __slang__", '`include "/etc/hostname"', 4),
    ("`ifndef VERILATOR", '`include "../../../../../../../etc/hostname"', 4),
    ("`ifdef __slang__", "`include `HOSTFILE", 4),
])
def test_static_check_rejects_includes_hidden_from_verilator(branch, include, line):
    tb = (f'`define HOSTFILE "/etc/hostname"\nmodule tb;\n{branch}\n{include}\n`endif\n'
          "  initial $finish;\nendmodule\n")
    reasons = static_check.inspect_testbench(tb, "tb.sv", preprocessor=static_check.Preprocessor(
        ("false",), {}, _messages())).reasons
    assert reasons and reasons[0].startswith(f"tb.sv:{line}: `include")
    assert "every preprocessor branch" in reasons[0]
    assert static_check.guard_pyslang(tb, "tb.sv")


def _messages():
    from llm4cov.sim.backends import get_backend
    from llm4cov.sim.config import SimConfig
    return get_backend("verilator", SimConfig()).preprocess_messages


@pytest.mark.skipif(not isolation.available(), reason="no OS sandbox (bubblewrap) here")
def test_guard_child_runs_in_the_sandbox(tmp_path: Path):
    """The pyslang guard runs sandboxed when the check has a sandbox: it still parses
    (macros, RTL), and a bomb still ends in the bound."""
    from llm4cov.sim.safety import workdirs
    scratch = workdirs.create(str(tmp_path))
    try:
        src = workdirs.sources(scratch)
        src.mkdir(parents=True, exist_ok=True)
        (src / "tb.sv").write_text("`define W 4\nmodule tb; logic [`W-1:0] x; endmodule\n")
        assert static_check._pyslang_views(scratch, "tb.sv", None, static_check.CheckLimits(),
                                           sandboxed=True) == []
        (src / "tb.sv").write_text(BOMB)
        limits = static_check.CheckLimits(cpu_s=2, timeout_s=20)
        assert static_check.EXCEEDED in static_check._pyslang_views(
            scratch, "tb.sv", None, limits, sandboxed=True)[0]
    finally:
        workdirs.release(scratch)


# -- (c, d) answers: scoring and `bench report` always finish -------------------------------

def _plan():
    task = task_from_dir(EXAMPLES / "alu_comb")
    info = task_info(task, "verilator rev X")
    return RunPlan(command="c", identity={"mode": "direct"}, tasks_file="t.jsonl",
                   tasks_sha256="0", simulator="verilator rev X", coverage_options=[],
                   overall_metrics=["line"], stop_at_full_coverage=True,
                   arms=[Arm("m", ArmKind.AGENT, 4, 1)], tasks=[info]), info


def _row(info, sample: int, code: str) -> dict:
    return {"arm": "m", "task_id": info.id, "sample": sample, "round": 0, "sim_pass": False,
            "cov_pass": False, "coverage": 0.0, "response": f"```systemverilog\n{code}```\n",
            "testbench_sha256": None, "prompt_tokens": 1, "completion_tokens": 1,
            "gen_s": 0.0, "build_s": 0.0, "run_s": 0.0, "observation": {}}


def test_score_survives_an_endless_include_and_a_macro_bomb(tmp_path: Path):
    """Answers are parsed without opening /dev/zero; the bomb (and only it) is lost to
    its bound; answers after it are still checked; the summary counts it."""
    plan, info = _plan()
    good_macro = "`define W 4\nmodule tb; alu4 dut(.*); endmodule\n"
    rows = [_row(info, 0, HIDDEN), _row(info, 1, BOMB), _row(info, 2, good_macro),
            _row(info, 3, "module tb; alu4 u(.a(a)); endmodule\n")]
    code = ("import json, sys; from llm4cov.bench.score import score; "
            "from llm4cov.bench.plan import RunPlan; "
            "plan = RunPlan.model_validate_json(sys.argv[1]); "
            "print(json.dumps(score(plan, json.loads(sys.argv[2]))['arms']['m']['answer_checks']))")
    done = subprocess.run([sys.executable, "-c", code, plan.model_dump_json(), json.dumps(rows)],
                          capture_output=True, text=True, timeout=240, preexec_fn=_bounded)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {"answers": 4, "testbench": 4, "dut_module": 3,
                                       "dut_instance": 2, "pins_valid": 3, "pins_complete": 2,
                                       "unparsed": 1}


def test_answers_pyslang_refuses_are_unparsed_not_fatal():
    """A lone surrogate (a JSON "\\ud800" in a model's answer) or nesting too deep: the
    answer is unparsed (in this process and in the child), scoring goes on."""
    from llm4cov.bench.answer_checks import check_answer
    lone = "```systemverilog\nmodule tb; // \ud800\n  alu4 dut(.*);\nendmodule\n```\n"
    assert check_answer(lone, "alu4", "dut", None) == AnswerChecks(True, True, True)
    assert check_answer(lone.replace("module tb;", "`define X 1\nmodule tb;"), "alu4",
                        "dut", None) == AnswerChecks(True, True, True)
    deep = "```systemverilog\nmodule tb; initial x = " + "(" * 20000 + "1" + ")" * 20000 + \
        ";\nendmodule\n```\n"
    assert check_answer(deep, "alu4", "dut", None) == UNPARSED


def test_a_bombed_batch_loses_only_the_bomb(tmp_path: Path):
    limits = AnswerLimits(cpu_s=1, memory_bytes=512 << 20, wall_s=30)
    good = "`define W 4\nmodule tb; alu4 dut(.*); endmodule\n"
    ports = ["a", "b", "op", "y", "carry", "zero"]
    with Deferred(limits, str(tmp_path)) as deferred:
        for k, text in enumerate([good, BOMB, good, BOMB, good]):
            deferred.add(k, text, "alu4", "dut", ports)
        results = dict(deferred.results())
    full = AnswerChecks(True, True, True, True, True)
    assert results == {0: full, 1: UNPARSED, 2: full, 3: UNPARSED, 4: full}
    assert list(tmp_path.iterdir()) == []  # the scratch dir is gone


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_bench_over_a_hostile_answer_finishes_and_reports(tmp_path: Path):
    """(c) ``llm4cov bench`` whose (recorded) model answers with a testbench that includes
    /dev/zero in a branch only pyslang takes: the run finishes, the answer is rejected
    with the line named, and ``llm4cov bench report`` prints its summary."""
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(task_from_dir(EXAMPLES / "alu_comb").model_dump_json() + "\n")
    out = tmp_path / "run"
    answer = f"Here it is:\n```systemverilog\n{HIDDEN}```\n"
    with ReplayServer([answer], cycle=True) as server:  # TEST DOUBLE: the recorded model
        run = _cli("bench", "--tasks", str(tasks), "--samples", "1", "--rounds", "1",
                   "--out", str(out), "--workers", "1", "--no-progress", "--no-plots",
                   "--model", "recorded-model", "--base-url", server.base_url,
                   "--baselines", "")
    assert run.returncode in (0, 1), run.stderr[-2000:]
    row = json.loads((out / "results.jsonl").read_text().splitlines()[0])
    assert row["status"] == "rejected"
    assert '.sv:4: `include "/dev/zero" is an absolute path' in row["observation"]["log"]
    report = _cli("bench", "report", str(out), "--no-plots")
    assert report.returncode == 0, report.stderr[-2000:]
    assert "| recorded-model | 1/1 |" in report.stdout
    assert "reports in" in report.stdout + report.stderr
    checks = json.loads((out / "summary.json").read_text())["arms"]["recorded-model"][
        "answer_checks"]
    assert checks == {"answers": 1, "testbench": 1, "dut_module": 1, "dut_instance": 1,
                      "pins_valid": 1, "pins_complete": 1}


# -- (e) task RTL ------------------------------------------------------------------------

def test_task_rtl_with_a_host_include_is_refused_at_load(tmp_path: Path):
    (tmp_path / "rtl").mkdir()
    (tmp_path / "rtl" / "top.v").write_text(
        '`include "/etc/passwd"\nmodule top(input a, output y); assign y = a; endmodule\n')
    with pytest.raises(TaskError, match=r'top\.v:1: `include "/etc/passwd" is an absolute'):
        task_from_dir(tmp_path / "rtl")
    done = _cli("sim", str(tmp_path / "rtl"), "--tb", str(tmp_path / "rtl" / "top.v"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
    assert '`include "/etc/passwd" is an absolute path' in done.stderr

    row = {"id": "t", "rtl_files": [{"name": "top.v", "content": '`ifdef __slang__\n'
           '`include "/dev/zero"\n`endif\nmodule top; endmodule\n'}], "dut_module_name": "top"}
    (tmp_path / "t.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(TaskError, match=r'top\.v:2: `include "/dev/zero"'):
        list(iter_tasks(tmp_path / "t.jsonl"))
    with pytest.raises(UnsafeIncludeError):  # the parse itself refuses, too
        parse_design([SourceFile(name="top.v", content=row["rtl_files"][0]["content"])])


def test_task_rtl_with_an_include_inside_the_repo_loads(tmp_path: Path):
    (tmp_path / "rtl").mkdir()
    (tmp_path / "inc").mkdir()
    (tmp_path / "rtl" / "top.v").write_text(
        '`include "../inc/defs.vh"\nmodule top(input [`W-1:0] a, output y); '
        "assign y = ^a; endmodule\n")
    (tmp_path / "inc" / "defs.vh").write_text("`define W 6\n")
    task = task_from_dir(tmp_path)
    assert sorted(f.name for f in task.rtl_files) == ["inc/defs.vh", "rtl/top.v"]
    assert [(p.name, p.width) for p in task_ports(task)] == [("a", 6), ("y", 1)]


@pytest.mark.heavy
def test_task_rtl_that_expands_without_end_in_a_view_is_refused_at_load(tmp_path: Path):
    """A macro bomb in the RTL under `ifdef __slang__ + `ifdef VERILATOR: Verilator never
    expands it, the plain load parse neither, only the pre-check's view (pyslang with
    Verilator's macros) would, in the evaluator's process. Every view is parsed in a
    bounded child first: the task is refused at load (one line, exit 2), and the
    pre-check parses nothing."""
    chain = "\n".join(["`define B0 1", *(f"`define B{k} (`B{k - 1}+`B{k - 1})"
                                          for k in range(1, 40))])
    rtl = (f"module top(input a, output y);\n`ifdef __slang__\n`ifdef VERILATOR\n{chain}\n"
           "  localparam int N = `B39;\n`endif\n`endif\n  assign y = a;\nendmodule\n")
    row = {"id": "bomb", "rtl_files": [{"name": "top.sv", "content": rtl}],
           "dut_module_name": "top"}
    (tmp_path / "t.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "tb.sv").write_text("module tb; logic a; wire y; top dut(.a(a), .y(y)); "
                                    "initial #1 $finish; endmodule\n")
    done = _cli("sim", "--tasks", str(tmp_path / "t.jsonl"), "--id", "bomb", "--tb",
                str(tmp_path / "tb.sv"), timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1
    assert "task bomb: RTL top.sv: preprocessing exceeded limits" in done.stderr
    code = ("import sys; from pathlib import Path; from llm4cov.sim.safety import precheck; "
            "from llm4cov.tasks.model import SourceFile; "
            "rtl = [SourceFile(name='top.sv', content=Path(sys.argv[1]).read_text())]; "
            "tb = SourceFile(name='tb.sv', content='module tb; initial nope = 1; endmodule\\n'); "
            "print(precheck.diagnose(rtl, tb, 'tb', [Path(sys.argv[2])]))")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "top.sv").write_text(rtl)
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "src" / "top.sv"),
                           str(tmp_path / "src")], capture_output=True, text=True,
                          timeout=120, preexec_fn=_bounded)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr[-2000:]
