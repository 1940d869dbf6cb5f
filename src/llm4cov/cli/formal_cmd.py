"""``llm4cov formal``: formal-guided coverage closure of one design (+ ``warmup``)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import typer
from typer.core import TyperGroup, TyperOption

from llm4cov.cli import common, formal_opts
from llm4cov.cli.options import PRINT_CONFIG, print_config, with_flags, with_options
from llm4cov.exec.settings import SimSettings
from llm4cov.formal.closure import Closure, FormalConfig
from llm4cov.tasks.model import Task
from llm4cov.util.escape import terminal
from llm4cov.util.progress import Phase
from llm4cov.util.settings import load

_DEFAULTS = FormalConfig()


class RtlOrSubcommand(TyperGroup):
    """``formal [RTL] [OPTIONS]`` and ``formal warmup``: a group whose own positional
    argument (the RTL directory) would otherwise swallow a subcommand's name. The first
    word that is not an option or an option's value runs the subcommand it names; any
    other word is the RTL."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        at = self._subcommand_at(ctx, args)
        if at is None:  # options may follow the RTL, as in every other command
            ctx.allow_interspersed_args = True
            return super().parse_args(ctx, args)
        super().parse_args(ctx, args[:at])
        ctx._protected_args, ctx.args = args[at:at + 1], args[at + 1:]
        return ctx.args

    def _subcommand_at(self, ctx, args: list[str]) -> int | None:
        valued = {opt for p in self.get_params(ctx)
                  if isinstance(p, TyperOption) and not p.is_flag and not p.count
                  for opt in p.opts}
        i = 0
        while i < len(args) and args[i] != "--":
            if args[i] in self.commands:
                return i
            if not args[i].startswith("-"):
                return None  # the RTL
            i += 2 if args[i] in valued else 1
        return None


# help: the callback's docstring
formal_app = typer.Typer(add_completion=False, cls=RtlOrSubcommand)


BUDGET_OPTIONS = formal_opts.budget_options(_DEFAULTS)
"""The solver budgets: parameter -> (type, typer option), as ``FormalConfig`` fields."""


@formal_app.callback(invoke_without_command=True)
@common.with_task
@with_options("budgets", BUDGET_OPTIONS, lambda _ctx, values: values)
@with_flags(SimSettings, *(f for f in common.EVALUATOR_FLAGS
                           if f.key in ("seed", "cache", "sandbox")))
def formal(
    ctx: typer.Context,
    rtl: list[Path] = common.RTL_ARGUMENT,
    tb: Path = typer.Option(None, "--tb", help="Testbench whose holes to close (default: "
                            "the built-in random testbench)."),
    out: Path = typer.Option(Path("formal_tb.sv"), "--out",
                             help="Where to write the closing testbench."),
    as_json: bool = typer.Option(False, "--json", help="Print the classification as JSON."),
    show: bool = PRINT_CONFIG,
    task: Task | None = None,
    flags: dict | None = None,
    budgets: dict | None = None,
) -> None:
    """Close the coverage holes of a testbench with formal witnesses; classify every hole
    reached / unreachable (proven) / unknown and write the closing testbench.

    Exit code 0 when the closing testbench passes simulation, 1 when it does not or
    when every SBY job failed (the error names the first failure), 2 for bad input, 3
    when the simulator or the formal tools are missing.

    Example: llm4cov formal tests/fixtures/formal_lock --out closing_tb.sv
    """
    if common.subcommand_invoked(ctx):
        return
    assert task is not None and budgets is not None  # the decorators, unless a subcommand
    from llm4cov.formal import close, find_tools
    from llm4cov.tasks.loaders import read_text

    sim = load(SimSettings, flags=flags)
    config = FormalConfig(**budgets, sandbox=sim.sandbox, cache=sim.cache)
    if show:
        print_config({"formal": config, "sim": sim})
        return
    text = read_text(tb, []) if tb is not None else None
    tools = find_tools()
    evaluator = common.evaluator(replace(sim.sim_config(), feedback_limit=100_000))
    with Phase(common.console, f"formal closure of {task.dut_module_name}"):
        closure = close(task, text, evaluator, config, tools=tools)
    raise typer.Exit(_write(closure, out, as_json))


def _write(closure: Closure, out: Path, as_json: bool) -> int:
    """Write the closing testbench to ``out`` and print the classification; the exit
    code: 0 when the closing testbench passes simulation, else 1.

    Raises:
        CliError: (exit 1, after the output is written) every SBY job failed; the
            message quotes the first failure.
    """
    from llm4cov.formal.report import markdown, summary

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(closure.testbench, encoding="utf-8")
    if as_json:
        typer.echo(json.dumps({**summary(closure), "testbench_file": str(out)}, indent=2))
    else:
        typer.echo(terminal(markdown(closure) + f"\nClosing testbench: {out}"))
    if closure.result.all_jobs_failed():
        raise common.fail(f"formal: every SBY job failed, no goal was classified "
                          f"({closure.result.count('error')} goals): "
                          f"{closure.result.errors[0]}", code=1)
    return 0 if closure.after.sim_pass else 1


@formal_app.command("warmup")
def warmup_cmd() -> None:
    """Compile the WebAssembly formal tools once (minutes on a small machine; cached in
    the user's cache dir). Exit 3 when the tools are missing or broken.

    Example: llm4cov formal warmup
    """
    from llm4cov.formal import FormalToolError, warmup

    with Phase(common.console, "compiling the WebAssembly formal tools (first run only)"
               ) as phase:
        ok, log = warmup(on_step=lambda tool: phase.update(f"formal warm-up: compiling {tool}"))
    typer.echo(log)
    if not ok:
        raise FormalToolError(f"formal tools failed to start:\n{log}")


def register(app: typer.Typer) -> None:
    app.add_typer(formal_app, name="formal",
                  short_help="Formal closure: reach holes, prove the rest unreachable.")
