"""Scale-out and crash safety with real simulations and real processes.

A small bench (the ``random`` policy on the four example designs, 3 samples of up to
2 rounds, result cache off) and a small Stage-0 synthesis (random teacher, 3
candidates per repo) run once uninterrupted on the local pool; then

- the same bench on a local Ray instance gives the same rows;
- a bench whose worker process is SIGKILLed mid-simulation still writes every row;
- (slow) a bench or synthesis whose whole process group is SIGKILLed part-way, then
  restarted, ends with the uninterrupted run's rows, row for row (timing fields
  aside), having simulated only what was not written, for both executors;
- (slow) a Ray worker killed mid-task costs only a retry of that task.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import EXAMPLES
from llm4cov.bench.rows import ROW_KEY
from llm4cov.cli.app import main
from llm4cov.exec import get_executor
from llm4cov.policies import get_policy
from llm4cov.sim.config import SimConfig
from llm4cov.synth.config import merge, resolve, stage_preset
from llm4cov.synth.engine import SynthRun
from llm4cov.synth.records import POINT_KEY, REPO_KEY, SAMPLE_KEY, Role
from llm4cov.synth.sources import iter_repos
from llm4cov.tasks.loaders import task_from_dir
from llm4cov.util.jsonl import iter_jsonl
from llm4cov.util.procs import child_pids
from support.runs import count_rows, rows_by_key, spawn_cli, wait_for

pytestmark = pytest.mark.requires_verilator

DESIGNS = ("alu_comb", "param_shift", "traffic_fsm", "hier_acc")
SAMPLES, ROUNDS = 3, 2
SYNTH_SETTINGS = ("selection.candidates=3",)
SYNTH_FILES = {"samples.jsonl": SAMPLE_KEY, "points.jsonl": POINT_KEY,
               "repos.jsonl": REPO_KEY}


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tasks") / "examples.jsonl"
    path.write_text("".join(task_from_dir(EXAMPLES / d).model_dump_json() + "\n"
                            for d in DESIGNS))
    return path


def bench_args(tasks: Path, out: Path, executor: str = "local") -> list[str]:
    return ["bench", "--tasks", str(tasks), "--samples", str(SAMPLES), "--rounds",
            str(ROUNDS), "--baselines", "", "--workers", "2", "--no-cache", "--quiet",
            "--no-plots", "--executor", executor, "--out", str(out)]


def last_invocation(out: Path) -> dict:
    return json.loads((out / "run.json").read_text())["invocations"][-1]


@pytest.fixture(scope="module")
def clean_bench(tasks_file, tmp_path_factory) -> dict[tuple, dict]:
    """The uninterrupted local-pool run's rows by key."""
    out = tmp_path_factory.mktemp("clean") / "bench"
    assert main(bench_args(tasks_file, out)) == 0
    rows = rows_by_key(out / "results.jsonl", ROW_KEY)
    # every sample has round 0; a round 1 exactly when round 0 stayed below 100%
    for arm, task, sample, rnd in rows:
        assert rnd in (0, 1) and (arm, task, sample, 0) in rows
        if rnd == 1:
            assert rows[(arm, task, sample, 0)]["coverage"] < 100.0
    assert len({k[1:3] for k in rows}) == len(DESIGNS) * SAMPLES
    assert all(r["observation"]["simulator"] for r in rows.values())
    assert last_invocation(out)["sim_calls"] == len(rows)
    return rows


@pytest.mark.slow
@pytest.mark.requires_ray
def test_ray_bench_equals_local_pool(clean_bench, tasks_file, tmp_path):
    pytest.importorskip("ray")
    out = tmp_path / "ray"
    assert main(bench_args(tasks_file, out, "ray")) == 0
    assert rows_by_key(out / "results.jsonl", ROW_KEY) == clean_bench
    invocation = last_invocation(out)
    assert (invocation["executor"], invocation["workers"]) == ("ray", 2)
    assert invocation["sim_calls"] == len(clean_bench)


def busy_worker(driver: int) -> int | None:
    """A worker process of ``driver`` that is running a simulation (has a child)."""
    return next((pid for pid in child_pids(driver) if child_pids(pid)), None)


@pytest.mark.slow
def test_killed_worker_process_costs_only_a_retry(clean_bench, tasks_file, tmp_path):
    out = tmp_path / "worker-killed"
    proc = spawn_cli(*bench_args(tasks_file, out), stderr=subprocess.PIPE)
    try:
        wait_for(lambda: count_rows(out / "results.jsonl") >= 2, proc, "two rows")
        os.kill(wait_for(lambda: busy_worker(proc.pid), proc, "a busy worker"),
                signal.SIGKILL)
        _, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err
    assert "a worker process died; retrying its call" in err
    assert rows_by_key(out / "results.jsonl", ROW_KEY) == clean_bench
    assert last_invocation(out)["sim_calls"] == len(clean_bench)


