"""The ``llm4cov`` command line (Typer + Rich). ``main(argv) -> int`` is testable.

Each command lives in its own module under ``llm4cov.cli`` and registers itself on
:data:`app` here.
"""

from __future__ import annotations

import logging
import sys

import click
import typer

app = typer.Typer(
    name="llm4cov",
    help="LLM agents that write high-coverage SystemVerilog testbenches, scored by Verilator.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging on stderr."),
) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )


def _register() -> None:
    from llm4cov.cli import bench_cmd, gen_cmd, pipeline_cmd, sim_cmd, train_cmd

    for module in (sim_cmd, gen_cmd, train_cmd, bench_cmd, pipeline_cmd):
        module.register(app)
    __import__("llm4cov.cli.synth_cmd", fromlist=["register"]).register(app)


_register()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    try:
        result = app(args=argv if argv is not None else sys.argv[1:], standalone_mode=False)
    except typer.Abort:
        return 130
    except click.ClickException as exc:  # usage errors: message + exit code 2
        exc.show()
        return exc.exit_code
    return result if isinstance(result, int) else 0
