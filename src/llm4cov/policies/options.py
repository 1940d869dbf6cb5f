"""The options of the built-in policies: the typed settings each one registers with
:func:`llm4cov.policies.registry.register_policy`.

This module imports pydantic only, so that a config's ``policies:`` section is checked
without importing a policy's module (numpy, pyslang, torch, openai stay unloaded until
a policy is built). A default here is the policy class's own keyword default
(``tests/test_policy_registry.py`` checks that they agree); ``None`` means "the
policy's own default" where that default lives in a heavy module.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from llm4cov.util.settings import Settings

Dtype = Literal["auto", "bf16", "fp32", "int8"]
"""Weights of a local model (:class:`~llm4cov.policies.local_transformers.
LocalTransformersPolicy`)."""
ANSWER_PREFIX = "```systemverilog\n"
"""How a local model's answer starts by default: the fence the agent's system prompt
asks for (:mod:`llm4cov.agent.prompt`); the teachers' answers in SFT data start so too."""


class NoOptions(Settings):
    """The options of a policy that has none."""


class RandomOptions(Settings):
    """Options of the ``random`` policies (``random``, ``random-flat``,
    ``random-vectors``)."""

    length: int = Field(200, ge=1)
    """Stimulus vectors (clock cycles) per testbench in the first round; round r draws
    length * 2**r."""
    exhaustive_bits: int = Field(10, ge=0)
    """A design without a clock and with at most this many plain input bits is driven
    exhaustively."""


class FormalOptions(RandomOptions):
    """Options of the ``formal`` policies (``formal``, ``formal-vectors``): the random
    start's and the formal budgets of each analysis (None: the policy's defaults)."""

    cover_depth: int | None = Field(None, ge=1)
    """BMC depth of the cover job, cycles (None: the formal closure's default)."""
    prove_depth: int | None = Field(None, ge=1)
    """k of the k-induction (None: the formal closure's default)."""
    prove_budget_s: float | None = Field(None, ge=0)
    """Job seconds of the prove jobs per analysis (:mod:`llm4cov.formal.tools`; None: the
    policy's, 20 s)."""
    escalate_budget_s: float | None = Field(None, ge=0)
    """Job seconds of deeper cover jobs from reset per analysis (None: the policy's,
    none: its continuation searches deeper, from the simulated state)."""
    continue_steps: int | None = Field(None, ge=0)
    """Continuation steps per answer: cover jobs from the state the simulated answer
    ends in, one more simulation each (None: the policy's, 3; 0: none)."""
    continue_budget_s: float | None = Field(None, ge=0)
    """Job seconds of the continuation's cover jobs per answer (None: the policy's,
    60 s)."""


class OpenAIChatOptions(Settings):
    """Options of a model served by an OpenAI-compatible endpoint."""

    timeout_s: float = Field(600.0, gt=0)
    """Timeout of one request, seconds."""
    max_retries: int = Field(3, ge=0)
    """Retries of the client before a request fails (``PolicyError``)."""


class LocalOptions(Settings):
    """Options of a model run in this process with transformers (``local:PATH``, a
    fetched model's name)."""

    device: str | None = None
    """cuda, cpu, ...; None: CUDA when available."""
    dtype: Dtype = "auto"
    """Weights: auto (bf16 on a GPU that has it, else fp32), bf16, fp32, int8 (CPU
    only: dynamic int8 quantization, about 2x faster generation)."""
    batch_size: int = Field(8, ge=1)
    """Most prompts in one generate call."""
    batch_wait_s: float = Field(0.25, ge=0)
    """How long the batcher waits for more requests after the first one, seconds."""
    stop_at_code_end: bool = True
    """Stop an answer at the end of its first code block."""
    answer_prefix: str = ANSWER_PREFIX
    """The text every answer starts with ("" = none)."""
    cache: Literal["static", "dynamic"] = "static"
    """The KV cache: static (allocated once per generate call) or dynamic."""


__all__ = ["ANSWER_PREFIX", "Dtype", "FormalOptions", "LocalOptions", "NoOptions",
           "OpenAIChatOptions", "RandomOptions"]
