"""Policies by name: which policy a model name means, how it is built and its options.

Each policy registers once (:func:`register_policy`, the table at the end of this
module): its name, the model names it answers to, a factory that imports its module
only when a policy is built (so ``import llm4cov.policies`` loads no numpy, pyslang,
torch or openai) and a typed options model (:mod:`llm4cov.policies.options`). Every
command reads a policy's options from here: the ``policies:`` section of the bench,
gen and pipeline settings (:data:`PolicyOptionsMap`, keyed by the registered name,
e.g. ``random: {length: 400}``) is checked against the options model of each policy it
names, and :func:`make_policy` builds a policy with them.

A model name is looked up first among the names policies answer to exactly, then by
the ``claims`` rules of the others, the last registered first (``local:PATH``, a
fetched model without an endpoint, then any other name as a served model).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from llm4cov.policies.base import Policy
from llm4cov.policies.options import (
    FormalOptions,
    LocalOptions,
    NoOptions,
    OpenAIChatOptions,
    RandomOptions,
)
from llm4cov.util.settings import Settings, validate

PolicyFactory = Callable[[str, str | None, Any], Policy]
"""Builds a policy from the model name, the endpoint (or None) and the validated options
(an instance of the policy's options model); imports the policy's module."""
Claims = Callable[[str, str | None], bool]
"""Whether a policy answers to a model name (with this endpoint or None)."""


class UnknownPolicy(ValueError):
    """No policy is registered under a name (bad input: exit 2)."""


@dataclass(frozen=True)
class PolicySpec:
    """One registered policy: ``name`` (the key of its options in a ``policies:``
    section), ``factory``, ``options`` (its options model), the ``models`` it answers
    to exactly, ``claims`` (a rule for other model names, or None) and ``builtin``
    (it needs no model server)."""

    name: str
    factory: PolicyFactory
    options: type[Settings]
    models: tuple[str, ...]
    claims: Claims | None = None
    builtin: bool = False


_POLICIES: dict[str, PolicySpec] = {}


def register_policy(name: str, factory: PolicyFactory, options: type[Settings] = NoOptions,
                    *, models: tuple[str, ...] | None = None, claims: Claims | None = None,
                    builtin: bool = False) -> PolicySpec:
    """Register a policy (a later call with the same ``name`` replaces it).

    ``models``: the model names it answers to (default: ``(name,)``, or none when
    ``claims`` is given); ``claims(model, base_url)``: a rule for other names, tried
    after every exact name, the last registered first. ``options``: its options model,
    a :class:`~llm4cov.util.settings.Settings` importable without the policy's module;
    ``factory(model, base_url, options)`` gets an instance of it.

    Raises:
        ValueError: a model name another policy answers to already.
    """
    models = models if models is not None else (() if claims else (name,))
    taken = sorted({m for spec in _POLICIES.values() if spec.name != name
                    for m in spec.models} & set(models))
    if taken:
        raise ValueError(f"policy {name!r}: {', '.join(taken)} already name another policy")
    spec = PolicySpec(name, factory, options, tuple(models), claims, builtin)
    _POLICIES[name] = spec
    return spec


def policy_names() -> list[str]:
    """The registered policy names (the keys of a ``policies:`` section), sorted."""
    return sorted(_POLICIES)


def builtin_models() -> tuple[str, ...]:
    """The model names of the policies that need no model server, in registry order."""
    return tuple(m for spec in _POLICIES.values() if spec.builtin for m in spec.models)


def policy_named(name: str) -> PolicySpec:
    """The policy registered as ``name``.

    Raises:
        UnknownPolicy: no such policy (the message lists the registered names).
    """
    if name not in _POLICIES:
        raise UnknownPolicy(f"unknown policy {name!r}; valid: {', '.join(policy_names())}")
    return _POLICIES[name]


def policy_for(model: str, base_url: str | None = None) -> PolicySpec:
    """The policy that model name ``model`` (served at ``base_url``, or None) means.

    Raises:
        UnknownPolicy: no policy answers to ``model``.
    """
    for spec in _POLICIES.values():
        if model in spec.models:
            return spec
    for spec in reversed(_POLICIES.values()):
        if spec.claims is not None and spec.claims(model, base_url):
            return spec
    raise UnknownPolicy(f"no policy answers to model {model!r}; built-in policies: "
                        f"{', '.join(builtin_models())}")


def policy_options(model: str, base_url: str | None = None,
                   policies: Mapping[str, Mapping[str, Any]] | None = None) -> Settings:
    """The options of ``model``'s policy: its entry in ``policies`` (a ``policies:``
    section) over the options model's defaults.

    Raises:
        UnknownPolicy: no policy answers to ``model``.
        ConfigError: an option that the policy's options model refuses (named).
    """
    spec = policy_for(model, base_url)
    return validate(spec.options, (policies or {}).get(spec.name, {}),
                    f"policies.{spec.name}")


def make_policy(model: str, base_url: str | None = None,
                policies: Mapping[str, Mapping[str, Any]] | None = None) -> Policy:
    """The policy for ``model`` with its options from ``policies`` (a ``policies:``
    section; see :func:`policy_options`).

    Raises:
        UnknownPolicy, ConfigError: see :func:`policy_options`.
        ValueError: the policy cannot be built from ``model`` (see :func:`get_policy`).
    """
    return policy_for(model, base_url).factory(
        model, base_url, policy_options(model, base_url, policies))


def get_policy(model: str = "random", base_url: str | None = None, **options: Any) -> Policy:
    """The policy for ``model`` with ``options`` (keywords of its options model):
    ``random`` (built-in baseline; ``random-flat`` without register-bus transactions,
    ``random-vectors`` in the long style), ``formal`` (``formal-vectors``),
    ``local:PATH`` (a checkpoint run in this process with transformers, needs the
    ``train`` extra), a fetched model's name (``smollm2-135m``, see ``llm4cov model
    list``; run locally like ``local:`` unless ``base_url`` is given, then it is the
    served name) or any model name served by an OpenAI-compatible endpoint at
    ``base_url``.

    Raises:
        ValueError: an LLM model name without ``base_url`` and without
            ``OPENAI_BASE_URL`` in the environment, ``local:`` without a path, a
            registered model that is not fetched yet (``ModelNotFetched``), or an
            option the policy does not have or refuses (``ConfigError``).
    """
    spec = policy_for(model, base_url)
    return spec.factory(model, base_url, validate(spec.options, options, f"{model} options"))


class PolicyOptions(dict[str, dict[str, Any]]):
    """A checked ``policies:`` section: a plain mapping that hashes by its content, so
    that the settings models holding one stay hashable (never changed once checked)."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(json.dumps(self, sort_keys=True))


