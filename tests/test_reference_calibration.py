"""Every task's hidden reference testbench reproduces, point for point, the coverage
recorded in ../shared/benchmarks/reference_coverage.jsonl (measured by an independent
script on the same Verilator build)."""

from __future__ import annotations

import asyncio
import json

import pytest

from conftest import shared_path
from llm4cov.exec import get_executor
from llm4cov.sim.config import SimConfig
from llm4cov.tasks.loaders import load_tasks

pytestmark = pytest.mark.requires_verilator


def test_reference_testbenches_match_calibration():
    ref_path = shared_path("benchmarks", "reference_coverage.jsonl")
    expected = {r["id"]: r for r in map(json.loads, ref_path.read_text().splitlines())}
    tasks = [t for name in ("rtllm.jsonl", "cvdp_example.jsonl")
             for t in load_tasks(shared_path("benchmarks", name))]
    assert len(tasks) == len(expected) == 51

    async def run_all(executor):
        async def one(task):
            tb = task.reference_tb
            return task.id, await executor.simulate(
                task, tb.content, tb_name=tb.name, aux_files=tuple(tb.aux_files),
                any_instance=True,
            )

        return dict(await asyncio.gather(*(one(t) for t in tasks)))

    with get_executor("local", workers=2, config=SimConfig(result_cache=False)) as executor:
        results = asyncio.run(run_all(executor))
    mismatches = []
    for tid, obs in results.items():
        ref = expected[tid]
        got = {m: {"covered": c.covered, "total": c.total}
               for m, c in (obs.coverage.metrics.items() if obs.coverage else [])}
        want = {m: {"covered": v["covered"], "total": v["total"]}
                for m, v in ref["metrics"].items()}
        if not obs.sim_pass or got != want or obs.coverage.dut_hier != ref["dut_hier"]:
            mismatches.append((tid, obs.status.value, got, want))
        else:
            assert obs.coverage.overall == pytest.approx(ref["overall"], abs=1e-3)
    assert mismatches == []
