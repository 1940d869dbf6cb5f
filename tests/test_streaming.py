"""Memory stays flat with the size of a run: scoring and resuming read the rows in one
streaming pass without keeping observations, long runs pull their items lazily; and the
progress display that reports on them. No simulator needed."""

from __future__ import annotations

import asyncio
import io
import json
import time
import tracemalloc
from pathlib import Path

import pytest
from rich.console import Console

from conftest import EXAMPLES
from llm4cov.bench.config import Arm, ArmKind
from llm4cov.bench.plan import Calibration, RunPlan, TaskInfo
from llm4cov.bench.runner import resume_index
from llm4cov.bench.score import score
from llm4cov.synth.sources import count_repos, iter_repos
from llm4cov.tasks.loaders import task_from_dir
from llm4cov.util.aio import bounded_map
from llm4cov.util.jsonl import iter_jsonl
from llm4cov.util.progress import RunProgress

TASKS, SAMPLES, PAYLOAD = 50, 8, 20_000
ARM = Arm("m", ArmKind.AGENT, SAMPLES, 1)


def row(task: int, sample: int, rnd: int = 0, coverage: float = 100.0,
        payload: int = 10) -> dict:
    """A result row; ``payload`` characters each of log and response."""
    return {"arm": "m", "task_id": f"t{task}", "sample": sample, "round": rnd,
            "sim_pass": True, "cov_pass": coverage == 100.0, "coverage": coverage,
            "testbench_sha256": "x", "prompt_tokens": 1, "completion_tokens": 2,
            "gen_s": 0.5, "build_s": 1.0, "run_s": 0.25,
            "observation": {"cached": False, "log": "x" * payload}, "response": "y" * payload}


@pytest.fixture(scope="module")
def big_results(tmp_path_factory) -> Path:
    """400 finished one-round samples of ~40 KB each (16 MB): tasks with an even index
    always reach 100%, the others 50%."""
    path = tmp_path_factory.mktemp("big") / "results.jsonl"
    with path.open("w") as fh:
        for sample in range(SAMPLES):
            for task in range(TASKS):
                fh.write(json.dumps(row(task, sample, coverage=50.0 + 50.0 * (task % 2 == 0),
                                        payload=PAYLOAD)) + "\n")
    return path


def peak_bytes(fn):
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_score_streams_the_rows(big_results):
    plan = RunPlan(
        command="c", identity={}, tasks_file="t", tasks_sha256="0", simulator="v",
        coverage_options=[], overall_metrics=["line"], stop_at_full_coverage=True,
        arms=[ARM], tasks=[TaskInfo(id=f"t{i}", source="s", calibration=Calibration.UNKNOWN,
                                    calibrated_on="", has_reference=False)
                           for i in range(TASKS)])
    summary, peak = peak_bytes(lambda: score(plan, iter_jsonl(big_results)))
    assert peak < 4 * 1024**2  # the file is 16 MB
    arm = summary["arms"]["m"]
    assert (arm["samples_finished"], summary["complete"]) == (TASKS * SAMPLES, True)
    h = arm["headline"]
    assert (h["sim_pass"], h["cov_pass"], h["avg_cov"]) == pytest.approx((100.0, 50.0, 75.0))
    assert arm["spent"] == {"rows": 400, "sim_calls": 400, "sim_cached": 0,
                            "prompt_tokens": 400, "completion_tokens": 800, "gen_s": 200.0,
                            "sim_build_s": 400.0, "sim_run_s": 100.0}


def test_resume_index_holds_only_unfinished_samples(big_results):
    (finished, partial), peak = peak_bytes(
        lambda: resume_index(iter_jsonl(big_results), [ARM], stop_at_full=True))
    assert (len(finished), partial, peak < 4 * 1024**2) == (TASKS * SAMPLES, {}, True)

    two_rounds = Arm("m", ArmKind.AGENT, 4, 2)
    reference = Arm("reference", ArmKind.REFERENCE, 1, 1)
    rows = [row(0, 0, 0, 40.0), row(1, 0, 0, 40.0), row(0, 0, 1, 60.0),  # t0/0 done
            row(2, 0, 0, 100.0),  # stopped at full coverage
            row(3, 0, 1, 40.0),  # round 0 missing: not finished
            {**row(0, 0), "arm": "reference"}]
    finished, partial = resume_index(rows, [two_rounds, reference], stop_at_full=True)
    assert finished == {("m", "t0", 0), ("m", "t2", 0), ("reference", "t0", 0)}
    assert {k: [r["round"] for r in v] for k, v in partial.items()} == {
        ("m", "t1", 0): [0], ("m", "t3", 0): [1]}
    _, partial = resume_index(rows, [two_rounds, reference], stop_at_full=False)
    assert ("m", "t2", 0) in partial


def test_bounded_map_pulls_lazily_and_finishes_in_flight_work_on_error():
    pulled, events, in_flight, most = [], [], [0], [0]
    failed = asyncio.Event()

    def items():
        for i in range(10):
            pulled.append(i)
            yield i

    async def fn(i: int) -> None:
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        await asyncio.sleep(0)
        if i == 2:  # still running when item 3 fails
            await failed.wait()
        in_flight[0] -= 1
        events.append(f"{'fail' if i == 3 else 'done'} {i}")
        if i == 3:
            failed.set()
            raise ValueError("item 3")

    with pytest.raises(ValueError, match="item 3"):
        asyncio.run(bounded_map(items(), fn, concurrency=2))
    assert most[0] == 2
    assert events == ["done 0", "done 1", "fail 3", "done 2"]
    assert pulled == [0, 1, 2, 3]  # nothing after the failure started

    stopped = []

    async def until_two(i: int) -> None:
        stopped.append(i)

    asyncio.run(bounded_map(range(10), until_two, 1, stop=lambda: len(stopped) >= 2))
    assert stopped == [0, 1]


def test_progress_lines_for_logs():
    out = io.StringIO()
    display = RunProgress(Console(file=out, width=300), live=False, interval_s=0.0)
    with display:
        display.plan("random", 4, done=1)
        display.recorded("success", tokens=30)
        display.recorded("compile_error")
        display.recorded(None, tokens=12)  # a response without a testbench
        display.item_done("random")
        time.sleep(0.1)
        display.item_done("random")
        display.note("sim_calls budget reached")
    lines = out.getvalue().splitlines()
    assert lines[0] == ("random 1/4 · sim calls 1 (1 success) · tokens 30")
    assert lines[-1].startswith("random 3/4, ETA 0:00:0")
    assert lines[-1].endswith("· sim calls 2 (1 success, 1 compile_error) · tokens 42 · "
                              "sim_calls budget reached")


def test_count_repos_matches_iter_repos(tmp_path):
    tasks = tmp_path / "repos.jsonl"
    good = task_from_dir(EXAMPLES / "alu_comb").model_dump_json()
    tasks.write_text(f"{good}\n\n{{not json\n{good}\n")  # a bad line and a duplicate
    assert count_repos(tasks) == len(list(iter_repos(tasks))) == 3
    for name in ("a", "b"):
        (tmp_path / "dirs" / name).mkdir(parents=True)
        (tmp_path / "dirs" / name / "top.v").write_text(f"module {name}(); endmodule\n")
    (tmp_path / "dirs" / "docs").mkdir()
    (tmp_path / "dirs" / "docs" / "README.md").write_text("no RTL here\n")
    assert count_repos(tmp_path / "dirs") == len(list(iter_repos(tmp_path / "dirs"))) == 2
