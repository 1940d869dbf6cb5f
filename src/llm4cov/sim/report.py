"""Human-readable coverage summaries of an observation (Markdown)."""

from __future__ import annotations

from llm4cov.sim.functional import FunctionalCoverage, shown
from llm4cov.sim.observation import Observation, overall_percent
from llm4cov.tasks.model import Task


def coverage_markdown(obs: Observation, task: Task, title: str = "Coverage") -> str:
    """A Markdown report: status, per-metric table, the per-instance tree (own points
    per instance, overall per subtree), targets, misses.

    Percentages are percent (0-100).
    """
    out = [f"# {title}: {task.id}", ""]
    out.append(f"- status: **{obs.status.value}** (end: {obs.end_reason.value})")
    out.append(f"- simulator: {obs.simulator}; coverage options: {' '.join(obs.coverage_options)}")
    out.append(f"- seed: {obs.seed}; build {obs.build_s:.2f} s, run {obs.run_s:.2f} s; "
               f"simulated time {obs.sim_time or '-'}")
    for note in obs.notes:
        out.append(f"- note: {note}")
    rep = obs.coverage
    if rep is None:
        out += ["", "No coverage was collected.", ""]
    else:
        out += ["", f"DUT: `{rep.dut_hier}`, overall **{rep.overall:.2f}%** "
                "(mean of the per-metric percentages)", "",
                "| metric | covered | total | percent |", "|---|---|---|---|"]
        for name, m in rep.metrics.items():
            out.append(f"| {name} | {m.covered} | {m.total} | {m.pct:.2f} |")
        if len(rep.per_instance) > 1:
            out += ["", "Per instance (IMC view): each instance's own points, and the "
                    "overall of its subtree.", "",
                    "| instance | " + " | ".join(rep.metrics) + " | subtree overall |",
                    "|---|" + "---|" * (len(rep.metrics) + 1)]
            for inst, metrics in rep.per_instance.items():
                cells = [f"{metrics[m].covered}/{metrics[m].total}" if m in metrics else "-"
                         for m in rep.metrics]
                depth = inst.count(".") - rep.dut_hier.count(".")
                name = "&nbsp;&nbsp;" * depth + f"`{inst}`"
                subtree = overall_percent(rep.subtree(inst))
                out.append(f"| {name} | " + " | ".join(cells) + f" | {subtree:.2f} |")
        if rep.merged:
            out.append("")
            out.append("Merged by Verilator (one counter set for several instances): "
                       + ", ".join(f"`{h}`" for h in rep.merged))
    out += functional_markdown(obs.functional)
    if task.targets:
        out += ["", "| target | required | reached | met |", "|---|---|---|---|"]
        for t in task.targets:
            got = rep.metric_percent(t.metric) if rep and obs.sim_pass else 0.0
            met = "yes" if obs.sim_pass and got >= t.target_percentage else "no"
            out.append(
                f"| {t.inst_name} {t.metric} | {t.target_percentage:g} | {got:.2f} | {met} |"
            )
    if obs.uncovered:
        out += ["", "## Uncovered (first items)", ""]
        out += [f"- `{u.render()}`" for u in obs.uncovered]
    if obs.status.value != "success" and obs.log:
        out += ["", "## Log", "", "```text", obs.log, "```"]
    return "\n".join(out) + "\n"


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
            missed = ", ".join(f"`{shown(m)}`" for m in c.missed)
            out.append(f"| `{shown(group)}` | `{shown(name)}` | {c.covered} | {c.total} | "
                       f"{c.pct:.2f} | {missed} |")
    return out
