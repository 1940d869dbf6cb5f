"""Human-readable coverage summaries of an observation (Markdown).

Every text a testbench, a model or a task supplied goes through the Markdown rule of
:mod:`llm4cov.util.escape`: the log in a fence it cannot close, names in code spans
delimited past their own backticks, notes and ids as escaped prose. The result is
terminal-safe too (``llm4cov sim`` prints it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from llm4cov.sim.model.functional import FunctionalCoverage, shown
from llm4cov.sim.model.observation import (
    Observation,
    UncoveredItem,
    overall_percent,
    overall_without,
)
from llm4cov.tasks.model import Task
from llm4cov.util.escape import md_block, md_code, md_text

MAX_LISTED = 40
"""Items listed per section of the Markdown report (the HTML report lists all)."""


def coverage_markdown(
    obs: Observation,
    task: Task,
    title: str = "Coverage",
    *,
    uncovered: Sequence[UncoveredItem] | None = None,
    constant: Sequence[UncoveredItem] | None = None,
    unreachable: Sequence[UncoveredItem] = (),
    unreachable_points: Mapping[str, int] | None = None,
) -> str:
    """A Markdown report: status, per-metric table, the per-instance tree (own points
    per instance, overall per subtree), targets, misses.

    Misses are listed in three groups: ``uncovered``; proven unreachable (``UNR``:
    ``unreachable``, with ``unreachable_points`` per metric, from a formal proof); and
    parameter-constant (``constant``, counted in ``CoverageReport.constant``). The
    headline is the evaluator's overall; each of the two other groups gets a separate
    "excluded" figure. Without lists (``llm4cov sim``) the observation's own bounded
    list is split by each item's flag (``UncoveredItem.param_only``: the condition
    reads only parameters). Percentages are percent (0-100).
    """
    out = [f"# {md_text(title)}: {md_text(task.id)}", ""]
    out.append(f"- status: **{obs.status.value}** (end: {obs.end_reason.value})")
    out.append(f"- simulator: {obs.simulator}; coverage options: {' '.join(obs.coverage_options)}")
    out.append(f"- seed: {obs.seed}; build {obs.build_s:.2f} s, run {obs.run_s:.2f} s; "
               f"simulated time {obs.sim_time or '-'}")
    if obs.tb_error_count or obs.tb_error_prints:
        out.append(f"- testbench errors: {obs.tb_error_count} $error/assertion failure(s), "
                   f"{obs.tb_error_prints} ERROR/FAIL line(s) printed")
    for note in obs.notes:
        out.append(f"- note: {md_text(note)}")
    rep = obs.coverage
    unr = dict(unreachable_points or {})
    if rep is None:
        out += ["", "No coverage was collected.", ""]
    else:
        out += ["", f"DUT: {md_code(rep.dut_hier)}, overall **{rep.overall:.2f}%** "
                "(mean of the per-metric percentages)"]
        if unr:
            out.append(f"- with {_count(sum(unr.values()), 'proven-unreachable (UNR) point')} "
                       f"excluded (separate figure): "
                       f"{overall_without(rep.metrics, unr):.2f}%")
        if rep.constant:
            out.append(f"- with {_count(sum(rep.constant.values()), 'parameter-constant miss')}"
                       f" excluded (separate figure): {rep.overall_without_constant():.2f}%")
        apart = bool(unr or rep.constant)
        out += ["", "| metric | covered | total | percent |" + (" UNR | constant |" if apart
                                                              else ""),
                "|---|---|---|---|" + ("---|---|" if apart else "")]
        for name, m in rep.metrics.items():
            extra = f" {unr.get(name, 0)} | {rep.constant.get(name, 0)} |" if apart else ""
            out.append(f"| {name} | {m.covered} | {m.total} | {m.pct:.2f} |{extra}")
        if len(rep.per_instance) > 1:
            out += ["", "Per instance (IMC view): each instance's own points, and the "
                    "overall of its subtree.", "",
                    "| instance | " + " | ".join(rep.metrics) + " | subtree overall |",
                    "|---|" + "---|" * (len(rep.metrics) + 1)]
            for inst, metrics in rep.per_instance.items():
                cells = [f"{metrics[m].covered}/{metrics[m].total}" if m in metrics else "-"
                         for m in rep.metrics]
                depth = inst.count(".") - rep.dut_hier.count(".")
                name = "&nbsp;&nbsp;" * depth + md_code(inst, in_table=True)
                subtree = overall_percent(rep.subtree(inst))
                out.append(f"| {name} | " + " | ".join(cells) + f" | {subtree:.2f} |")
        if rep.merged:
            out.append("")
            out.append("Merged by Verilator (one counter set for several instances): "
                       + ", ".join(md_code(h) for h in rep.merged))
    out += functional_markdown(obs.functional)
    if task.targets:
        out += ["", "| target | required | reached | met |", "|---|---|---|---|"]
        for t in task.targets:
            got = rep.metric_percent(t.metric) if rep and obs.sim_pass else 0.0
            met = "yes" if obs.sim_pass and got >= t.target_percentage else "no"
            out.append(f"| {md_text(t.inst_name)} {md_text(t.metric)} | "
                       f"{t.target_percentage:g} | {got:.2f} | {met} |")
    if uncovered is None:
        uncovered = [i for i in obs.uncovered if not i.param_only]
        constant = [i for i in obs.uncovered if i.param_only]
    out += _section("Uncovered", uncovered)
    out += _section("Proven unreachable (UNR: no run from reset reaches it, k-induction)",
                    unreachable, mark=" UNR")
    out += _section("Unreachable under the parameters (the condition reads only "
                    "parameters)", constant or ())
    if obs.status.value != "success" and obs.log:
        out += ["", "## Log", "", md_block(obs.log)]
    return "\n".join(out) + "\n"


def _section(heading: str, items: Sequence[UncoveredItem], mark: str = "") -> list[str]:
    """A ``##`` section listing at most :data:`MAX_LISTED` items (none: no section)."""
    if not items:
        return []
    lines = ["", f"## {heading} ({len(items)})", ""]
    lines += [f"- {md_code(u.render())}{mark}" for u in items[:MAX_LISTED]]
    if len(items) > MAX_LISTED:
        lines.append(f"- ... {len(items) - MAX_LISTED} more (the HTML report lists all)")
    return lines


def _count(n: int, noun: str) -> str:
    """``1 point``, ``2 points``, ``2 misses``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}{'es' if noun.endswith('s') else 's'}"


def functional_markdown(report: FunctionalCoverage | None) -> list[str]:
    """The functional-coverage section (covergroup bins; never part of ``overall``):
    one row per coverpoint or cross; empty without covergroups."""
    if report is None:
        return []
    b = report.bins
    out = ["", f"Functional coverage (testbench covergroups, not part of the overall): "
           f"**{b.covered}/{b.total} bins ({b.pct:.2f}%)**", "",
           "| covergroup | coverpoint / cross | bins hit | bins | percent | never hit |",
           "|---|---|---|---|---|---|"]
    for group, cg in report.covergroups.items():
        for name, c in cg.coverpoints.items():
            missed = ", ".join(md_code(shown(m), in_table=True) for m in c.missed)
            cells = (md_code(shown(group), in_table=True), md_code(shown(name), in_table=True))
            out.append(f"| {cells[0]} | {cells[1]} | {c.covered} | {c.total} | "
                       f"{c.pct:.2f} | {missed} |")
    return out
