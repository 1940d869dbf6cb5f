"""``llm4cov pipeline``: the stage loop (synthesize, export, train, evaluate per stage)
and the naive-augmentation baseline."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import typer
import yaml

from llm4cov.cli import common
from llm4cov.cli.options import PRINT_CONFIG, with_flags
from llm4cov.pipeline.config import PipelineConfig, load_config
from llm4cov.util.settings import to_mapping


def _plan(config: PipelineConfig) -> dict[str, Any]:
    """The resolved settings of every stage (what ``--plan`` prints)."""
    from llm4cov.pipeline.runner import checkpoint
    from llm4cov.pipeline.serving import student_ref

    stages = []
    for k in range(len(config.stages)):
        plan = config.stage(k)
        student = student_ref(config.student, k, checkpoint(config, k))
        stages.append({
            "stage": k, "preset": plan.preset, "repos": plan.repos,
            "student": student.name, "teacher": config.teacher.model,
            "checkpoint_in": student.checkpoint, "checkpoint_out": checkpoint(config, k + 1),
            "synth": to_mapping(plan.synth), "export": to_mapping(plan.export),
            "train": config.train_settings(k),
        })
    return {"out": config.out, "mode": config.mode, "stages": stages,
            "bench": config.bench.identity() if config.bench else None}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _print(stages: list[dict[str, Any]]) -> None:
    typer.echo("| stage | samples | train steps | train loss | mode | Sim Pass | Cov Pass "
               "| Avg Cov | wall s |")
    typer.echo("|---|---|---|---|---|---|---|---|---|")
    for row in stages:
        samples = row["export"]["samples"] if "export" in row else row["union"]["samples"]
        train = row["train"]
        for mode, bench in (row["bench"] or {"-": None}).items():
            head = bench["headline"] if bench else {}
            typer.echo(f"| {row['name']} | {samples} | {train['steps']} | "
                       f"{train['train_loss']:.4f} | {mode} | {_pct(head.get('sim_pass'))} | "
                       f"{_pct(head.get('cov_pass'))} | {_pct(head.get('avg_cov'))} | "
                       f"{row['wall_s']:.0f} |")


@with_flags(PipelineConfig, *common.sim_flags())
def pipeline(
    ctx: typer.Context,
    config_file: Path = typer.Option(..., "--config", help="Pipeline YAML (see "
                                     "examples/pipeline_smoke.yaml)."),
    overrides: list[str] = common.SET,
    mode: str = typer.Option(None, "--mode", help="progressive | naive (overrides the file)."),
    out: Path = typer.Option(None, "--out", file_okay=False,
                             help="Run directory (overrides the file)."),
    plan: bool = typer.Option(False, "--plan", help="Print the resolved settings of every "
                              "stage as YAML and exit."),
    show: bool = PRINT_CONFIG,
    flags: dict | None = None,
) -> None:
    """Run the stage loop: for k = 0..K-1 synthesize D(k) with checkpoint k, export it,
    train checkpoint k+1 from checkpoint k, evaluate it with bench. --mode naive trains
    once on the union of the stage datasets (the paper's baseline). The simulator flags
    (--executor ray --address auto, --workers, ...) override the file's sim: section
    for every synth and bench step.

    Writes OUT/run.json, OUT/steps.jsonl, OUT/stages.jsonl and one folder per stage
    (synth/, data/, checkpoint/, bench/); rerunning the same command resumes. Exit code
    0 when finished or stopped by a budget, 1 for a model-server or training failure
    (rerun to resume), 2 for bad input or a run directory with other settings, 3 for
    simulator toolchain problems.

    Example: llm4cov pipeline --config examples/pipeline_smoke.yaml --executor ray
    """
    config = load_config(config_file, overrides or [], mode=mode,
                         out=str(out) if out else None, **(flags or {}))
    if plan or show:
        typer.echo(yaml.safe_dump(_plan(config) if plan else to_mapping(config),
                                  sort_keys=False))
        return
    _run(config, common.command_line(ctx, "pipeline"))


def _run(config: PipelineConfig, command: str) -> None:
    """Run (or resume) the pipeline and print its stage table."""
    from llm4cov.pipeline import run_pipeline

    console = common.console
    for note in config.trust_notes(os.environ):
        console.print(f"note: this pipeline file: {note}", markup=False)
    with common.resumable("finished steps are saved"):
        result = run_pipeline(config, command,
                              lambda message: console.print(message, markup=False))
    _print(result.stages)
    inv = result.invocation
    console.print(f"{result.status}: {len(inv['steps_run'])} steps run, "
                  f"{len(inv['trained'])} checkpoints trained, {inv['sim_calls']} simulator "
                  f"calls, {inv['wall_s']:.0f} s; records in {result.out}/stages.jsonl",
                  markup=False)


def register(app: typer.Typer) -> None:
    app.command("pipeline", short_help="Run the stage loop: synth, train, bench.")(pipeline)
