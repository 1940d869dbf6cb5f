"""The policy interface: who writes the next testbench (paper: the model ``M``).

A policy maps a :class:`GenerationRequest` (the task, the chat messages the agent
built from the state ``s_t`` and the state itself as data, :class:`AgentState`) to a
:class:`Generation` (the raw response text). LLM policies read ``messages``; the
non-LLM policies read ``task`` and ``state`` (``random`` varies its stimulus by round,
``formal`` closes the uncovered items of ``state.observation``).
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from llm4cov.sim.model.observation import Observation
from llm4cov.tasks.model import Task
from llm4cov.util.settings import STRICT


@dataclass(frozen=True)
class SamplingParams:
    """Sampling parameters (paper defaults for the Qwen family: T=0.7, top-p=0.8).

    A frozen dataclass (hashable, used as a key to batch requests); inside settings
    models it validates like one (unknown keys and wrong types are errors)."""

    __pydantic_config__ = STRICT

    temperature: float = 0.7
    top_p: float = 0.8
    max_tokens: int = 8192
    seed: int | None = None

    def __post_init__(self) -> None:
        """Raises ValueError: temperature < 0, top_p outside [0, 1] or max_tokens < 1."""
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0 (got {self.temperature})")
        if not 0 <= self.top_p <= 1:
            raise ValueError(f"top_p must be between 0 and 1 (got {self.top_p})")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1 (got {self.max_tokens})")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class AgentState:
    """The state ``s_t = (R, x_t, o_t)`` a request is generated from, as data (the repo
    is the request's ``task``): ``testbench`` and ``observation`` are None in ``s_0``.

    ``round`` is the 0-based index of the round being generated (0 = direct inference
    from ``s_0``; synthesis states count the transitions before them, so a repair of a
    sampled state is round 1).
    """

    round: int = 0
    testbench: str | None = None
    observation: Observation | None = None

    @property
    def is_initial(self) -> bool:
        """Whether this is ``s_0`` (no current testbench)."""
        return self.testbench is None


@dataclass(frozen=True)
class GenerationRequest:
    """One call to a policy.

    ``messages`` are OpenAI-style chat messages (``{"role", "content"}``), rendered from
    ``state`` by the agent (``agent/prompt.py``). ``seed`` is the per-sample seed (it
    overrides ``params.seed`` when set). ``state`` defaults to ``s_0``.
    """

    task: Task
    messages: list[dict[str, str]]
    params: SamplingParams = field(default_factory=SamplingParams)
    seed: int | None = None
    state: AgentState = field(default_factory=AgentState)


@dataclass(frozen=True)
class Generation:
    """A policy's answer: raw text plus accounting (tokens, seconds).

    ``annotations``: facts a tool policy reports about its answer, kept with the round
    (e.g. the ``formal`` policy's verdicts under ``"formal"``); empty for a model.
    """

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"
    latency_s: float = 0.0
    annotations: dict[str, Any] = field(default_factory=dict)


class PolicyError(RuntimeError):
    """A policy could not produce an answer (server unreachable after retries, ...)."""


@runtime_checkable
class Policy(Protocol):
    """Anything that writes testbenches. ``name`` is recorded in every result row."""

    name: str

    def generate(self, request: GenerationRequest) -> Generation:
        """Answer one request (blocking). Raises :class:`PolicyError` on failure."""
        ...

    def describe(self) -> dict[str, Any]:
        """Model name, endpoint and sampling settings, for result rows."""
        ...


async def agenerate(policy: Policy, request: GenerationRequest) -> Generation:
    """Async form of :meth:`Policy.generate`: the policy's own ``agenerate`` when it
    has one (e.g. the OpenAI client), else the blocking call in a worker thread."""
    native = getattr(policy, "agenerate", None)
    if native is not None:
        return await native(request)
    return await asyncio.to_thread(policy.generate, request)
