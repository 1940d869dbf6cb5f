"""Executors: the local process pool and Ray give identical observations."""

from __future__ import annotations

import asyncio

import pytest

from conftest import example_task
from llm4cov.exec import get_executor
from llm4cov.policies.random_stimulus import random_testbench

pytestmark = pytest.mark.requires_verilator


def _run(executor, jobs):
    async def all_jobs():
        return await asyncio.gather(*(executor.simulate(t, tb) for t, tb in jobs))

    return asyncio.run(all_jobs())


def _jobs():
    tasks = [example_task("alu_comb"), example_task("param_shift")]
    return [(t, random_testbench(t, seed=s, length=40)) for t in tasks for s in (1, 2)]


def test_local_pool_counts_calls_and_matches_in_process(evaluator):
    jobs = _jobs()
    with get_executor("local", workers=2) as executor:
        pooled = _run(executor, jobs)
        assert executor.calls == 4
    direct = [evaluator.evaluate(t, tb) for t, tb in jobs]
    assert [o.comparable() for o in pooled] == [o.comparable() for o in direct]


@pytest.mark.requires_ray
def test_ray_matches_local_pool():
    pytest.importorskip("ray")
    jobs = _jobs()
    with get_executor("local", workers=2) as executor:
        local = _run(executor, jobs)
    with get_executor("ray", workers=2) as executor:
        remote = _run(executor, jobs)
        assert executor.calls == 4
    assert [o.comparable() for o in remote] == [o.comparable() for o in local]
    assert all(o.sim_pass for o in remote)
