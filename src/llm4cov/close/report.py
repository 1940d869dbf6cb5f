"""The end of a closure run: the minimal regression, its merged coverage and residual,
and the files that show them (``coverage.md``, ``run.json``, ``coverage.dat``,
``html/``, LCOV and UCIS on request); and ``--replay``, which simulates the saved
tests again and compares the merged figure.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from llm4cov.close.loop import COVERAGE, TESTS, Closer, Regression, Simulate
from llm4cov.close.merge import Merged, merge_all, minimize, run_points, scope_of
from llm4cov.close.model import (
    CAUSE_ORDER,
    TEST_NAME,
    Cause,
    CloseSettings,
    Origin,
    ResidualPoint,
    StepRecord,
    TestContribution,
)
from llm4cov.close.residual import classify, closure_percent, goal_of, proven_counts
from llm4cov.sim.backends.verilator.coverage_dat import decode_key, metric_name
from llm4cov.sim.model.coverage import DesignModules, Point, summarize, uncovered_items
from llm4cov.sim.model.exclusions import Rule, split_points
from llm4cov.sim.model.observation import CoverageReport, EndReason, Observation, Status
from llm4cov.tasks.hdl import task_design
from llm4cov.tasks.model import Task
from llm4cov.util.escape import md_code, md_text
from llm4cov.util.files import write_text_atomic
from llm4cov.util.rundir import RunDirForged, refuse_links

log = logging.getLogger(__name__)

PRUNED = "pruned"
RUN_JSON = "run.json"
MD_LIMIT = 300
"""Residual items listed per cause in ``coverage.md`` (``run.json`` lists every one)."""


def keyed_points(counts: Mapping[str, int]) -> dict[str, Point]:
    """Each merged key as a :class:`Point` (the attributes Verilator's reader maps)."""
    out = {}
    for key, count in counts.items():
        a = decode_key(key)
        out[key] = Point(
            metric=metric_name(a.get("t", "")), file=a.get("f", ""),
            line=int(a["l"]) if a.get("l", "").isdigit() else 0,
            comment=a.get("o", "") or a.get("bin_type", ""), hier=a.get("h", ""),
            count=count, lines=a.get("S", ""),
            col=int(a["n"]) if a.get("n", "").isdigit() else 0,
            module=a.get("page", "").partition("/")[2])
    return out


def points_of(counts: Mapping[str, int]) -> list[Point]:
    """The merged points, in key order."""
    keyed = keyed_points(counts)
    return [keyed[k] for k in sorted(keyed)]


def merged_observation(points: Sequence[Point], root: str, sources: Mapping[str, str],
                       rules: Sequence[Rule] = (), modules: DesignModules | None = None,
                       notes: Sequence[str] = ()) -> Observation | None:
    """The merged coverage as an observation (what the agent's prompt and the HTML page
    read): the counts of :func:`summarize` with exclusions applied, the first 40 items."""
    kept, _ = split_points(points, rules)
    report = summarize(list(kept), root, sources) if kept else None
    if report is None:
        return None
    items = uncovered_items(list(kept), root, sources, 40)[0]
    return Observation(status=Status.SUCCESS, end_reason=EndReason.FINISH, coverage=report,
                       uncovered=items, notes=list(notes), simulator="merged (llm4cov close)")


@dataclass
class Final:
    """The finished regression."""

    names: list[str]
    pruned: list[str]
    merged: Merged
    points: list[Point]
    report: CoverageReport | None
    closure: float
    unreachable: dict[str, int]
    residual: list[ResidualPoint]
    contributions: list[TestContribution]
    root: str


def finalize(closer: Closer, regression: Regression) -> Final:
    """Minimize (:func:`llm4cov.close.merge.minimize` on the counted points), move the
    pruned tests to ``DIR/pruned/``, merge the rest and classify what is left.
    Idempotent: a rerun after a kill here gives the same result."""
    state, settings = regression.state, closer.settings
    kept = [r for r in state.records if r.kept]
    order = [r.name for r in kept]
    counted = counted_keys(state.merged.counts, closer.rules)
    hits = {n: state.merged.hits[n] & counted for n in order}
    names = minimize(hits, order) if settings.minimize else order
    pruned = [n for n in order if n not in names]
    for name in pruned:
        _move(closer.out / TESTS / name, closer.out / PRUNED / name)
    for name in names:  # a rerun with a larger budget may take a pruned test back
        if not (closer.out / TESTS / name).exists():
            _move(closer.out / PRUNED / name, closer.out / TESTS / name)
    merged = merge_all([(n, state.points[n]) for n in names])
    points = points_of(merged.counts)
    kept_points, excluded = split_points(points, closer.rules)
    report = summarize(list(kept_points), state.root, closer.sources) if kept_points else None
    residual = classify(kept_points, excluded, closer.sources, state.verdicts,
                        _tried(state.records, settings), _formal_note(closer, regression),
                        settings.prove_depth, _parameters(closer.task), state.root)
    unreachable = proven_counts(residual)
    closure = closure_percent(report.metrics, unreachable) if report else 0.0
    by_name = {r.name: r for r in kept}
    contributions = []
    for n in names:
        others: set[str] = set().union(*(hits[o] for o in names if o != n))
        record = by_name[n]
        assert record.origin is not None
        contributions.append(TestContribution(
            name=n, origin=record.origin, covered=len(hits[n]), unique=len(hits[n] - others),
            added=record.added, scored_overall=record.scored_overall))
    return Final(names, pruned, merged, points, report, closure, unreachable, residual,
                 contributions, state.root)


def _parameters(task: Task) -> dict[str, dict[str, int]]:
    """The DUT's elaborated integer parameters per instance (none when pyslang cannot
    elaborate it: the residual then names no parameter row)."""
    try:
        return task_design(task).parameter_values(task.dut_module_name, task.parameters)
    except Exception as exc:  # an explanation only: it never breaks the report
        log.info("parameters not elaborated (%s: %s)", type(exc).__name__, exc)
        return {}


def counted_keys(counts: Mapping[str, int], rules: Sequence[Rule]) -> frozenset[str]:
    keyed = keyed_points(counts)
    kept, _ = split_points(list(keyed.values()), rules)
    wanted = set(kept)
    return frozenset(k for k, p in keyed.items() if p in wanted)


def _move(src: Path, dst: Path) -> None:
    if not src.exists():
        return
    if dst.exists():
        shutil.rmtree(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.replace(src, dst)


def _tried(records: Sequence[StepRecord], settings: CloseSettings) -> str:
    """What the tests tried, in words (for ``not_reached``)."""
    by = Counter(r.origin.source for r in records if r.origin and r.name)
    lengths = sorted({r.origin.length for r in records
                      if r.origin and r.origin.source == "random" and r.origin.length})
    parts = [f"{by['random']} random tests" + (
        f" of {', '.join(map(str, lengths))} cycles" if lengths else "")]
    if by["formal"]:
        parts.append(f"{by['formal']} formal witness tests")
    if by["model"]:
        parts.append(f"{by['model']} model tests")
    return "not hit by " + ", ".join(parts)


def _formal_note(closer: Closer, regression: Regression) -> str:
    """Why formal has no verdict for a point."""
    s = closer.settings
    if not s.formal:
        return "not analyzed (--no-formal)"
    if not regression.state.formal_ready:
        return ("not analyzed: the formal tools are not installed or not warmed up "
                "(pip install -e '.[formal]'; llm4cov formal warmup)")
    if refused := next((r.formal_refused for r in regression.state.records
                        if r.formal_refused), ""):
        return f"not analyzed: the formal tools cannot take the design ({refused})"
    if not any(r.analyzed for r in regression.state.records):
        return "not analyzed: the budget was spent before the formal phase"
    runs = sum(1 for r in regression.state.records if r.analyzed)
    why = "the budget was spent" if regression.ended == "budget" else (
        f"{s.formal_rounds} analyses at most")
    return (f"not analyzed: {runs} analyses of at most 400 goals each (a toggle takes one "
            f"per bit and direction) did not get to it; {why}")


# -- outputs ----------------------------------------------------------------------------
def summary_json(task: Task, closer: Closer, regression: Regression, final: Final) -> dict:
    """``run.json``: every figure and decision as data."""
    rep = final.report
    records = regression.state.records
    return {
        "task_id": task.id,
        "settings": closer.settings.model_dump(mode="json"),
        "ended": regression.ended,
        "steps": len(records),
        "wall_s": round(regression.state.elapsed_s, 3),
        "tests": final.names,
        "pruned": final.pruned,
        "dropped": [r.name for r in records if r.name and not r.kept],
        "analyses": [{"step": r.step, "items": len(r.analyzed), "verdicts": dict(
            Counter(v.status for v in r.verdicts)), "errors": r.note}
            for r in records if r.analyzed],
        "merged": {
            "dut_hier": final.root,
            "overall": rep.overall if rep else None,
            "metrics": {m: c.model_dump() for m, c in rep.metrics.items()} if rep else {},
            "covered_points": sum(c.covered for c in rep.metrics.values()) if rep else 0,
            "total_points": sum(c.total for c in rep.metrics.values()) if rep else 0,
            "constant": rep.constant if rep else {},
        },
        "closure": final.closure,
        "unreachable_points": final.unreachable,
        "residual_counts": {c.value: sum(1 for r in final.residual if r.cause is c)
                            for c in CAUSE_ORDER},
        "contributions": [c.model_dump(mode="json") for c in final.contributions],
        "residual": [r.model_dump(mode="json") for r in final.residual],
    }


def coverage_md(task: Task, summary: dict, final: Final) -> str:
    """``coverage.md``: the merged figure, the closure figure, per-test contribution,
    the residual grouped by cause and by module."""
    m = summary["merged"]
    out = [f"# Merged coverage: {md_text(task.id)}", ""]
    overall = m["overall"]
    out.append(f"- merged coverage of {len(final.names)} tests: **{overall or 0:.2f}%** "
               f"(mean of the per-metric percentages; {m['covered_points']}/"
               f"{m['total_points']} points)")
    out.append(f"- closure (covered + proven unreachable) / total, same averaging: "
               f"**{final.closure:.2f}%** (separate figure; the coverage above is unchanged)")
    out.append(f"- ended: {summary['ended']} after {summary['steps']} steps, "
               f"{summary['wall_s']:.0f} s; {len(summary['dropped'])} tests dropped (added "
               f"nothing), {len(final.pruned)} pruned by the greedy set cover")
    out += ["", "| metric | covered | total | % | proven unreachable |", "|---|---|---|---|---|"]
    for name, c in m["metrics"].items():
        pct = 100.0 * c["covered"] / c["total"] if c["total"] else 0.0
        out.append(f"| {name} | {c['covered']} | {c['total']} | {pct:.2f} | "
                   f"{final.unreachable.get(name, 0)} |")
    out += ["", "## Tests (the minimal regression)", "",
            "| test | source | seed | length | goals | covers | only it covers "
            "| added when run | own % |",
            "|---|---|---|---|---|---|---|---|---|"]
    for c in final.contributions:
        o: Origin = c.origin
        out.append(f"| {c.name} | {md_text(o.policy)} | {o.seed} | {o.length or '-'} | "
                   f"{len(o.goals)} | {c.covered} | {c.unique} | {c.added} | "
                   f"{c.scored_overall:.2f} |")
    out += ["", "## Residual: every point left uncovered, by cause and module", ""]
    groups: dict[Cause, dict[str, list[ResidualPoint]]] = defaultdict(lambda: defaultdict(list))
    for r in final.residual:
        groups[r.cause][r.module].append(r)
    if not final.names:
        out.append("No test passed simulation: nothing was merged, so nothing is "
                   "explained (see the step notes in steps.jsonl).")
    elif not final.residual:
        out.append("Nothing is left: every counted point was hit.")
    for cause in CAUSE_ORDER:
        if cause not in groups:
            continue
        total = sum(len(v) for v in groups[cause].values())
        out += [f"### {cause.value} ({total} points)", ""]
        shown = 0
        for module, rows in sorted(groups[cause].items()):
            out.append(f"- module {md_code(module)}: {len(rows)} points")
            for r in rows:
                if shown >= MD_LIMIT:
                    break
                shown += 1
                out.append(f"  - {md_code(f'{r.file}:{r.line}')} {md_text(r.detail)} "
                           f"({r.metric}, {md_code(r.hier)}): {md_text(r.reason)}")
        if shown < total:
            out.append(f"- ... {total - shown} more (run.json lists every one)")
        out.append("")
    return "\n".join(out) + "\n"


def write_outputs(task: Task, closer: Closer, regression: Regression, final: Final,
                  request, rtl_dir: Path | None, backend: str) -> dict:
    """Write ``coverage.dat`` (merged), ``run.json``, ``coverage.md`` and the requested
    reports (``request``: :class:`llm4cov.cli.report_opts.ReportRequest`). Returns
    the summary."""
    from dataclasses import replace

    from llm4cov.cli import report_opts
    from llm4cov.report.capture import Capture
    from llm4cov.report.data import ResidualRow, TestRow
    from llm4cov.sim.backends import coverage_format

    out = closer.out
    dat = final.merged.write(out / "coverage.dat")
    summary = summary_json(task, closer, regression, final)
    write_text_atomic(out / RUN_JSON, json.dumps(summary, indent=2))
    write_text_atomic(out / "coverage.md", coverage_md(task, summary, final))
    obs = merged_observation(final.points, final.root, closer.sources, closer.rules,
                             notes=[f"merged coverage of {len(final.names)} tests"])
    if obs is None:
        return summary
    proven = [goal_of(v) for v in regression.state.verdicts if v.status == "unreachable"]
    cap = Capture(observation=obs, points=final.points, dut_hier=final.root,
                  coverage_dat=dat, coverage_format=coverage_format(backend))
    tests = [TestRow(c.name, "success", c.scored_overall, f"tests/{c.name}/tb.sv",
                     f"{c.origin.policy}, seed {c.origin.seed}; covers {c.covered}, only it "
                     f"{c.unique}") for c in final.contributions]
    title = f"Merged coverage: {task.id} ({len(final.names)} tests)"
    data = report_opts.write_reports(cap, task, replace(request, html=None), title=title,
                                     rtl_dir=rtl_dir, proven=proven, tests=tests)
    if request.html:
        from llm4cov.report.html import write_html

        data.figures = [("closure (covered + proven unreachable) / total", final.closure)]
        data.residual = [ResidualRow(r.cause.value, r.module, r.metric, f"{r.file}:{r.line}",
                                     r.hier, r.detail, r.reason) for r in final.residual]
        report_opts.say(f"HTML report: {write_html(data, request.html, title, obs)}")
    return summary




# -- replay ---------------------------------------------------------------------------
@dataclass
class Replay:
    """``--replay``: the saved figure, the new one, and whether they are equal."""

    saved: dict
    replayed: dict
    statuses: dict[str, str]

    @property
    def same(self) -> bool:
        return self.saved == self.replayed


def replay(task: Task, out: Path, simulate: Simulate, rules: Sequence[Rule] = ()) -> Replay:
    """Simulate every test of ``out/run.json`` again, merge, and compare the merged
    per-metric counts and overall with the saved ones.

    Raises:
        OSError, ValueError: no finished regression in ``out``.
        RunDirForged: ``out`` holds a link, or a test name that names another path.
    """
    refuse_links(out)
    saved = json.loads((out / RUN_JSON).read_text(encoding="utf-8"))
    if bad := [n for n in saved["tests"] if not TEST_NAME.fullmatch(str(n))]:
        raise RunDirForged(f"{out / RUN_JSON}: not a test name: {str(bad[0])[:40]!r}")
    root = saved["merged"]["dut_hier"]
    sources = {f.name: f.content for f in task.rtl_files}
    merged = Merged()
    statuses = {}
    for name in saved["tests"]:
        tb = (out / TESTS / name / "tb.sv").read_text(encoding="utf-8")
        obs = simulate(task, tb)
        statuses[name] = obs.status.value
        data = obs.coverage_data
        if not obs.sim_pass or data is None:
            continue
        import zlib

        text = zlib.decompress(data.dat_zlib).decode("utf-8", errors="surrogateescape")
        scope = scope_of(data.dut_hier, sources.keys(), data.rtl_modules, data.tb_modules)
        merged.add(name, run_points(text, scope, root))
    kept, _ = split_points(points_of(merged.counts), rules)
    rep = summarize(list(kept), root, sources) if kept else None
    figure = _figure(saved["merged"])
    again = _figure({"overall": rep.overall if rep else None,
                     "metrics": {m: c.model_dump() for m, c in rep.metrics.items()}
                     if rep else {}})
    return Replay(figure, again, statuses)


def _figure(merged: dict) -> dict:
    return {"overall": merged.get("overall"), "metrics": merged.get("metrics", {})}


__all__ = ["COVERAGE", "Final", "Replay", "finalize", "replay", "write_outputs"]
