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


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging on stderr."),
) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


for _name in COMMANDS:
    importlib.import_module(f"llm4cov.cli.{_name}_cmd").register(app)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``); returns the exit code.

    Never raises (but SystemExit from a library) and never prints a traceback.
    """
    try:
        result = app(args=argv if argv is not None else sys.argv[1:], prog_name="llm4cov",
                     standalone_mode=False)
    except typer.Abort:
        typer.echo("error: interrupted", err=True)
        return errors.INTERRUPTED
    except errors.USAGE_ERROR as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare `llm4cov`: the help
            typer.echo(exc.ctx.get_help())
            return exc.exit_code
        return errors.report(exc)
    except Exception as exc:  # the one place where errors become exit codes
        return errors.report(exc)
    return result if isinstance(result, int) else errors.OK
