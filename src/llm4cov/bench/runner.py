"""Running a bench: every (arm, task, sample) trajectory, concurrently, resumably.

Each sample is one :func:`llm4cov.agent.loop.arun_agent` run. Up to
``max_concurrency`` samples are in flight; each has at most one model request or one
simulation outstanding, so model requests (async) overlap with simulations on the
executor's process pool and neither sits idle while ``max_concurrency > workers``.

Every round's row is appended durably to ``results.jsonl`` as soon as the round ends.
A rerun replays the stored rounds of each sample (the stored response and observation
stand in for the model and the simulator), then continues where the sample stopped, so
finished rows are never recomputed and a killed run loses only the rounds in flight.
Infrastructure failures (``PolicyError``, ``ToolchainError``) stop the run and propagate;
rows written so far stay, and the next invocation resumes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from llm4cov.agent.loop import RoundRecord, arun_agent
from llm4cov.bench.budget import Budget, BudgetExhausted
from llm4cov.bench.config import Arm, ArmKind, BenchConfig
from llm4cov.bench.rows import by_sample, make_row, sha256
from llm4cov.exec.base import SimExecutor
from llm4cov.policies.base import Generation, GenerationRequest, Policy, agenerate
from llm4cov.sim.observation import Observation
from llm4cov.tasks.model import Task
from llm4cov.util.jsonl import ResultLog


class ReplayMismatch(RuntimeError):
    """A stored round does not reproduce (results written by other code or options)."""


class ProgressSink(Protocol):
    def sample_done(self, arm: str) -> None: ...

    def update(self, budget: Budget) -> None: ...


@dataclass
class _Context:
    config: BenchConfig
    executor: SimExecutor
    log: ResultLog
    budget: Budget
    simulator: str
    progress: ProgressSink | None


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
                              completion_tokens=row["completion_tokens"], latency_s=row["gen_s"])
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
        self.ctx.log.append(make_row(
            arm=self.arm.name, task=self.task, sample=self.sample, round_=record.round,
            from_round=record.from_round, observation=record.observation,
            testbench=record.testbench, simulator=self.ctx.simulator,
            wall_s=time.monotonic() - self.started, model=record.model,
            response=record.response, prompt_tokens=record.prompt_tokens,
            completion_tokens=record.completion_tokens, gen_s=record.latency_s,
            policy=self.policy.describe(), params=self.agent.params, seed=seed,
        ))
        if self.ctx.progress:
            self.ctx.progress.update(self.ctx.budget)


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
    ctx.log.append(make_row(
        arm=arm.name, task=task, sample=0, round_=0, observation=obs, testbench=ref.content,
        simulator=ctx.simulator, wall_s=time.monotonic() - started, model=arm.name,
        policy={"model": arm.name, "testbench": ref.name,
                "aux_files": [f.name for f in ref.aux_files], "any_instance": True},
    ))
    if ctx.progress:
        ctx.progress.update(ctx.budget)


def planned_samples(arm: Arm, tasks: Sequence[Task]) -> int:
    """Samples ``arm`` runs on ``tasks`` (the reference arm: tasks with a reference)."""
    if arm.kind is ArmKind.REFERENCE:
        return sum(t.reference_tb is not None for t in tasks)
    return arm.samples * len(tasks)


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

    Raises:
        PolicyError, ToolchainError: infrastructure failures (the run stops).
        ReplayMismatch: stored rows that the current code does not reproduce.
    """
    ctx = _Context(config, executor, log, budget, simulator, progress)
    stored = by_sample(log.rows())
    gate = asyncio.Semaphore(config.max_concurrency)

    async def job(arm: Arm, task: Task, sample: int) -> None:
        async with gate:
            prior = stored.get((arm.name, task.id, sample), [])
            if budget.exhausted and not prior:
                return
            try:
                if arm.kind is ArmKind.REFERENCE:
                    await _run_reference(ctx, arm, task, prior)
                else:
                    await _run_agent_sample(ctx, arm, task, sample, policies[arm.name], prior)
            except BudgetExhausted:
                return
            if progress:
                progress.sample_done(arm.name)

    async with asyncio.TaskGroup() as group:
        for task in tasks:
            for arm in config.arms():
                if arm.kind is ArmKind.REFERENCE and task.reference_tb is None:
                    continue
                for sample in range(arm.samples):
                    group.create_task(job(arm, task, sample))
