"""Every task's hidden reference testbench reproduces, point for point, the coverage
recorded in ../shared/benchmarks/reference_coverage.jsonl and
realbench_reference_coverage.jsonl (measured by an independent script on the same
Verilator build, which merges repeated module instances and runs the testbench as is),
except where the evaluator differs on purpose; those tasks, their reason and the
evaluator's numbers are in tests/fixtures/reference_differences.json:

- ``per-instance``: the DUT has repeated submodules, counted per instance (IMC) here;
- ``nba-workaround``: the testbench's ``<=`` in initial blocks run as ``<= #0``;
- ``fork-workaround``: ``disable`` of a fork from its own branch runs as ``#0 disable``.

Regenerate the file (and docs/results/reference_differences.md) with
``python tests/test_reference_calibration.py``.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from conftest import REPO, shared_path
from llm4cov.exec import get_executor
from llm4cov.sim.analysis.instances import plan_per_instance
from llm4cov.sim.analysis.structure import plan_testbench
from llm4cov.sim.config import SimConfig
from llm4cov.tasks.loaders import load_tasks
from llm4cov.tasks.model import SourceFile

pytestmark = [pytest.mark.requires_verilator, pytest.mark.slow]

CALIBRATIONS = {
    "reference_coverage.jsonl": ("rtllm.jsonl", "cvdp_example.jsonl"),
    "realbench_reference_coverage.jsonl": ("realbench_dev.jsonl",),
}
DIFFERENCES = REPO / "tests" / "fixtures" / "reference_differences.json"
DOC = REPO / "docs" / "results" / "reference_differences.md"


def _metrics(obs) -> dict[str, list[int]]:
    return {m: [c.covered, c.total] for m, c in sorted(obs.coverage.metrics.items())} \
        if obs.coverage else {}


def _calibrated() -> tuple[list, dict[str, dict]]:
    tasks, expected = [], {}
    for calibration, task_files in CALIBRATIONS.items():
        rows = shared_path("benchmarks", calibration).read_text().splitlines()
        expected.update({r["id"]: r for r in map(json.loads, rows)})
        tasks += [t for name in task_files for t in load_tasks(shared_path("benchmarks", name))]
    return tasks, expected


def _measure(tasks) -> dict:
    async def run_all(executor):
        async def one(task):
            tb = task.reference_tb
            return task.id, await executor.simulate(
                task, tb.content, tb_name=tb.name, aux_files=tuple(tb.aux_files),
                any_instance=True,
            )

        return dict(await asyncio.gather(*(one(t) for t in tasks)))

    with get_executor("local", workers=2, config=SimConfig(result_cache=False)) as executor:
        return asyncio.run(run_all(executor))


def _reasons(task, obs) -> list[str]:
    """Why the evaluator differs on purpose from the independent calibration script."""
    reasons = []
    tb = SourceFile(name=task.reference_tb.name, content=task.reference_tb.content)
    plan = plan_testbench(task.rtl_files, tb, task.dut_module_name, None)
    if plan_per_instance(task.rtl_files, tb, plan.tb_top, plan.dut_hier).copies:
        reasons.append("per-instance")
    if any("compiled as `<= #0`" in n for n in obs.notes):
        reasons.append("nba-workaround")
    if any("runs as `#0 disable`" in n for n in obs.notes):
        reasons.append("fork-workaround")
    return reasons


def test_reference_testbenches_match_calibration():
    tasks, expected = _calibrated()
    assert len(tasks) == len(expected) == 71
    differences = json.loads(DIFFERENCES.read_text())
    results = _measure(tasks)
    mismatches = []
    for tid, obs in results.items():
        ref = expected[tid]
        want = differences.get(tid) or {
            "metrics": {m: [v["covered"], v["total"]] for m, v in sorted(ref["metrics"].items())},
            "overall": ref["overall"]}
        if (not obs.sim_pass or _metrics(obs) != want["metrics"]
                or obs.coverage.dut_hier != ref["dut_hier"]
                or abs(obs.coverage.overall - want["overall"]) > 1e-3):
            mismatches.append((tid, obs.status.value, _metrics(obs), want["metrics"]))
    assert mismatches == []


def regenerate() -> None:
    """Measure every reference testbench; write the tasks that differ on purpose."""
    tasks, expected = _calibrated()
    results = _measure(tasks)
    diffs, unexplained, rows = {}, [], []
    for task in tasks:
        obs, ref = results[task.id], expected[task.id]
        got = _metrics(obs)
        want = {m: [v["covered"], v["total"]] for m, v in sorted(ref["metrics"].items())}
        if obs.sim_pass and got == want:
            continue
        reasons = _reasons(task, obs) if obs.sim_pass else []
        entry = {"reasons": reasons, "metrics": got,
                 "overall": obs.coverage.overall if obs.coverage else 0.0,
                 "calibration_metrics": want, "calibration_overall": ref["overall"]}
        if reasons:
            diffs[task.id] = entry
        else:
            unexplained.append((task.id, obs.status.value))
        rows.append(f"| {task.id} | {', '.join(reasons) or '**unexplained**'} | "
                    f"{ref['overall']:.2f} | {entry['overall']:.2f} | "
                    + "; ".join(f"{m} {want.get(m)} -> {got.get(m)}"
                                for m in sorted(set(got) | set(want))
                                if got.get(m) != want.get(m)) + " |")
    DIFFERENCES.write_text(json.dumps(diffs, indent=1, sort_keys=True) + "\n")
    DOC.write_text("\n".join([
        "# Reference testbenches: where the evaluator differs from the calibration files",
        "",
        "Command: `python tests/test_reference_calibration.py` (regenerates "
        "`tests/fixtures/reference_differences.json`, which "
        "`tests/test_reference_calibration.py` checks point for point).",
        "",
        f"{len(tasks)} reference testbenches (`../shared/benchmarks/"
        "reference_coverage.jsonl`, `realbench_reference_coverage.jsonl`): "
        f"{len(tasks) - len(rows)} reproduce the calibration point for point; "
        f"{len(diffs)} differ on purpose; {len(unexplained)} unexplained.",
        "",
        "- `per-instance`: the DUT has repeated submodules; the calibration script merged "
        "them (Verilator's default, one counter set per module), the evaluator counts each "
        "instance (Cadence IMC's view), so totals grow and per-instance misses show.",
        "- `nba-workaround`: `<=` in the testbench's initial blocks runs as `<= #0` "
        "(IEEE order; Verilator runs a plain `<=` there as `=`).",
        "- `fork-workaround`: `disable` of a fork from its own branch runs as `#0 disable`.",
        "",
        "| task | reason | calibration overall | evaluator overall | metrics "
        "(covered, total) |",
        "|---|---|---|---|---|",
        *rows, "",
    ]))
    print(f"{len(diffs)} differences written; unexplained: {unexplained}")


if __name__ == "__main__":
    regenerate()
