"""``llm4cov synth``: offline agentic data synthesis; ``synth export``: the SFT dataset;
``synth config``: the resolved settings of a stage."""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path

import typer
import yaml
from pydantic import Field

from llm4cov.cli import common
from llm4cov.cli.options import PRINT_CONFIG, flag, print_config, with_flags, with_options
from llm4cov.exec.settings import SimSettings
from llm4cov.policies import Policy, make_policy
from llm4cov.policies.registry import PolicyOptionsMap
from llm4cov.synth.config import ExportConfig, SynthConfig, export_preset, stage_preset
from llm4cov.synth.engine import PROGRESS_GROUP, run_summary
from llm4cov.synth.export import export_dataset, read_run
from llm4cov.synth.launch import PolicyMaker, RepoSource, role_policies, synth_run
from llm4cov.synth.records import RepoRow, RepoStatus, Role
from llm4cov.tasks.sources import AUTO, UnknownTaskFormat, check_format, format_names
from llm4cov.util.settings import (
    ConfigError,
    Settings,
    deep_update,
    merge,
    parse_override,
    read_mapping,
    resolve,
    to_mapping,
    validate,
)

synth_app = typer.Typer(
    help="Offline agentic data synthesis (paper, 'Learning offline') and SFT export.",
    add_completion=False,
)

CONFIG = typer.Option(None, "--config", help="YAML file of synthesis settings (see "
                      "`synth config`).")
SET = typer.Option(None, "--set", metavar="KEY=VALUE",
                   help="Override one setting, e.g. --set selection.candidates=8 "
                   "(repeatable; values are YAML).")


def _print_repo(row: RepoRow) -> None:
    if row.status is RepoStatus.DONE:
        common.console.print(f"{row.repo_id}: done, kept {row.counts.get('kept', 0)} of "
                             f"{row.counts.get('points', 0)} points")
    else:
        common.console.print(f"{row.repo_id}: skipped ({row.reason})")


class SynthFlags(Settings):
    """The settings of ``llm4cov synth``: synthesis settings (on the stage preset), the
    simulators and the options of the roles' policies (by registered policy name, as in
    bench and the pipeline: :mod:`llm4cov.policies.registry`)."""

    synth: SynthConfig = Field(default_factory=SynthConfig)
    sim: SimSettings = Field(default_factory=SimSettings)
    policies: PolicyOptionsMap = Field(default_factory=dict)


SYNTH_FLAGS = (
    flag("synth.budget.max_sim_calls", "--max-sim-calls", min=0),
    flag("synth.budget.max_tokens", "--max-tokens", min=0),
    *common.sim_flags(),
)


ROLE_OPTIONS = {
    "student": (str, typer.Option(None, "--student", help="Student: 'random' or a model "
                                  "name.")),
    "student_base_url": (str, typer.Option(None, "--student-base-url",
                                           help="OpenAI-compatible endpoint of the student.")),
    "teacher": (str, typer.Option(None, "--teacher", help="Teacher: 'random' or a model "
                                  "name.")),
    "teacher_base_url": (str, typer.Option(None, "--teacher-base-url",
                                           help="OpenAI-compatible endpoint of the teacher.")),
}


Holder = tuple[str, str | None]
"""A role holder given on the command line: its model name and endpoint (or None)."""


def _holders(ctx: typer.Context, values: dict) -> dict[str, Holder]:
    """The role holders given (``--student``, ``--teacher``)."""
    return {who: (values[who], values[f"{who}_base_url"])
            for who in ("student", "teacher") if values[who] is not None}


def _makers(holders: dict[str, Holder], policies: PolicyOptionsMap
            ) -> dict[str, PolicyMaker]:
    """The policy makers of the role ``holders``, with their options from ``policies``
    (a checked ``policies:`` section)."""
    return {who: functools.partial(make_policy, model, base_url, policies)
            for who, (model, base_url) in holders.items()}


def _repos_format(value: str) -> str:
    """``--repos-format``: a format of :mod:`llm4cov.tasks.sources`."""
    try:
        return check_format(value)
    except UnknownTaskFormat as exc:
        raise typer.BadParameter(str(exc)) from None


