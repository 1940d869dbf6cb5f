"""A fetched Verilator as a :class:`~llm4cov.sim.backends.verilator.toolchain.Toolchain`
(run, never imported)."""

from __future__ import annotations

import functools
import shutil

from llm4cov.sim.backends.verilator.toolchain import (
    Toolchain,
    find_toolchain,
    remembered_version,
)
from llm4cov.sim.safety.host import ToolchainError
from llm4cov.toolchains.registry import toolchain_spec
from llm4cov.toolchains.store import installed_paths, toolchain_dir


@functools.cache
def fetched_toolchain(name: str) -> Toolchain:
    """The fetched Verilator ``name`` with the pinned toolchain's ccache and z3 (cached
    for the process). Its version is what ``--version`` prints, less ``Verilator ``
    (``5.052 2026-09-05 rev v5.052``).

    Raises:
        ToolchainNotFetched: not installed (the message names `llm4cov toolchain get`).
        ToolchainError: it does not run, or perl/make/g++ are missing.
    """
    script, root = installed_paths(toolchain_spec(name))
    for tool in ("perl", "make", "g++"):
        if shutil.which(tool) is None:
            raise ToolchainError(f"'{tool}' is not on PATH; Verilator needs it to build")
    version = remembered_version(script, root)
    if version is None:
        raise ToolchainError(f"{script} --version failed; fetch it again with "
                             f"`llm4cov toolchain get {name}`")
    pinned = find_toolchain()
    return Toolchain(root, script, version.removeprefix("Verilator "), pinned.ccache,
                     pinned.z3, install_root=toolchain_dir(name))
