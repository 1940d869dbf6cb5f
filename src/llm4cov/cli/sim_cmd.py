"""``llm4cov sim``: one evaluator call."""

from __future__ import annotations

from pathlib import Path

import typer

from llm4cov.cli import common, report_opts
from llm4cov.sim import hints
from llm4cov.sim.report import coverage_markdown
from llm4cov.tasks.loaders import read_text
from llm4cov.tasks.model import SourceFile


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
    aux: list[Path] = typer.Option(
        [], "--aux", help="Data file the testbench reads ($fopen, $readmemh), or a "
        "directory of them; repeatable. Only these are copied (a file next to --tb "
        "that it names gets a note)."),
    incdir: list[Path] = common.INCDIR,
    define: list[str] = common.DEFINE,
    filelist: Path = common.FILELIST,
    param: list[str] = common.PARAM,
    compile_timeout: float = common.COMPILE_TIMEOUT,
    run_timeout: float = common.RUN_TIMEOUT,
    seed: int = common.SEED,
    fsm: bool = common.FSM,
    no_cache: bool = common.NO_CACHE,
    no_sandbox: bool = common.NO_SANDBOX,
    html: Path = report_opts.HTML,
    lcov: Path = report_opts.LCOV,
    ucis: Path = report_opts.UCIS,
    trace: str = report_opts.TRACE,
    keep_workdir: bool = report_opts.KEEP_WORKDIR,
    exclude: Path = report_opts.EXCLUDE,
) -> None:
    """Simulate one testbench against an RTL repo and report DUT coverage.

    Exit code 0 when the simulation passes, 1 when it does not, 2 for bad input,
    3 when the simulator toolchain is broken.

    Example: llm4cov sim --rtl examples/alu_comb --tb my_tb.sv
    """
    task = common.resolve_task(rtl, tasks, task_id, top, instance,
                               common.repo_options(incdir, define, filelist, param))
    notes: list[str] = []
    text = read_text(tb, notes)
    try:
        aux_files, aux_notes = hints.aux_files(aux, tb, SourceFile(name=tb.name, content=text))
    except OSError as exc:
        raise common.fail(str(exc)) from exc
    notes += aux_notes
    request = report_opts.ReportRequest(html, lcov, ucis, trace, keep_workdir, exclude)
    config = request.config(common.sim_config(compile_timeout, run_timeout, seed, fsm, no_cache,
                                                  no_sandbox))
    evaluator = common.evaluator(config)
    with common.console.status(f"simulating {tb.name} against {task.dut_module_name} ..."):
        if request.needs_capture():
            if aux_files:
                notes.append("--aux files are not passed to the report outputs' run")
            out_dir = html or next((p.parent for p in (lcov, ucis) if p),
                                   Path.cwd() if trace else None)
            obs = report_opts.produce(
                task, text, config, request, out_dir, title=f"Coverage: {task.id}",
                tb_name=tb.name, any_instance=any_instance, rtl_dir=rtl).observation
        else:
            obs = evaluator.evaluate(task, text, tb_name=tb.name, aux_files=aux_files,
                                     any_instance=any_instance)
    if notes:
        obs = obs.model_copy(update={"notes": notes + obs.notes})
    if as_json:
        typer.echo(obs.model_dump_json(indent=2))
    else:
        typer.echo(coverage_markdown(obs, task, title="Simulation"))
    raise typer.Exit(0 if obs.sim_pass else 1)


def register(app: typer.Typer) -> None:
    app.command("sim", short_help="Simulate one testbench; report DUT coverage.")(sim)