def check_policies(values: dict[str, dict[str, Any]]) -> PolicyOptions:
    """A ``policies:`` section checked: each key a registered policy, each value valid
    options of it. Returns the options given (normalised by their models: ``"400"``
    becomes 400), without policies given no option.

    Raises:
        UnknownPolicy: an unregistered name.
        ConfigError: ``name: key: problem`` for an option the model refuses.
    """
    checked = PolicyOptions()
    for name, options in values.items():
        given = validate(policy_named(name).options, options, name)
        dump = given.model_dump(mode="json", include=given.model_fields_set)
        if dump:
            checked[name] = dump
    return checked


PolicyOptionsMap = Annotated[
    dict[str, dict[str, Any]], AfterValidator(check_policies),
    Field(validate_default=True,
          description="Options of the policies, by registered name (random: {length: "
          "400}, formal: {cover_depth: 40}, local: {dtype: int8}, openai: {timeout_s: "
          "300}); each checked against the options the policy registers "
          "(llm4cov.policies.registry); a policy not named keeps its defaults.")]
"""The type of a ``policies:`` section (a settings field with ``default_factory=dict``)."""


def _style(model: str) -> Literal["compact", "vectors"]:
    return "vectors" if model.endswith("-vectors") else "compact"


def _random(model: str, base_url: str | None, options: RandomOptions) -> Policy:
    from llm4cov.policies.random_stimulus import RandomStimulusPolicy

    return RandomStimulusPolicy(**options.model_dump(), style=_style(model),
                                bus=model != "random-flat")


def _formal(model: str, base_url: str | None, options: FormalOptions) -> Policy:
    from dataclasses import replace

    from llm4cov.policies.formal import FormalPolicy

    policy = FormalPolicy(options.length, options.exhaustive_bits, style=_style(model))
    budgets = options.model_dump(exclude=set(RandomOptions.model_fields), exclude_none=True)
    if budgets:  # on the policy's own default budgets
        policy.config = replace(policy.config, **budgets)
    return policy


def _fetched(model: str) -> bool:
    from llm4cov.models.registry import REGISTRY

    return model in REGISTRY


def _local(model: str, base_url: str | None, options: LocalOptions) -> Policy:
    if model.startswith("local:"):
        path = model.removeprefix("local:")
        if not path:
            raise ValueError("local:PATH needs a checkpoint directory or model id")
        from llm4cov.policies.local_transformers import LocalTransformersPolicy

        return LocalTransformersPolicy(path, **options.model_dump())
    from llm4cov.models.store import resolve_model
    from llm4cov.policies.local_transformers import LocalTransformersPolicy

    return LocalTransformersPolicy(resolve_model(model), name=model, **options.model_dump())


def _openai(model: str, base_url: str | None, options: OpenAIChatOptions) -> Policy:
    base_url = base_url or os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        from llm4cov.models.registry import REGISTRY

        raise ValueError(
            f"model {model!r} needs --base-url (an OpenAI-compatible endpoint, e.g. "
            f"http://localhost:8000/v1) or OPENAI_BASE_URL; built-in policies: "
            f"{', '.join(builtin_models())}; a local checkpoint: local:PATH; fetched "
            f"models: {', '.join(sorted(REGISTRY))}"
        )
    from llm4cov.policies.openai_chat import OpenAIChatPolicy

    return OpenAIChatPolicy(model, base_url=base_url, **options.model_dump())


register_policy("random", _random, RandomOptions,
                models=("random", "random-flat", "random-vectors"), builtin=True)
register_policy("formal", _formal, FormalOptions, models=("formal", "formal-vectors"),
                builtin=True)
register_policy("openai", _openai, OpenAIChatOptions, claims=lambda model, base_url: True)
register_policy("local", _local, LocalOptions,
                claims=lambda model, base_url: model.startswith("local:")
                or (not base_url and _fetched(model)))

__all__ = ["Claims", "PolicyFactory", "PolicyOptions", "PolicyOptionsMap", "PolicySpec",
           "UnknownPolicy",
           "builtin_models", "check_policies", "get_policy", "make_policy", "policy_for",
           "policy_named", "policy_names", "policy_options", "register_policy"]
