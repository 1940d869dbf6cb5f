"""Policies (who writes the testbench) and the registry that names them
(:mod:`llm4cov.policies.registry`: names, factories, options)."""

from __future__ import annotations

from llm4cov.policies.base import (
    AgentState,
    Generation,
    GenerationRequest,
    Policy,
    PolicyError,
    SamplingParams,
)
from llm4cov.policies.registry import (
    PolicyOptionsMap,
    builtin_models,
    get_policy,
    make_policy,
    policy_for,
    policy_options,
    register_policy,
)

BUILTIN = builtin_models()
"""Policies that need no model server; ``random`` drives a recognised register bus with
legal transactions (``register_bus.py``), ``random-flat`` keeps the per-cycle random loop
on every design, ``-vectors`` writes one literal line per stimulus vector (the style
before the compact loops); the last two are kept for comparison. (The built-in policies
registered at import; :func:`~llm4cov.policies.registry.builtin_models` also lists
those registered later.)"""

__all__ = [
    "BUILTIN",
    "AgentState",
    "Generation",
    "GenerationRequest",
    "Policy",
    "PolicyError",
    "PolicyOptionsMap",
    "SamplingParams",
    "builtin_models",
    "get_policy",
    "make_policy",
    "policy_for",
    "policy_options",
    "register_policy",
]