def kill_part_way(args: list[str], rows: Path, at_least: int) -> int:
    """Start ``llm4cov ARGS``, SIGKILL its process group once ``rows`` has
    ``at_least`` rows; returns the rows that survived."""
    proc = spawn_cli(*args)
    try:
        wait_for(lambda: count_rows(rows) >= at_least, proc, f"{at_least} rows")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return count_rows(rows)


EXECUTORS = ["local", pytest.param("ray", marks=pytest.mark.requires_ray)]


@pytest.mark.slow
@pytest.mark.parametrize("executor", EXECUTORS)
def test_sigkilled_bench_resumes_to_the_clean_rows(executor, clean_bench, tasks_file,
                                                   tmp_path):
    out = tmp_path / "killed"
    args = bench_args(tasks_file, out, executor)
    kept = kill_part_way(args, out / "results.jsonl", 3)
    assert 3 <= kept < len(clean_bench)
    assert main(args) == 0
    assert rows_by_key(out / "results.jsonl", ROW_KEY) == clean_bench
    invocation = last_invocation(out)  # the killed invocation could not record itself
    assert (invocation["new_rows"], invocation["sim_calls"]) == (len(clean_bench) - kept,) * 2


def synth_args(repos: Path, out: Path, executor: str = "local") -> list[str]:
    sets = [a for s in SYNTH_SETTINGS for a in ("--set", s)]
    return ["synth", "--stage", "0", "--repos", str(repos), "--teacher", "random",
            "--out", str(out), "--workers", "2", "--no-cache", "--quiet",
            "--executor", executor, *sets]


def synth_rows(out: Path) -> dict[str, dict[tuple, dict]]:
    return {name: rows_by_key(out / name, key) for name, key in SYNTH_FILES.items()}


@pytest.fixture(scope="module")
def clean_synth(tasks_file, tmp_path_factory) -> dict[str, dict[tuple, dict]]:
    out = tmp_path_factory.mktemp("clean") / "synth"
    assert main(synth_args(tasks_file, out)) == 0
    rows = synth_rows(out)
    tops = ("alu4", "shift_reg", "traffic_light", "acc_top")  # ids name the DUT module
    assert [k[0] for k in rows["repos.jsonl"]] == [f"local/{t}" for t in tops]
    return rows


def resume_synth(repos: Path, out: Path, executor: str) -> int:
    """Resume the run directory through the API; returns the simulator calls made."""
    cfg = merge(resolve(stage_preset(0), None, list(SYNTH_SETTINGS)), {"budget": {}}, "flags")
    random = get_policy("random")
    sim = SimConfig(result_cache=False)
    with get_executor(executor, workers=2, config=sim) as sims:
        run = SynthRun(out, cfg, {Role.INTERMEDIATE: random, Role.TRANSITION: random},
                       sims.simulate)  # refuses a run directory of another config
        asyncio.run(run.run(iter_repos(repos)))
        return sims.calls


@pytest.mark.slow
@pytest.mark.parametrize("executor", EXECUTORS)
def test_sigkilled_synth_resumes_to_the_clean_rows(executor, clean_synth, tasks_file,
                                                   tmp_path):
    out = tmp_path / "killed"
    samples = out / "samples.jsonl"
    kept = kill_part_way(synth_args(tasks_file, out, executor), samples, 4)
    total = len(clean_synth["samples.jsonl"])
    assert 4 <= kept < total
    kept_sims = sum(r["simulated"] for r in iter_jsonl(samples))
    assert resume_synth(tasks_file, out, executor) == total - kept_sims
    assert synth_rows(out) == clean_synth


def ray_task_pids(driver: int) -> list[int]:
    """Processes below ``driver`` that run ``_evaluate`` as Ray tasks (Ray titles them
    ``ray::_evaluate``)."""
    found, todo = [], child_pids(driver)
    while todo:
        pid = todo.pop()
        todo += child_pids(pid)
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::_evaluate"):
                found.append(pid)
        except OSError:
            continue
    return found


@pytest.mark.slow
@pytest.mark.requires_ray
def test_killed_ray_worker_costs_only_a_retry(clean_bench, tasks_file, tmp_path):
    pytest.importorskip("ray")
    out = tmp_path / "ray-worker-killed"
    proc = spawn_cli(*bench_args(tasks_file, out, "ray"))
    try:
        wait_for(lambda: count_rows(out / "results.jsonl") >= 2, proc, "two rows")
        os.kill(wait_for(lambda: ray_task_pids(proc.pid)[:1], proc, "a busy Ray worker")[0],
                signal.SIGKILL)
        assert proc.wait(timeout=600) == 0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert rows_by_key(out / "results.jsonl", ROW_KEY) == clean_bench
    assert last_invocation(out)["sim_calls"] == len(clean_bench)
