"""``llm4cov synth``: offline agentic data synthesis; ``synth export``: the SFT dataset;
``synth config``: the resolved settings of a stage."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from itertools import islice
from pathlib import Path

import typer
import yaml

from llm4cov.cli import common
from llm4cov.exec import ExecutorKind
from llm4cov.policies import get_policy
from llm4cov.synth.config import (
    export_preset,
    merge,
    resolve,
    stage_preset,
    to_mapping,
)
from llm4cov.synth.contamination import ContaminationIndex
from llm4cov.synth.engine import PROGRESS_GROUP, SynthRun, run_summary
from llm4cov.synth.export import export_dataset
from llm4cov.synth.records import RepoRow, RepoStatus, Role
from llm4cov.synth.sources import RepoFormat, count_repos, iter_repos

synth_app = typer.Typer(
    help="Offline agentic data synthesis (paper, 'Learning offline') and SFT export.",
    add_completion=False,
)

CONFIG = typer.Option(None, "--config", help="YAML file of settings (see `synth config`).")
SET = typer.Option(None, "--set", help="Override one setting, e.g. --set selection.candidates=8 "
                   "(repeatable; values are YAML).")


def _command_line(ctx: typer.Context, *words: str) -> str:
    """The invocation as a command line: every option whose value is not its default."""
    parts = ["llm4cov", *words]
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if value in (None, [], ()) or value == param.default:
            continue
        flag = param.opts[0]
        if not flag.startswith("-"):
            parts.append(str(value))
        elif isinstance(value, bool):
            parts.append(flag if value else param.secondary_opts[0])
        else:
            for v in value if isinstance(value, list | tuple) else [value]:
                parts += [flag, str(v)]
    return shlex.join(parts)


def _print_repo(row: RepoRow) -> None:
    if row.status is RepoStatus.DONE:
        common.console.print(f"{row.repo_id}: done, kept {row.counts.get('kept', 0)} of "
                             f"{row.counts.get('points', 0)} points")
    else:
        common.console.print(f"{row.repo_id}: skipped ({row.reason})")


@synth_app.callback(invoke_without_command=True)
def synth(
    ctx: typer.Context,
    stage: int = typer.Option(None, "--stage", help="Paper stage 0, 1 or 2 (its defaults)."),
    repos: Path = typer.Option(None, "--repos", help="Repos: task/CVDP/CodeV-R1 JSONL or a "
                               "directory of repo directories."),
    out: Path = typer.Option(None, "--out", file_okay=False,
                             help="Run directory (a rerun resumes it)."),
    student: str = typer.Option(None, "--student", help="Student: 'random' or a model name."),
    student_base_url: str = typer.Option(None, "--student-base-url",
                                         help="OpenAI-compatible endpoint of the student."),
    teacher: str = typer.Option(None, "--teacher", help="Teacher: 'random' or a model name."),
    teacher_base_url: str = typer.Option(None, "--teacher-base-url",
                                         help="OpenAI-compatible endpoint of the teacher."),
    repos_format: RepoFormat = typer.Option(RepoFormat.AUTO, "--repos-format",
                                            help="Format of --repos."),
    benchmarks: list[Path] = typer.Option(None, "--benchmarks", help="Benchmark task JSONL "
                                          "for the contamination filter (repeatable)."),
    config: Path = CONFIG,
    overrides: list[str] = SET,
    max_sim_calls: int = typer.Option(None, "--max-sim-calls", min=0,
                                      help="Simulator-call budget of the run directory."),
    max_tokens: int = typer.Option(None, "--max-tokens", min=0,
                                   help="Token budget (prompt + completion) of the run dir."),
    limit: int = typer.Option(None, "--limit", min=1, help="Only the first N repos."),
    executor: ExecutorKind = common.EXECUTOR,
    address: str = common.ADDRESS,
    workers: int = common.WORKERS,
    quiet: bool = common.QUIET,
    compile_timeout: float = common.COMPILE_TIMEOUT,
    run_timeout: float = common.RUN_TIMEOUT,
    seed: int = common.SEED,
    fsm: bool = common.FSM,
    no_cache: bool = common.NO_CACHE,
    no_sandbox: bool = common.NO_SANDBOX,
) -> None:
    """Synthesize training data D(k) for paper stage K.

    Stage 0: full-teacher traces + direct samples; 1: imitation (student, teacher);
    2: self-sampling (student, student). Writes OUT/run.json, samples.jsonl,
    points.jsonl, repos.jsonl; rerunning the same command resumes. Exit code 0 when the
    run finished or a budget stopped it, 1 for a policy failure or lost workers (rerun
    to resume),
    2 for bad input, 3 for toolchain problems.

    \b
    Examples:
      llm4cov synth --stage 0 --repos repos.jsonl --teacher random --out runs/d0
      llm4cov synth --stage 1 --repos repos.jsonl --student S \\
          --student-base-url URL --teacher T --teacher-base-url URL2 \\
          --out runs/d1 --executor ray --address auto
    """
    if ctx.invoked_subcommand is not None:
        return
    if stage is None or repos is None or out is None:
        raise common.fail("give --stage, --repos and --out (or a subcommand: export, config)")
    budget = {k: v for k, v in (("max_sim_calls", max_sim_calls), ("max_tokens", max_tokens))
              if v is not None}
    cfg = resolve(stage_preset(stage), config, overrides or [])
    cfg = merge(cfg, {"budget": budget}, "budget flags")
    names = {"student": (student, student_base_url), "teacher": (teacher, teacher_base_url)}
    policies = {}
    for role, who in zip((Role.INTERMEDIATE, Role.TRANSITION), cfg.trace_type.roles,
                         strict=True):
        model, url = names[who]
        if model is None:
            raise common.fail(f"stage {stage} ({cfg.trace_type.value}) needs --{who}")
        policies[role] = get_policy(model, url)
    index = (ContaminationIndex.from_task_files(benchmarks, cfg.contamination_threshold)
             if benchmarks else None)
    items = islice(iter_repos(repos, repos_format), limit)
    total = min(count_repos(repos), limit or sys.maxsize)
    sim = common.sim_config(compile_timeout, run_timeout, seed, fsm, no_cache, no_sandbox)
    sims = common.open_executor(executor, workers, sim, address)
    display = common.progress(quiet)
    try:
        run = SynthRun(out, cfg, policies, sims.simulate, index,
                       None if quiet else _print_repo, _command_line(ctx, "synth"), display)
        display.plan(PROGRESS_GROUP, total, min(len(run.repos), total))
        with common.resumable("finished work is saved"), display:
            outcome = asyncio.run(run.run(items))
    finally:
        sims.close()
    summary = run_summary(out)
    common.console.print(
        f"this run: {outcome.done} repos done, {outcome.skipped} skipped, {outcome.already} "
        f"finished before, {sims.calls} simulator calls; run dir: {json.dumps(summary)}"
    )
    if outcome.budget_stopped:
        common.console.print("budget reached: rerun with a larger budget to continue")


@synth_app.command("export")
def export(
    ctx: typer.Context,
    run_dir: Path = typer.Argument(..., help="A synth run directory."),
    out: Path = typer.Option(None, "--out", file_okay=False,
                             help="Export directory (default RUN_DIR/sft)."),
    config: Path = CONFIG,
    overrides: list[str] = SET,
    tokenizer: str = typer.Option(None, "--tokenizer", help="Local tokenizer.json or model "
                                  "directory for token counts (default: approximate)."),
    name: str = typer.Option(None, "--name", help="Dataset name for LlamaFactory."),
) -> None:
    """Export kept data points as SFT chat JSONL (+ LlamaFactory dataset_info.json,
    dataset card README.md, curation.json). Stage-0 runs are rebalanced (1/3 of short
    direct points, 1/2 of short agentic points).

    Example: llm4cov synth export runs/d0 --out data/d0
    """
    try:
        stage = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))["config"]["stage"]
    except (KeyError, TypeError) as exc:
        raise common.fail(f"{run_dir}/run.json: not a synth run record") from exc
    cfg = resolve(export_preset(stage), config, overrides or [])
    flags = {k: v for k, v in (("tokenizer", tokenizer), ("name", name)) if v is not None}
    cfg = merge(cfg, flags, "flags")
    result = export_dataset(run_dir, out or run_dir / "sft", cfg,
                            _command_line(ctx, "synth", "export"))
    common.console.print(f"{result.samples} samples -> {result.out_dir / 'sft.jsonl'} "
                         f"(card: {result.out_dir / 'README.md'})")


@synth_app.command("config")
def show_config(
    stage: int = typer.Option(..., "--stage", help="Paper stage 0, 1 or 2."),
    config: Path = CONFIG,
    overrides: list[str] = SET,
) -> None:
    """Print the resolved synthesis and export settings of a stage as YAML.

    Example: llm4cov synth config --stage 1 --set selection.strategy=best
    """
    synth_cfg = resolve(stage_preset(stage), config, overrides or [])
    typer.echo(yaml.safe_dump({"synth": to_mapping(synth_cfg),
                               "export": to_mapping(export_preset(stage))}, sort_keys=False))


def register(app: typer.Typer) -> None:
    app.add_typer(synth_app, name="synth", short_help="Synthesize training data; export it.")
