"""``llm4cov sim``: one evaluator call."""

from __future__ import annotations

from pathlib import Path

import typer

from llm4cov.cli import common
from llm4cov.sim.report import coverage_markdown
from llm4cov.tasks.loaders import read_text


def sim(
    rtl: Path = typer.Option(None, "--rtl", help="Directory of RTL (and spec) files."),
    tb: Path = typer.Option(..., "--tb", help="Testbench file to simulate."),
    tasks: Path = typer.Option(None, "--tasks", help="Task JSONL file (instead of --rtl)."),
    task_id: str = typer.Option(None, "--id", help="Task id in --tasks."),
    top: str = typer.Option(None, "--top", help="DUT module when the RTL has several tops."),
    instance: str = typer.Option(None, "--instance", help="Required DUT instance name "
                                 "(default: dut; with --rtl only)."),
    any_instance: bool = typer.Option(False, "--any-instance",
                                      help="Accept any instance name of the DUT module."),
    as_json: bool = typer.Option(False, "--json", help="Print the Observation as JSON."),
    compile_timeout: float = common.COMPILE_TIMEOUT,
    run_timeout: float = common.RUN_TIMEOUT,
    seed: int = common.SEED,
    fsm: bool = common.FSM,
    no_cache: bool = common.NO_CACHE,
) -> None:
    """Simulate one testbench against an RTL repo and report DUT coverage.

    Exit code 0 when the simulation passes, 1 when it does not, 2 for bad input,
    3 when the simulator toolchain is broken.

    Example: llm4cov sim --rtl examples/alu_comb --tb my_tb.sv
    """
    task = common.resolve_task(rtl, tasks, task_id, top, instance)
    notes: list[str] = []
    try:
        text = read_text(tb, notes)
    except OSError as exc:
        raise common.fail(f"{tb}: {exc.strerror or exc}") from exc
    evaluator = common.evaluator_or_exit(common.sim_config(
        compile_timeout, run_timeout, seed, fsm, no_cache
    ))
    with common.console.status(f"simulating {tb.name} against {task.dut_module_name} ..."):
        obs = evaluator.evaluate(task, text, tb_name=tb.name, any_instance=any_instance)
    if notes:
        obs = obs.model_copy(update={"notes": notes + obs.notes})
    if as_json:
        typer.echo(obs.model_dump_json(indent=2))
    else:
        typer.echo(coverage_markdown(obs, task, title="Simulation"))
    raise typer.Exit(0 if obs.sim_pass else 1)


def register(app: typer.Typer) -> None:
    app.command("sim")(sim)
