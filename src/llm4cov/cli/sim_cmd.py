"""``llm4cov sim``: one evaluator call."""

from __future__ import annotations

from pathlib import Path

import typer

from llm4cov.cli import common, report_opts
from llm4cov.cli.options import PRINT_CONFIG, print_config, with_flags
from llm4cov.exec.settings import SimSettings
from llm4cov.sim.analysis import hints
from llm4cov.sim.analysis.rtl_check import stop_on_rtl_error
from llm4cov.sim.backends import open_backend
from llm4cov.sim.model.observation import Observation, Status
from llm4cov.sim.report import coverage_markdown
from llm4cov.tasks.hdl import ParseLimitError, text_decls
from llm4cov.tasks.loaders import read_text
from llm4cov.tasks.model import SourceFile, Task
from llm4cov.tasks.names import name_errors, unsafe_chars
from llm4cov.util.escape import json_terminal, terminal
from llm4cov.util.progress import Phase
from llm4cov.util.settings import load


def _read_testbench(tb: Path, aux: list[Path], task: Task
                    ) -> tuple[str, list[SourceFile], list[str]]:
    """The testbench text, the ``--aux`` files it reads, and notes about both.

    Raises:
        CliError: an ``--aux`` path cannot be read, or a name (the testbench's, an aux
            file's) is not usable in the work dir or collides with an RTL file (exit 2).
    """
    if why := unsafe_chars(tb.name):
        raise common.fail(f"testbench file name {tb.name!r} {why}")
    notes: list[str] = []
    text = read_text(tb, notes)
    try:
        aux_files, aux_notes = hints.aux_files(aux, tb, SourceFile(name=tb.name, content=text))
    except OSError as exc:
        raise common.fail(str(exc)) from exc
    if errors := name_errors("--aux file", [f.name for f in aux_files],
                             taken=[f.name for f in task.rtl_files]):
        raise common.fail(errors[0] + (f" (and {len(errors) - 1} more)" if len(errors) > 1
                                       else ""))
    return text, aux_files, notes + aux_notes


@common.with_task
@report_opts.with_reports()
@with_flags(SimSettings, *common.EVALUATOR_FLAGS)
def sim(
    ctx: typer.Context,
    rtl: list[Path] = common.RTL_ARGUMENT,
    tb: Path = typer.Option(..., "--tb", help="Testbench file to simulate."),
    any_instance: bool = typer.Option(False, "--any-instance",
                                      help="Accept any instance name of the DUT module."),
    as_json: bool = typer.Option(False, "--json", help="Print the Observation as JSON."),
    aux: list[Path] = typer.Option(
        [], "--aux", help="Data file the testbench reads ($fopen, $readmemh), or a "
        "directory of them; repeatable. Only these are copied (a file next to --tb "
        "that it names gets a note)."),
    show: bool = PRINT_CONFIG,
    task: Task | None = None,
    flags: dict | None = None,
    reports: report_opts.ReportRequest | None = None,
) -> None:
    """Simulate one testbench against an RTL repo and report DUT coverage.

    Exit code 0 when the simulation passes, 1 when it does not, 2 for bad input (also:
    the RTL does not compile on its own; the report is printed first), 3 when the
    simulator toolchain is broken.

    Example: llm4cov sim examples/alu_comb --tb my_tb.sv (or --rtl examples/alu_comb)
    """
    assert task is not None and reports is not None  # with_task, with_reports give them
    settings = load(SimSettings, flags=flags)
    if show:
        print_config(settings)
        return
    text, aux_files, notes = _read_testbench(tb, aux, task)
    request = reports
    what = f"{tb.name} against {task.dut_module_name}"
    open_backend(settings.sim_config())  # a missing simulator fails before any progress
    with Phase(common.console, common.simulating(settings.sim_config(), what)):
        obs = _simulate(task, text, tb.name, aux_files, any_instance, settings, request,
                        common.rtl_root(task), notes)
    hint = [] if any_instance else instance_hint(task, text, tb.name, obs,
                                                 from_dir=ctx.params.get("tasks") is None)
    if notes or hint:
        obs = obs.model_copy(update={"notes": notes + obs.notes + hint})
    typer.echo(json_terminal(obs.model_dump_json(indent=2)) if as_json
               else terminal(coverage_markdown(obs, task, title="Simulation")))
    stop_on_rtl_error(obs, task)
    raise typer.Exit(0 if obs.sim_pass else 1)


def instance_hint(task: Task, text: str, tb_name: str, obs: Observation,
                  from_dir: bool) -> list[str]:
    """The flag that fixes a testbench that failed because it names the DUT instance
    otherwise than the task requires (``--instance NAME`` when ``from_dir``, the task
    being an RTL directory; ``--any-instance`` always), as a one-item list; empty when
    that is not the case."""
    if obs.status is not Status.COMPILE_ERROR:
        return []
    try:
        decls = text_decls(text, tb_name)  # the untrusted testbench alone: no include
    except ParseLimitError:
        return []
    names = [name for d in decls for mtype, name in d.instances
             if mtype == task.dut_module_name]
    if not names or task.dut_instance_name in names:
        return []
    fix = f"rerun with --instance {names[0]}, or " if from_dir else "rerun with "
    return [f"{tb_name} instantiates {task.dut_module_name} as `{names[0]}`, the task "
            f"requires `{task.dut_instance_name}`: {fix}--any-instance to accept any "
            "instance name"]


def _simulate(task: Task, text: str, tb_name: str, aux_files: list, any_instance: bool,
              settings: SimSettings, request: report_opts.ReportRequest, rtl: Path | None,
              notes: list[str]):
    """The observation of one testbench; through the report capture when a report
    output is asked for (a note when ``aux_files`` cannot follow it there)."""
    config = request.config(settings.sim_config())
    if not request.needs_capture():
        return common.evaluator(config).evaluate(task, text, tb_name=tb_name,
                                                 aux_files=aux_files, any_instance=any_instance)
    if aux_files:
        notes.append("--aux files are not passed to the report outputs' run")
    out_dir = request.html or next((p.parent for p in (request.lcov, request.ucis) if p),
                                   Path.cwd() if request.trace else None)
    return report_opts.produce(task, text, config, request, out_dir,
                               title=f"Coverage: {task.id}", tb_name=tb_name,
                               any_instance=any_instance, rtl_dir=rtl).observation


def register(app: typer.Typer) -> None:
    app.command("sim", short_help="Simulate one testbench; report DUT coverage.")(sim)
