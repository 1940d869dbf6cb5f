"""The pyslang pre-check: what it rejects, where it says so, and when it stays silent."""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import REPO, example_task
from llm4cov.policies.random_stimulus import random_testbench
from llm4cov.sim.backends.verilator.toolchain import find_toolchain
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import Status
from llm4cov.sim.safety import precheck
from llm4cov.tasks.model import SourceFile

TASK = example_task("alu_comb")  # alu4: inputs a[3:0], b[3:0], op[1:0]; outputs y, carry, zero
HEAD = "module tb;\n  logic [3:0] a, b; logic [1:0] op; wire [3:0] y; wire carry, zero;\n"
DUT = "  alu4 dut (.a(a), .b(b), .op(op), .y(y), .carry(carry), .zero(zero));\n"


def tb(body: str, inst: str = DUT) -> SourceFile:
    """Testbench: declarations on line 2, the DUT on line 3, ``body`` from line 4."""
    return SourceFile(name="tb.sv", content=HEAD + inst + body + "endmodule\n")


#: Legal for Verilator, an error for pyslang (UsedBeforeDeclared): must pass the pre-check.
USED_BEFORE_DECLARED = tb("  initial begin n = 1; $finish; end\n  integer n;\n")


def rejected_by(rtl, testbench: SourceFile, top: str, *args, **kwargs) -> list:
    """The evaluator's pre-check rule: pyslang's findings, then the sure ones."""
    return precheck.sure_errors(precheck.diagnose(rtl, testbench, top, *args, **kwargs),
                                testbench.name)


def found(testbench: SourceFile, rtl=TASK.rtl_files, **kwargs) -> list[tuple[str, int, int]]:
    return [(f.code, f.line, f.column) for f in rejected_by(rtl, testbench, "tb", **kwargs)]


#: Broken testbenches: (testbench, the one sure error as (code, line, column)).
BROKEN = {
    "undeclared identifier": (tb("  initial begin c = 1; $finish; end\n"),
                              ("UndeclaredIdentifier", 4, 17)),
    "missing semicolon": (tb("  initial begin a = 1 $finish; end\n"), ("ExpectedToken", 4, 22)),
    "illegal binary digit": (tb("  initial begin a = 4'b1021; $finish; end\n"),
                             ("BadBinaryDigit", 4, 26)),
    "driving a DUT output": (tb("  initial y = 4'd0;\n"), ("AssignToNet", 4, 11)),
    "wrong port name": (tb("  initial $finish;\n", inst=DUT.replace(".y(y)", ".yy(y)")),
                        ("PortDoesNotExist", 3, 37)),
}


@pytest.mark.parametrize("case", BROKEN)
def test_sure_errors_are_rejected_at_their_location(case):
    testbench, error = BROKEN[case]
    assert found(testbench) == [error]


def test_rejection_log_reads_like_verilators():
    testbench, _ = BROKEN["undeclared identifier"]
    assert precheck.render(rejected_by(TASK.rtl_files, testbench, "tb")) == (
        "%Error: tb.sv:4:17: use of undeclared identifier 'c'\n"
        "    4 |   initial begin c = 1; $finish; end\n"
        "      |                 ^\n"
        "%Error: Exiting due to 1 error(s) (found by the pyslang pre-check; "
        "Verilator was not run)"
    )


def test_a_good_testbench_has_no_errors():
    good = SourceFile(name="tb.sv", content=random_testbench(TASK, seed=0))
    assert precheck.diagnose(TASK.rtl_files, good, "tb") == []


def test_errors_only_pyslang_reports_are_left_to_verilator():
    # IEEE 1800 forbids using `n` before its declaration; Verilator accepts it.
    testbench = USED_BEFORE_DECLARED
    codes = [(f.code, f.line) for f in precheck.diagnose(TASK.rtl_files, testbench, "tb")]
    assert codes == [("UsedBeforeDeclared", 4)]
    assert found(testbench) == []


def test_constructs_verilator_ignores_are_exempt():
    # Verilator ignores covergroups (COVERIGN) and lets $readmemh fill a wire array.
    testbench = tb("  covergroup cg @(a); coverpoint ghost; endgroup\n"
                   "  wire [3:0] mem [0:3];\n"
                   "  initial begin $readmemh(\"m.hex\", mem); $finish; end\n")
    exempt = [(f.code, f.line, f.exempt) for f in precheck.diagnose(TASK.rtl_files, testbench,
                                                                     "tb")]
    assert exempt == [("UndeclaredIdentifier", 4, True), ("AssignToNet", 6, True)]
    assert found(testbench) == []


def test_includes_resolve_from_the_work_dir(tmp_path):
    rtl = [SourceFile(name="rtl/m.sv", content='`include "defs.vh"\n'
                      "module m(input [`W-1:0] a); endmodule\n"),
           SourceFile(name="rtl/defs.vh", content="`define W 4\n")]
    for f in rtl:
        (tmp_path / f.name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f.name).write_text(f.content)
    testbench = SourceFile(name="tb.sv", content="module tb; logic [`W-1:0] a; m dut(.a(a));\n"
                           "initial begin ghost = 1; $finish; end endmodule\n")
    dirs = [tmp_path, tmp_path / "rtl"]
    assert found(testbench, rtl, include_dirs=dirs) == [("UndeclaredIdentifier", 2, 15)]
    # Without the include path pyslang cannot see the design: it must not reject.
    codes = {f.code for f in precheck.diagnose(rtl, testbench, "tb")}
    assert "CouldNotOpenIncludeFile" in codes
    assert found(testbench, rtl) == []


