"""A bench run end to end, and re-scoring a run directory.

Run directory layout (fixed):

- ``run.json``: the plan (configuration identity, arms, tasks, simulator, invocations);
- ``results.jsonl``: one row per (arm, task, sample, round), see :mod:`llm4cov.bench.rows`;
- ``summary.json``, ``summary.md``, ``report.html`` and ``plots/*.png``: written from
  the two files above after every invocation, and again by :func:`write_reports`.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from llm4cov.bench.config import ArmKind, BenchConfig
from llm4cov.bench.metrics import Estimator
from llm4cov.bench.plan import load_plan, make_plan, open_plan, save_plan
from llm4cov.bench.report import html_report, markdown
from llm4cov.bench.rows import ROW_KEY, charge_prior
from llm4cov.bench.runner import remove_tool_error_rounds, run_bench
from llm4cov.bench.score import score
from llm4cov.policies import Policy, make_policy
from llm4cov.sim.backends import open_backend
from llm4cov.tasks.model import Task, TaskError
from llm4cov.tasks.sources import load_any_tasks
from llm4cov.util.budget import Budget
from llm4cov.util.jsonl import ResultLog, iter_jsonl
from llm4cov.util.progress import ProgressSink
from llm4cov.util.rundir import exclusive

RESULTS_FILE = "results.jsonl"


def select_tasks(config: BenchConfig) -> list[Task]:
    """The tasks of ``config.tasks`` (any format), filtered by ``ids`` then ``limit``.

    Raises:
        TaskError: unreadable file, bad records, or an id that is not in the file.
    """
    try:
        tasks = load_any_tasks(config.tasks)
    except OSError as exc:
        raise TaskError(f"{config.tasks}: {exc.strerror or exc}") from exc
    if config.ids:
        known = {t.id for t in tasks}
        missing = [i for i in config.ids if i not in known]
        if missing:
            raise TaskError(f"{config.tasks}: no task with id {', '.join(missing)}")
        tasks = [t for t in tasks if t.id in set(config.ids)]
    return tasks[: config.limit] if config.limit is not None else tasks


def make_policies(config: BenchConfig) -> dict[str, Policy]:
    """One policy per agent arm, with its options from ``config.policies``.

    Raises:
        ValueError: an LLM model without a base URL (see
            :func:`~llm4cov.policies.registry.make_policy`).
    """
    return {arm.name: make_policy(arm.name, config.base_url, config.policies)
            for arm in config.arms() if arm.kind is ArmKind.AGENT}


def write_reports(
    run_dir: Path, estimator: Estimator = Estimator.UNBIASED, plots: bool = True
) -> dict[str, Any]:
    """Score ``run_dir`` from ``run.json`` and ``results.jsonl`` and write
    ``summary.json``, ``summary.md`` and (with ``plots``) ``report.html`` + ``plots/``.
    Returns the summary.

    Raises:
        RunDirError: ``run_dir`` is not a bench run directory.
    """
    plan = load_plan(run_dir)
    summary = score(plan, iter_jsonl(run_dir / RESULTS_FILE), estimator)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    (run_dir / "summary.md").write_text(markdown(summary), encoding="utf-8")
    if plots:
        from llm4cov.bench.plots import all_plots  # matplotlib: only when plotting

        images = all_plots(summary)
        (run_dir / "plots").mkdir(exist_ok=True)
        for name, png in images.items():
            (run_dir / "plots" / f"{name}.png").write_bytes(png)
        from llm4cov.report.bench_links import read_links

        (run_dir / "report.html").write_text(html_report(summary, images, read_links(run_dir)),
                                             encoding="utf-8")
    return summary


def run(
    config: BenchConfig,
    tasks: list[Task],
    run_dir: Path,
    estimator: Estimator = Estimator.UNBIASED,
    progress: ProgressSink | None = None,
    plots: bool = True,
) -> dict[str, Any]:
    """Run or resume the bench of ``config`` on ``tasks`` (see :func:`select_tasks`) in
    ``run_dir``, then write the reports.

    Simulations run on ``config.sim.executor`` (local process pool or Ray). The invocation
    (start, wall seconds, new rows, rows removed by ``retry_tool_errors``, simulator
    calls, executor, budget) is recorded in ``run.json`` even when the run stops on an
    error or an interrupt; the reports are written then too.

    Raises:
        ValueError: a model without a base URL.
        ExecutorError: the executor cannot be set up (e.g. no Ray cluster at the address).
        RunDirError: ``run_dir`` holds another configuration.
        RunDirBusy: another process is running a bench in ``run_dir``
            (:func:`llm4cov.util.rundir.exclusive`).
        ToolchainError, PolicyError, WorkerLost: infrastructure failures.
    """
    with exclusive(run_dir):
        return _run(config, tasks, run_dir, estimator, progress, plots)


def _run(config: BenchConfig, tasks: list[Task], run_dir: Path, estimator: Estimator,
         progress: ProgressSink | None, plots: bool) -> dict[str, Any]:
    policies = make_policies(config)
    backend = open_backend(config.sim_config())
    simulator = backend.simulator
    plan = open_plan(run_dir, make_plan(config, tasks, simulator, backend.coverage_options()))
    log = ResultLog(run_dir / RESULTS_FILE, ROW_KEY)
    removed = remove_tool_error_rounds(log) if config.retry_tool_errors else 0
    if removed and progress is not None:
        progress.note(f"--retry-tool-errors: {removed} rows removed, to be redone")
    budget = Budget(config.max_samples, config.max_sim_calls, config.max_total_tokens)
    charge_prior(budget, log.rows())
    rows_before = len(log)
    executor = config.sim.open_executor()
    started, t0 = datetime.now(UTC).isoformat(timespec="seconds"), time.monotonic()
    error = None
    try:
        asyncio.run(run_bench(config, tasks, policies, executor, log, budget, simulator,
                              progress))
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        executor.close()
        plan.invocations.append({
            "started": started, "wall_s": round(time.monotonic() - t0, 1),
            "new_rows": len(log) - rows_before, "removed_tool_error_rows": removed,
            "sim_calls": executor.calls,
            "executor": config.sim.executor.value, "workers": executor.workers,
            "max_concurrency": config.max_concurrency, "budget": budget.as_dict(),
            "error": error,
        })
        save_plan(run_dir, plan)
        summary = write_reports(run_dir, estimator, plots)
    return summary