@synth_app.callback(invoke_without_command=True)
@with_options("holders", ROLE_OPTIONS, _holders)
@with_flags(SynthFlags, *SYNTH_FLAGS)
def synth(
    ctx: typer.Context,
    stage: int = typer.Option(None, "--stage", help="Paper stage 0, 1 or 2 (its defaults)."),
    repos: Path = typer.Option(None, "--repos", help="Repos: task/CVDP/CodeV-R1 JSONL or a "
                               "directory of repo directories."),
    out: Path = typer.Option(None, "--out", file_okay=False,
                             help="Run directory (a rerun resumes it)."),
    repos_format: str = typer.Option(AUTO, "--repos-format", parser=_repos_format,
                                     metavar=f"[{'|'.join(format_names())}]",
                                     help="Format of --repos."),
    benchmarks: list[Path] = typer.Option(None, "--benchmarks", help="Benchmark task JSONL "
                                          "for the contamination filter (repeatable)."),
    config_file: Path = CONFIG,
    overrides: list[str] = SET,
    limit: int = typer.Option(None, "--limit", min=1, help="Only the first N repos (after "
                              "--skip)."),
    skip: int = typer.Option(0, "--skip", min=0, help="Leave out the first N repos (file "
                             "order), e.g. those another stage used."),
    quiet: bool = common.QUIET,
    show: bool = PRINT_CONFIG,
    holders: dict[str, Holder] | None = None,
    flags: dict | None = None,
) -> None:
    """Synthesize training data D(k) for paper stage K.

    Stage 0: full-teacher traces + direct samples; 1: imitation (student, teacher);
    2: self-sampling (student, student). Writes OUT/run.json, samples.jsonl,
    points.jsonl, repos.jsonl; rerunning the same command resumes. Exit code 0 when the
    run finished or a budget stopped it, 1 for a policy failure or lost workers (rerun
    to resume), 2 for bad input, 3 for toolchain problems.

    \b
    Examples:
      llm4cov synth --stage 0 --repos repos.jsonl --teacher random --out runs/d0
      llm4cov synth --stage 1 --repos repos.jsonl --student S \\
          --student-base-url URL --teacher T --teacher-base-url URL2 \\
          --out runs/d1 --executor ray --address auto
    """
    if common.subcommand_invoked(ctx):
        return
    if stage is None:
        raise common.fail("give --stage, --repos and --out (or a subcommand: export, config)")
    settings = _settings(stage, config_file, overrides or [], flags or {})
    if show:
        print_config(settings)
        return
    if repos is None or out is None:
        raise common.fail("give --stage, --repos and --out (or a subcommand: export, config)")
    policies = role_policies(settings.synth.trace_type,
                             _makers(holders or {}, settings.policies))
    _run(ctx, out, settings, policies, RepoSource(repos, repos_format, limit, skip),
         benchmarks or [], quiet)


SECTIONS = tuple(SynthFlags.model_fields)
"""The sections of a sectioned ``synth --config`` file (what ``--print-config`` prints):
``synth``, ``sim``, ``policies``."""


