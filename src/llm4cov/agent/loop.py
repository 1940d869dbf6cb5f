"""The memoryless agent (paper, "Agent: memoryless state transitions").

``x_{t+1} ~ M(. | s_t)``, ``o_{t+1} = Sim(R, x_{t+1})``; the prompt holds only
``s_t = (R, x_t, o_t)``. Each round regenerates the full testbench. N rounds (default
3); direct inference is 1 round. The best state is kept by the key
(simulation passed, every target met, overall coverage).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from llm4cov.agent.prompt import build_messages, syntax_rules
from llm4cov.agent.response import NO_TESTBENCH, extract_testbench
from llm4cov.policies.base import (
    AgentState,
    GenerationRequest,
    Policy,
    SamplingParams,
    agenerate,
)
from llm4cov.sim.model.call import Simulate
from llm4cov.sim.model.observation import Observation, Status
from llm4cov.tasks.model import Task

StartFrom = Literal["latest", "best"]
"""Where the next round starts: the latest state, or the best one so far."""


@dataclass(frozen=True)
class AgentConfig:
    """Agent settings.

    ``start_from``: ``latest`` (the paper's definition: the next round starts from the
    state just produced) or ``best`` (what the official release does: the best state
    so far). ``seed``: per-sample seed; round ``r`` uses ``seed + r``.
    """

    rounds: int = 3
    start_from: StartFrom = "latest"
    stop_at_full_coverage: bool = True
    params: SamplingParams = field(default_factory=SamplingParams)
    syntax_rules: bool = False
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.rounds < 1:
            raise ValueError("rounds must be >= 1")
        if self.start_from not in ("latest", "best"):
            raise ValueError("start_from must be 'latest' or 'best'")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class RoundRecord(BaseModel):
    """Everything about one round, for audit and reuse as training data.

    ``from_round`` is the round whose state the prompt showed (-1 = ``s_0``).
    """

    round: int
    from_round: int
    messages: list[dict[str, str]]
    response: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    testbench: str | None
    observation: Observation
    annotations: dict[str, Any] = Field(default_factory=dict)
    """The policy's facts about its answer (:attr:`Generation.annotations`)."""


class AgentRun(BaseModel):
    """A finished agent run: all rounds and the index of the best one."""

    task_id: str
    policy: dict[str, Any] = Field(default_factory=dict)
    config: dict[str, Any] = Field(default_factory=dict)
    rounds: list[RoundRecord] = Field(default_factory=list)
    best_round: int = 0
    wall_s: float = 0.0

    @property
    def best(self) -> RoundRecord:
        return self.rounds[self.best_round]


def state_key(obs: Observation, task: Task) -> tuple[bool, bool, float]:
    """Order of states: (Sim Pass, every target met, overall coverage percent)."""
    return (obs.sim_pass, obs.meets(task.targets), obs.overall())


def no_testbench_observation() -> Observation:
    """The observation of a response that holds no usable code."""
    return Observation(status=Status.REJECTED, log=NO_TESTBENCH, notes=[NO_TESTBENCH])


async def arun_agent(
    task: Task,
    policy: Policy,
    simulate: Simulate,
    config: AgentConfig = AgentConfig(),
    on_round: Callable[[RoundRecord], None] | None = None,
) -> AgentRun:
    """Run the agent on ``task``; ``simulate(task, testbench)`` is the evaluator call.

    Raises:
        PolicyError: the policy failed (after its own retries).
    """
    start = time.monotonic()
    run = AgentRun(task_id=task.id, policy=policy.describe(), config=config.as_dict())
    rules = syntax_rules() if config.syntax_rules else None
    state: tuple[int, str | None, Observation | None] = (-1, None, None)
    for r in range(config.rounds):
        from_round, tb, obs = state
        messages = build_messages(task, tb, obs, rules)
        seed = None if config.seed is None else config.seed + r
        request = GenerationRequest(task, messages, config.params, seed, AgentState(r, tb, obs))
        gen = await agenerate(policy, request)
        new_tb = extract_testbench(gen.text, task.dut_module_name)
        new_obs = await simulate(task, new_tb) if new_tb else no_testbench_observation()
        record = RoundRecord(
            round=r,
            from_round=from_round,
            messages=messages,
            response=gen.text,
            model=gen.model,
            prompt_tokens=gen.prompt_tokens,
            completion_tokens=gen.completion_tokens,
            latency_s=round(gen.latency_s, 3),
            testbench=new_tb,
            observation=new_obs,
            annotations=gen.annotations,
        )
        run.rounds.append(record)
        if on_round:
            on_round(record)
        if state_key(new_obs, task) > state_key(run.best.observation, task):
            run.best_round = r
        if config.stop_at_full_coverage and run.best.observation.overall() >= 100.0:
            break
        chosen = run.best if config.start_from == "best" else record
        state = (chosen.round, chosen.testbench or "", chosen.observation)
    run.wall_s = round(time.monotonic() - start, 3)
    return run


def run_agent(
    task: Task,
    policy: Policy,
    evaluator,
    config: AgentConfig = AgentConfig(),
    on_round: Callable[[RoundRecord], None] | None = None,
) -> AgentRun:
    """Blocking :func:`arun_agent` with ``evaluator.evaluate`` run in a thread."""

    async def simulate(t: Task, tb: str) -> Observation:
        return await asyncio.to_thread(evaluator.evaluate, t, tb)

    return asyncio.run(arun_agent(task, policy, simulate, config, on_round))
