"""Running a bench: every (arm, task, sample) trajectory, concurrently, resumably.

Each sample is one :func:`llm4cov.agent.loop.arun_agent` run. Up to
``max_concurrency`` samples are in flight; each has at most one model request or one
simulation outstanding, so model requests (async, on the driver) overlap with
simulations on the executor's workers (local processes or Ray tasks) and neither sits
idle while ``max_concurrency > workers``.

Every round's row is appended durably to ``results.jsonl`` as soon as the round ends.
A rerun skips finished samples, replays the stored rounds of unfinished ones (the stored
response and observation stand in for the model and the simulator) and continues where
each stopped, so finished rows are never recomputed and a killed run loses only the
rounds in flight. Samples are started lazily and only unfinished samples' rows are held,
so memory does not grow with the number of tasks or rows.
Infrastructure failures (``PolicyError``, ``ToolchainError``, ``WorkerLost``) stop the
run and propagate; rows written so far stay, and the next invocation resumes.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from llm4cov.agent.loop import RoundRecord, arun_agent
from llm4cov.bench.config import Arm, ArmKind, BenchConfig
from llm4cov.bench.rows import ResultRow, make_row, sha256
from llm4cov.bench.score import trajectory
from llm4cov.exec.base import SimExecutor
from llm4cov.policies.base import Generation, GenerationRequest, Policy, agenerate
from llm4cov.sim.model.observation import Observation
from llm4cov.tasks.model import Task
from llm4cov.util.aio import bounded_map
from llm4cov.util.budget import Budget, BudgetExhausted
from llm4cov.util.jsonl import ResultLog
from llm4cov.util.progress import NullProgress, ProgressSink

SampleKey = tuple[str, str, int]


class ReplayMismatch(RuntimeError):
    """A stored round does not reproduce (results written by other code or options)."""


@dataclass
class _Context:
    config: BenchConfig
    executor: SimExecutor
    log: ResultLog
    budget: Budget
    simulator: str
    progress: ProgressSink


class _Sample:
    """One sample's policy and simulator for ``arun_agent``: stored rounds are replayed,
    the rest go to the real policy and executor, and each new round becomes a row.

    Provides what ``arun_agent`` uses of the ``Policy`` protocol (``name``,
    ``describe``, ``agenerate``).
    """

    def __init__(self, ctx: _Context, arm: Arm, task: Task, sample: int, policy: Policy,
                 stored: Sequence[dict[str, Any]]) -> None:
        self.ctx, self.arm, self.task, self.sample = ctx, arm, task, sample
        self.policy = policy
        self.name = policy.name
        self.stored = {row["round"]: row for row in stored}
        self.agent = ctx.config.agent_config(sample)
        self.round = -1
        self.started = 0.0

    def describe(self) -> dict[str, Any]:
        return self.policy.describe()

    async def agenerate(self, request: GenerationRequest) -> Generation:
        self.round += 1
        self.started = time.monotonic()
        row = self.stored.get(self.round)
        if row is not None:
            return Generation(text=row["response"], model=row["model"],
                              prompt_tokens=row["prompt_tokens"],
                              completion_tokens=row["completion_tokens"], latency_s=row["gen_s"],
                              annotations=row.get("annotations") or {})
        self.ctx.budget.check_tokens()
        gen = await agenerate(self.policy, request)
        self.ctx.budget.add_tokens(gen.prompt_tokens + gen.completion_tokens)
        return gen

    async def simulate(self, task: Task, testbench: str) -> Observation:
        row = self.stored.get(self.round)
        if row is not None:
            return Observation.model_validate(row["observation"])
        self.ctx.budget.start_sim()
        return await self.ctx.executor.simulate(task, testbench)

    def on_round(self, record: RoundRecord) -> None:
        stored = self.stored.get(record.round)
        if stored is not None:
            tb = sha256(record.testbench) if record.testbench is not None else None
            if tb != stored["testbench_sha256"]:
                raise ReplayMismatch(
                    f"{self.arm.name} {self.task.id} sample {self.sample} round "
                    f"{record.round}: the stored response no longer yields the stored testbench")
            return
        seed = None if self.agent.seed is None else self.agent.seed + record.round
        row = make_row(
            arm=self.arm.name, task=self.task, sample=self.sample, round_=record.round,
            from_round=record.from_round, observation=record.observation,
            testbench=record.testbench, simulator=self.ctx.simulator,
            wall_s=time.monotonic() - self.started, model=record.model,
            response=record.response, prompt_tokens=record.prompt_tokens,
            completion_tokens=record.completion_tokens, gen_s=record.latency_s,
            policy=self.policy.describe(), params=self.agent.params, seed=seed,
            annotations=record.annotations,
        )
        _record(self.ctx, row)


def _record(ctx: _Context, row: ResultRow) -> None:
    """Write a new row durably and report it."""
    ctx.log.append(row.as_json())
    status = row.status.value if row.simulated else None
    ctx.progress.recorded(status, row.prompt_tokens + row.completion_tokens)


async def _run_agent_sample(ctx: _Context, arm: Arm, task: Task, sample: int, policy: Policy,
                            stored: Sequence[dict[str, Any]]) -> None:
    if not stored:
        ctx.budget.start_sample()
    s = _Sample(ctx, arm, task, sample, policy, stored)
    await arun_agent(task, s, s.simulate, s.agent, s.on_round)  # type: ignore[arg-type]


async def _run_reference(ctx: _Context, arm: Arm, task: Task,
                         stored: Sequence[dict[str, Any]]) -> None:
    ref = task.reference_tb
    if stored or ref is None:
        return
    ctx.budget.start_sample()
    ctx.budget.start_sim()
    started = time.monotonic()
    obs = await ctx.executor.simulate(task, ref.content, tb_name=ref.name,
                                      aux_files=tuple(ref.aux_files), any_instance=True)
    _record(ctx, make_row(
        arm=arm.name, task=task, sample=0, round_=0, observation=obs, testbench=ref.content,
        simulator=ctx.simulator, wall_s=time.monotonic() - started, model=arm.name,
        policy={"model": arm.name, "testbench": ref.name,
                "aux_files": [f.name for f in ref.aux_files], "any_instance": True},
    ))


def remove_tool_error_rounds(log: ResultLog) -> int:
    """Remove from ``log`` every row whose simulation failed in the tool (``tool_error``)
    and the later rounds of the same sample (they were prompted with that failure), so
    a resume redoes them; returns how many rows were removed."""
    first: dict[SampleKey, int] = {}
    for row in log.rows():
        if row.get("tool_error"):
            key = (row["arm"], row["task_id"], row["sample"])
            first[key] = min(row["round"], first.get(key, row["round"]))

    def drop(row: dict[str, Any]) -> bool:
        cut = first.get((row["arm"], row["task_id"], row["sample"]))
        return cut is not None and row["round"] >= cut

    return log.remove(drop) if first else 0


def planned_samples(arm: Arm, tasks: Sequence[Task]) -> int:
    """Samples ``arm`` runs on ``tasks`` (the reference arm: tasks with a reference)."""
    if arm.kind is ArmKind.REFERENCE:
        return sum(t.reference_tb is not None for t in tasks)
    return arm.samples * len(tasks)


def resume_index(rows: Iterable[dict[str, Any]], arms: Sequence[Arm], stop_at_full: bool
                 ) -> tuple[set[SampleKey], dict[SampleKey, list[dict[str, Any]]]]:
    """The finished samples and the stored rows of the unfinished ones, in one streaming
    pass over ``rows``: full rows are held only while their sample is unfinished (a
    sample is finished as :func:`llm4cov.bench.score.trajectory` defines it)."""
    rounds = {arm.name: arm.rounds for arm in arms}
    finished: set[SampleKey] = set()
    partial: dict[SampleKey, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        key = (row["arm"], row["task_id"], row["sample"])
        if key in finished:
            continue
        group = partial[key]
        group.append(row)
        group.sort(key=lambda r: r["round"])
        arm_rounds = rounds.get(row["arm"])
        if arm_rounds and trajectory(group, arm_rounds, stop_at_full) is not None:
            finished.add(key)
            del partial[key]
    return finished, dict(partial)


async def run_bench(
    config: BenchConfig,
    tasks: Sequence[Task],
    policies: dict[str, Policy],
    executor: SimExecutor,
    log: ResultLog,
    budget: Budget,
    simulator: str,
    progress: ProgressSink | None = None,
) -> None:
    """Run (or resume) every arm of ``config`` on ``tasks``; rows go to ``log``.

    ``policies`` maps each agent arm's name to its policy. A reached budget stops new
    work (``budget.exhausted`` says which); samples it cut short keep their rows.
    ``progress`` hears of every arm's planned and finished samples and every new row.

    Raises:
        PolicyError, ToolchainError, WorkerLost: infrastructure failures (no new sample
            starts; those in flight finish and keep their rows).
        ReplayMismatch: stored rows that the current code does not reproduce.
    """
    progress = progress or NullProgress()
    ctx = _Context(config, executor, log, budget, simulator, progress)
    arms = config.arms()
    finished, partial = resume_index(log.rows(), arms, config.stop_at_full_coverage)
    ids = {t.id for t in tasks}
    for arm in arms:
        progress.plan(arm.name, planned_samples(arm, tasks),
                      sum(a == arm.name and t in ids for a, t, _ in finished))

    def jobs() -> Iterator[tuple[Arm, Task, int]]:
        for task in tasks:
            for arm in arms:
                if arm.kind is ArmKind.REFERENCE and task.reference_tb is None:
                    continue
                for sample in range(arm.samples):
                    if (arm.name, task.id, sample) not in finished:
                        yield arm, task, sample

    async def job(item: tuple[Arm, Task, int]) -> None:
        arm, task, sample = item
        prior = partial.pop((arm.name, task.id, sample), [])
        if budget.exhausted and not prior:
            return
        try:
            if arm.kind is ArmKind.REFERENCE:
                await _run_reference(ctx, arm, task, prior)
            else:
                await _run_agent_sample(ctx, arm, task, sample, policies[arm.name], prior)
        except BudgetExhausted:
            progress.note(f"{budget.exhausted} budget reached")
            return
        progress.item_done(arm.name)

    await bounded_map(jobs(), job, config.max_concurrency)