def _settings(stage: int, config_file: Path | None, overrides: list[str], flags: dict
              ) -> SynthFlags:
    """The synthesis settings (stage preset < file < ``--set`` < flags), the simulator
    settings and the policies' options. The file holds synthesis keys at its top level,
    or the sections ``synth:``, ``sim:`` and ``policies:``; ``--set sim.KEY=VALUE`` sets
    a simulator setting, ``--set policies.NAME.KEY=VALUE`` an option of a policy,
    ``--set synth.KEY=...`` or ``--set KEY=...`` a synthesis one.

    Raises:
        ConfigError: a bad file, override or value (the message names the key; an
            unregistered policy lists the registered ones).
        CliError: the settings name another stage than ``--stage``.
    """
    data = read_mapping(config_file) if config_file is not None else {}
    sectioned = any(key in SECTIONS for key in data)
    if sectioned and set(data) - set(SECTIONS):
        raise ConfigError(f"{config_file}: give either synthesis keys or the sections "
                          f"{', '.join(SECTIONS)}, not both (found "
                          f"{', '.join(sorted(set(data) - set(SECTIONS)))})")
    parts = {key: data.get(key) or {} for key in SECTIONS} if sectioned \
        else {**{key: {} for key in SECTIONS}, "synth": data}
    for item in overrides:
        value = parse_override(item)
        where = next(iter(value))
        section = where if where in SECTIONS else "synth"
        parts[section] = deep_update(parts[section], value[where] if where in SECTIONS
                                     else value)
    source = ", ".join([*([str(config_file)] if config_file else []),
                        *(f"--set {o}" for o in overrides), "flags"])
    cfg = merge(stage_preset(stage), deep_update(parts["synth"], flags.get("synth", {})), source)
    if cfg.stage != stage:
        raise common.fail(f"stage {cfg.stage} in {source} differs from --stage {stage} (the "
                          "stage is chosen with --stage, which also picks its preset)")
    sim = validate(SimSettings, deep_update(parts["sim"], flags.get("sim", {})), source)
    return validate(SynthFlags, {"synth": cfg, "sim": sim, "policies": parts["policies"]},
                    source)


def _run(ctx: typer.Context, out: Path, settings: SynthFlags, policies: dict[Role, Policy],
         source: RepoSource, benchmarks: list[Path], quiet: bool) -> None:
    """Run (or resume) the synthesis into ``out`` and print what it did."""
    total = source.count()
    sim = settings.sim
    sims = common.open_executor(sim.executor, sim.workers, sim.sim_config(), sim.address)
    display = common.progress(quiet)
    try:
        run = synth_run(out, settings.synth, policies, sims.simulate, benchmarks,
                        on_repo=None if quiet else _print_repo,
                        command=common.command_line(ctx, "synth"), progress=display,
                        policy_options=settings.policies)
        display.plan(PROGRESS_GROUP, total, min(len(run.repos), total))
        with common.resumable("finished work is saved"), display:
            outcome = asyncio.run(run.run(source.items()))
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
@with_flags(ExportConfig, flag("tokenizer", "--tokenizer"), flag("name", "--name"))
def export(
    ctx: typer.Context,
    run_dir: Path = typer.Argument(..., help="A synth run directory."),
    out: Path = typer.Option(None, "--out", file_okay=False,
                             help="Export directory (default RUN_DIR/sft)."),
    config_file: Path = CONFIG,
    overrides: list[str] = SET,
    show: bool = PRINT_CONFIG,
    flags: dict | None = None,
) -> None:
    """Export kept data points as SFT chat JSONL (+ LlamaFactory dataset_info.json,
    dataset card README.md, curation.json). Stage-0 runs are rebalanced (1/3 of short
    direct points, 1/2 of short agentic points).

    Example: llm4cov synth export runs/d0 --out data/d0
    """
    stage = read_run(run_dir)["config"]["stage"]
    cfg = resolve(export_preset(stage), config_file, overrides or [], flags)
    if show:
        print_config(cfg)
        return
    result = export_dataset(run_dir, out or run_dir / "sft", cfg,
                            common.command_line(ctx, "synth", "export"))
    common.console.print(f"{result.samples} samples -> {result.out_dir / 'sft.jsonl'} "
                         f"(card: {result.out_dir / 'README.md'})")


@synth_app.command("config")
def show_config(
    stage: int = typer.Option(..., "--stage", help="Paper stage 0, 1 or 2."),
    config_file: Path = CONFIG,
    overrides: list[str] = SET,
) -> None:
    """Print the resolved synthesis and export settings of a stage as YAML.

    Example: llm4cov synth config --stage 1 --set selection.strategy=best
    """
    synth_cfg = resolve(stage_preset(stage), config_file, overrides or [])
    typer.echo(yaml.safe_dump({"synth": to_mapping(synth_cfg),
                               "export": to_mapping(export_preset(stage))}, sort_keys=False))


def register(app: typer.Typer) -> None:
    app.add_typer(synth_app, name="synth", short_help="Synthesize training data; export it.")