def test_an_rtl_parse_error_vetoes_rejection():
    rtl = [SourceFile(name="m.sv", content="module alu4(input a); wire sequence; endmodule\n")]
    testbench, _ = BROKEN["undeclared identifier"]
    assert any(f.parse and f.file == "m.sv" for f in precheck.diagnose(rtl, testbench, "tb"))
    assert found(testbench, rtl) == []


def test_sure_codes_are_the_recorded_measurement():
    report = (REPO / "docs/results/precheck_agreement.md").read_text()
    block = report.split("SURE_CODES = frozenset({", 1)[1].split("})", 1)[0]
    assert set(re.findall(r'"(\w+)"', block)) == precheck.SURE_CODES


@pytest.mark.requires_verilator
def test_verilator_defines_are_predefined():
    chain = find_toolchain()
    out = subprocess.run(
        [str(chain.verilator), "-E", "--dump-defines", "--timing",
         str(REPO / "examples/alu_comb/alu4.sv")],
        capture_output=True, text=True, env=chain.env(), check=True).stdout
    dumped = {m.group(1): "" if m.group(2).startswith("/*") else m.group(2)  # a comment = ""
              for m in re.finditer(r"^`define (\w+) ?(.*)$", out, re.MULTILINE)}
    assert dumped == dict(d.split("=", 1) for d in precheck.VERILATOR_DEFINES)


@pytest.mark.requires_verilator
@pytest.mark.parametrize("case", ["undeclared identifier", "driving a DUT output",
                                  "wrong port name"])
def test_verilator_rejects_the_same_line(case):
    """Verilator's own verdict, with the pre-check and the stimulus-only check off (a
    procedural write to the net a DUT output drives is also a write into the DUT)."""
    testbench, (_, line, _) = BROKEN[case]
    config = SimConfig(precheck=False, stimulus_only=False, result_cache=False)
    obs = Evaluator(config).evaluate(TASK, testbench.content)
    assert obs.status is Status.COMPILE_ERROR
    assert re.search(rf"%Error(-\w+)?: tb\.sv:{line}:", obs.log), obs.log


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_a_testbench_only_pyslang_rejects_is_built_then_refused():
    """Verilator builds it (no compile error, so no pre-check verdict), but slang left
    the statement out of the elaboration every write check reads: refused after the
    build, naming the line (a fifteenth red team wrote the DUT's register that way).
    The session's build store (conftest's cache dir); the pre-check is on."""
    config = SimConfig(result_cache=False)
    obs = Evaluator(config).evaluate(TASK, USED_BEFORE_DECLARED.content)
    assert obs.status is Status.REJECTED, obs.log
    assert obs.log.endswith("tb.sv:4: identifier 'n' used before its declaration")


def test_dumpvars_naming_a_missing_scope_is_left_to_verilator():
    # Verilator ignores the scope arguments of $dumpvars; pyslang calls them undeclared.
    testbench = tb("  initial begin $dumpvars(0, tb_alu); $dumpvars(1, tb.nothere); "
                   "$finish; end\n")
    codes = [(f.code, f.exempt) for f in precheck.diagnose(TASK.rtl_files, testbench, "tb")]
    assert codes == [("UndeclaredIdentifier", True), ("CouldNotResolveHierarchicalPath", True)]
    assert found(testbench) == []


def test_task_defines_reach_the_precheck():
    rtl = [SourceFile(name="m.sv", content="module m(input [`W-1:0] a); endmodule\n")]
    testbench = SourceFile(name="tb.sv", content="module tb; logic [`W-1:0] a; m dut(.a(a));\n"
                           "initial begin ghost = 1; $finish; end endmodule\n")
    assert found(testbench, rtl, defines={"W": "4"}) == [("UndeclaredIdentifier", 2, 15)]


@pytest.mark.heavy
def test_no_reference_testbench_is_rejected(tmp_path):
    """Every reference testbench of ../shared/benchmarks runs under Verilator (the
    README's reference runs): the pre-check must reject none of them."""
    from conftest import shared_path
    from llm4cov.sim.analysis.structure import plan_testbench
    from llm4cov.tasks.hdl import search_dirs
    from llm4cov.tasks.loaders import load_tasks

    rejected, checked = [], 0
    for name in ("rtllm.jsonl", "cvdp_example.jsonl", "realbench_dev.jsonl"):
        for task in load_tasks(shared_path("benchmarks", name)):
            ref = task.reference_tb
            if ref is None:
                continue
            work = tmp_path / task.id.replace("/", "_")
            testbench = SourceFile(name=ref.name, content=ref.content)
            for f in [*task.rtl_files, *ref.aux_files, testbench]:
                (work / f.name).parent.mkdir(parents=True, exist_ok=True)
                (work / f.name).write_text(f.content)
            top = plan_testbench(task.rtl_files, testbench, task.dut_module_name, None).tb_top
            dirs = [work / d for d in search_dirs(task.rtl_files, task.include_dirs)]
            if rejected_by(task.rtl_files, testbench, top, dirs, defines=task.defines):
                rejected.append(task.id)
            checked += 1
    assert (checked, rejected) == (71, [])
