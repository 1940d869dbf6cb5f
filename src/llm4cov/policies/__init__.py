"""Policies (who writes the testbench) and the factory that names them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm4cov.policies.base import (
    AgentState,
    Generation,
    GenerationRequest,
    Policy,
    PolicyError,
    SamplingParams,
)

if TYPE_CHECKING:
    from llm4cov.policies.random_stimulus import Style

BUILTIN = ("random", "random-flat", "random-vectors", "formal", "formal-vectors")
"""Policies that need no model server; ``random`` drives a recognised register bus with
legal transactions (``register_bus.py``), ``random-flat`` keeps the per-cycle random loop
on every design, ``-vectors`` writes one literal line per stimulus vector (the style
before the compact loops); the last two are kept for comparison."""


def get_policy(model: str = "random", base_url: str | None = None, **options) -> Policy:
    """The policy for ``model``: ``random`` (built-in baseline; ``random-flat`` without
    register-bus transactions, ``random-vectors`` in the long style), ``formal``
    (``formal-vectors``), ``local:PATH`` (a checkpoint run in this process with
    transformers, needs the ``train`` extra), a fetched model's name (``smollm2-135m``,
    see ``llm4cov model list``; run locally like ``local:`` unless ``base_url`` is
    given, then it is the served name) or any model name served by an
    OpenAI-compatible endpoint at ``base_url``.

    Raises:
        ValueError: an LLM model name without ``base_url`` and without
            ``OPENAI_BASE_URL`` in the environment, ``local:`` without a path, or a
            registered model that is not fetched yet (``ModelNotFetched``).
    """
    import os

    from llm4cov.models.registry import REGISTRY

    if model in ("random", "random-flat", "random-vectors"):
        from llm4cov.policies.random_stimulus import RandomStimulusPolicy

        return RandomStimulusPolicy(**options, style=_style(model),
                                    bus=model != "random-flat")
    if model in ("formal", "formal-vectors"):
        from llm4cov.policies.formal import FormalPolicy

        return FormalPolicy(**options, style=_style(model))
    if model.startswith("local:"):
        path = model.removeprefix("local:")
        if not path:
            raise ValueError("local:PATH needs a checkpoint directory or model id")
        from llm4cov.policies.local_transformers import LocalTransformersPolicy

        return LocalTransformersPolicy(path, **options)
    if model in REGISTRY and not base_url:
        from llm4cov.models.store import resolve_model
        from llm4cov.policies.local_transformers import LocalTransformersPolicy

        return LocalTransformersPolicy(resolve_model(model), name=model, **options)
    base_url = base_url or os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        raise ValueError(
            f"model {model!r} needs --base-url (an OpenAI-compatible endpoint, e.g. "
            f"http://localhost:8000/v1) or OPENAI_BASE_URL; built-in policies: "
            f"{', '.join(BUILTIN)}; a local checkpoint: local:PATH; fetched models: "
            f"{', '.join(sorted(REGISTRY))}"
        )
    from llm4cov.policies.openai_chat import OpenAIChatPolicy

    return OpenAIChatPolicy(model, base_url=base_url, **options)


def _style(model: str) -> Style:
    return "vectors" if model.endswith("-vectors") else "compact"


__all__ = [
    "BUILTIN",
    "AgentState",
    "Generation",
    "GenerationRequest",
    "Policy",
    "PolicyError",
    "SamplingParams",
    "get_policy",
]
