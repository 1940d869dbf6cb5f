"""``llm4cov gen``: run the memoryless agent on one repo and write the best testbench."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer

from llm4cov.agent.loop import AgentRun, arun_agent
from llm4cov.agent.warnings import run_warnings, warnings_markdown
from llm4cov.bench.config import BenchConfig
from llm4cov.cli import common, interrupt, report_opts
from llm4cov.cli.options import (
    PRINT_CONFIG,
    flag,
    parameter_source,
    print_config,
    with_flags,
)
from llm4cov.cli.round_progress import RoundFiles, RoundProgress, write_round
from llm4cov.policies import Policy, make_policy, policy_for
from llm4cov.policies.formal import VERDICTS
from llm4cov.policies.options import RandomOptions
from llm4cov.report.capture import capture, from_observation
from llm4cov.report.data import ReportData, TestRow
from llm4cov.sim.analysis.rtl_check import guard
from llm4cov.sim.model.call import SimCall
from llm4cov.sim.model.exclusions import proven_unreachable
from llm4cov.sim.model.observation import Observation
from llm4cov.sim.report import coverage_markdown
from llm4cov.tasks.model import Task
from llm4cov.util.settings import load, merge


def write_run(out: Path, task: Task, run: AgentRun, report: ReportData | None = None) -> None:
    """Write the run: ``tb.sv`` (best testbench), ``rounds/round_<k>.json`` (every
    round's prompt, response, testbench and observation), ``run.json`` and
    ``coverage.md`` (human-readable summary of the best round).

    Rounds are numbered from 1 in every file, as on the console (``from_round`` 0 is
    the initial state, before any testbench); the agent's records count from 0.
    ``report``: the best round's report content (from its own coverage data): its
    proven-unreachable (UNR) and parameter-constant misses go apart in ``coverage.md``
    and ``run.json`` (``coverage``), each with its separate figure; ``run.json``'s
    ``formal`` sums the formal policy's verdicts over the rounds. ``run.json`` and
    ``coverage.md`` are written again once the reports are done (:func:`gen`): the
    rounds are on disk before anything else can fail."""
    (out / "rounds").mkdir(parents=True, exist_ok=True)
    for record in run.rounds:
        write_round(out, record)
    best = run.best
    if best.testbench:
        (out / "tb.sv").write_text(best.testbench, encoding="utf-8")
    summary = {
        "task_id": task.id,
        "policy": run.policy,
        "config": run.config,
        "best_round": run.best_round + 1,
        "wall_s": run.wall_s,
        "rounds": [
            {
                "round": r.round + 1,
                "from_round": r.from_round + 1,
                "status": r.observation.status.value,
                "overall": r.observation.coverage.overall if r.observation.coverage else None,
                "scored_overall": r.observation.overall(),
                "targets_met": r.observation.meets(task.targets) if task.targets else None,
            }
            for r in run.rounds
        ],
        **_formal_verdicts(run),
        "coverage": _coverage_summary(best.observation, report),
        "warnings": [w.as_dict() for w in run_warnings(run)],
    }
    (out / "run.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    listed: dict[str, Any] = {} if report is None else {
        "uncovered": report.uncovered, "constant": report.constant_items,
        "unreachable": report.unreachable_items, "unreachable_points": report.unreachable}
    (out / "coverage.md").write_text(
        coverage_markdown(best.observation, task, title=f"Best testbench (round {best.round + 1})",
                          **listed) + warnings_markdown(run_warnings(run)),
        encoding="utf-8",
    )


def _formal_verdicts(run: AgentRun) -> dict:
    """``{"formal": ...}``: the formal policy's goal counts summed over the rounds and
    its failed jobs (empty for other policies)."""
    notes = [r.annotations["formal"] for r in run.rounds if "formal" in r.annotations]
    if not notes:
        return {}
    counts = {v: sum(n.get(v, 0) for n in notes) for v in VERDICTS}
    return {"formal": {**counts, "job_errors": [e for n in notes for e in n.get("job_errors", ())]}}


def _coverage_summary(obs: Observation, report: ReportData | None) -> dict:
    """The best round's figures: the headline ``overall`` (the evaluator's, percent) and
    beside it, separate, the overall with the proven-unreachable (``UNR``) and with the
    parameter-constant misses excluded, with those items listed (``mark``)."""
    rep = obs.coverage
    out: dict = {"overall": rep.overall if rep else None,
                 "scored_overall": obs.overall(),
                 "overall_unreachable_excluded": None,
                 "overall_constant_excluded": rep.overall_without_constant()
                 if rep and rep.constant else None}
    if report is None:
        return out
    out["overall_unreachable_excluded"] = report.overall_unreachable_excluded()
    out["uncovered"] = len(report.uncovered)
    out["unreachable_points"] = report.unreachable
    out["constant_points"] = rep.constant if rep else {}
    out["items_apart"] = [
        {"file": i.file, "line": i.line, "kind": i.kind, "detail": i.detail, "mark": mark}
        for mark, items in (("UNR", report.unreachable_items), ("constant",
                                                                report.constant_items))
        for i in items]
    return out


GEN_FLAGS = (
    flag("model", "--model"),
    flag("base_url", "--base-url"),
    flag("rounds", "--rounds", min=1),
    flag("start_from", "--start-from"),
    flag("temperature", "--temperature", min=0.0),
    flag("top_p", "--top-p", min=0.0, max=1.0),
    flag("max_tokens", "--max-tokens", min=1),
    flag("seed", "--sample-seed"),
    flag("syntax_rules", "--syntax-rules/--no-syntax-rules"),
    *(f for f in common.sim_flags() if f.key != "sim.workers"),
)
"""The agent and simulator flags of ``llm4cov gen``: the fields of one bench sample
(:class:`BenchConfig`; gen runs one sample of ``rounds`` rounds on one simulator)."""
GEN_UNUSED: dict[str, bool | set[str]] = {
    **dict.fromkeys(("samples", "baselines", "ids", "limit", "max_concurrency", "max_samples",
                     "max_sim_calls", "max_total_tokens"), True),
    "sim": {"workers"}}
""":class:`BenchConfig` fields that do not apply to one gen run (left out of
``--print-config``)."""
STIMULUS_LENGTH = flag("length", "--stimulus-length", min=1)
"""``--stimulus-length``: the ``length`` option of the model's policy (random, formal),
its default and help those of :class:`~llm4cov.policies.options.RandomOptions`."""


def _with_length(ctx: typer.Context, settings: BenchConfig, length: int) -> BenchConfig:
    """``settings`` with ``--stimulus-length``, when given, as the ``length`` option of
    the model's policy in ``policies`` (a policy without that option ignores it).

    Raises:
        ConfigError: the policy refuses the value.
    """
    if parameter_source(ctx, "stimulus_length") not in ("COMMANDLINE", "ENVIRONMENT"):
        return settings
    spec = policy_for(settings.model, settings.base_url)
    if "length" not in spec.options.model_fields:
        return settings
    return merge(settings, {"policies": {spec.name: {"length": length}}}, "--stimulus-length")


@common.with_task
@report_opts.with_reports()
@with_flags(BenchConfig, *GEN_FLAGS)
def gen(
    ctx: typer.Context,
    rtl: list[Path] = common.RTL_ARGUMENT,
    out: Path = typer.Option(..., "--out", file_okay=False, help="Output directory."),
    stimulus_length: int = STIMULUS_LENGTH.option(RandomOptions),
    no_html: bool = report_opts.NO_HTML,
    show: bool = PRINT_CONFIG,
    task: Task | None = None,
    flags: dict | None = None,
    reports: report_opts.ReportRequest | None = None,
) -> None:
    """Write a high-coverage testbench with the memoryless agent (N rounds).

    Writes OUT/tb.sv (best testbench), OUT/coverage.md, OUT/run.json, one JSON file
    per round under OUT/rounds/, and the reports (OUT/html/, OUT/coverage.dat) from the
    best round's own run. Simulations run one at a time on --executor (a worker
    process, or a Ray task). Exit code 0 when the best testbench simulates, 1 when no
    round produced a passing simulation (or the model server or the workers failed),
    2 for bad input (also: the RTL does not compile on its own, found after the first
    testbench whose errors all lie in the RTL), 3 for toolchain problems.

    Example: llm4cov gen examples/traffic_fsm --out runs/traffic
    """
    assert task is not None and flags is not None and reports is not None  # the decorators
    settings = _with_length(ctx, load(BenchConfig, flags=flags, base={"tasks": task.id}),
                            stimulus_length)
    if show:
        print_config(settings.model_dump(exclude=GEN_UNUSED))
        return
    policy = make_policy(settings.model, settings.base_url, settings.policies)
    settings = common.sized_for_the_device(policy, settings, flags)
    request = replace(reports, html=None if no_html else reports.html or out / "html")
    best = report_opts.BestRun()
    run = _run_agent(task, policy, settings, request, out, best)
    write_run(out, task, run, _reports(task, run, best, request, out,
                                       common.rtl_root(task), settings))
    raise typer.Exit(_print_best(task, run, out))


def _reports(task: Task, run: AgentRun, best: report_opts.BestRun,
             request: report_opts.ReportRequest, out: Path, rtl: Path | None,
             settings: BenchConfig) -> ReportData | None:
    """The reports of the best round, from its own run's coverage data (no second
    simulation; ``OUT/coverage.dat`` is that run's); a waveform dump or a kept work dir
    needs a build of its own, so only then is the best testbench run once more. Also
    says when formal jobs failed. Returns the report's content (None: no testbench)."""
    proven = proven_unreachable(r.annotations for r in run.rounds)
    _say_warnings(run)
    testbench = run.best.testbench
    obs = best.of(testbench)
    if obs is None or testbench is None:  # (no testbench: no observation)
        return None
    tests = _test_rows(run)
    title = f"Coverage: {task.id}, best testbench (round {run.best_round + 1})"
    warnings = [f"{w.message} ({w.lever})" for w in run_warnings(run)]
    data = report_opts.write_reports(from_observation(obs, out), task, request, title=title,
                                     rtl_dir=rtl, proven=proven, tests=tests,
                                     warnings=warnings)
    if request.needs_rerun():
        _rerun(task, testbench, request, out, settings)
    return data


def _rerun(task: Task, testbench: str, request: report_opts.ReportRequest, out: Path,
           settings: BenchConfig) -> None:
    """Run the best testbench once more for ``--trace`` / ``--keep-workdir`` (a build
    of their own); the reports stay those of the scored run."""
    with common.console.status("best testbench: building again for the waveform dump / "
                               "kept work dir ..."):
        cap = capture(task, testbench, request.config(settings.sim_config()), out,
                      keep_workdir=request.keep_workdir, trace=request.trace,
                      keep_coverage_dat=False)
    report_opts.say_kept(cap)


def _test_rows(run: AgentRun) -> list[TestRow]:
    """The rounds of ``run`` as the HTML report's run list."""
    rows = []
    for r in run.rounds:
        formal = r.annotations.get("formal")
        note = f"from round {r.from_round + 1}" if r.from_round >= 0 else "first round"
        if formal:
            note += "; formal: " + ", ".join(f"{formal.get(v, 0)} {v}" for v in VERDICTS)
        size = f"{len(r.testbench.splitlines())} lines" if r.testbench else "no testbench"
        rows.append(TestRow(f"round {r.round + 1}", r.observation.status.value,
                            r.observation.overall(), size, note, r.round == run.best_round))
    return rows


def _say_warnings(run: AgentRun) -> None:
    """One ``warning:`` line per finding of :func:`~llm4cov.agent.warnings.run_warnings`,
    with its lever."""
    for w in run_warnings(run):
        report_opts.say(f"warning: {w.message} ({w.lever})")


def _run_agent(task: Task, policy: Policy, settings: BenchConfig,
               request: report_opts.ReportRequest, out: Path,
               best: report_opts.BestRun) -> AgentRun:
    """Run the agent (sample 0 of ``settings``) on one simulator with a live display,
    each simulation keeping its coverage data for the reports (``best`` holds the best
    run's)."""
    steps = out / "rounds" / ".step"
    steps.parent.mkdir(parents=True, exist_ok=True)
    sim = settings.sim
    sim_config = replace(request.config(sim.sim_config()), progress_file=str(steps.resolve()))
    sims = common.open_executor(sim.executor, 1, sim_config, sim.address)
    config = settings.agent_config(0)
    files = RoundFiles(out, task)

    async def keeping(task: Task, testbench: str) -> Observation:
        return await sims.simulate_call(SimCall(task, testbench, keep_coverage=True))

    with common.console.status(f"{task.id}: {policy.name} writing testbenches ...") as status:
        progress = RoundProgress(common.console, status, config.rounds, out, policy.name,
                                 steps, getattr(policy, "meter", None),
                                 common.runtime_unbuilt(sim_config))

        def on_round(record) -> None:
            files(record)
            progress.on_round(record)

        async def agent() -> AgentRun:
            with progress.ticking():
                return await arun_agent(task, policy, progress.wrap(best.wrap(guard(keeping))),
                                        config, on_round)

        with interrupt.explained(files.kept):
            try:
                run = asyncio.run(agent())
            except KeyboardInterrupt:
                interrupt.say_why()
                raise typer.Exit(130) from None
            finally:
                sims.close()
                steps.unlink(missing_ok=True)
        write_run(out, task, run)
    return run


def _print_best(task: Task, run: AgentRun, out: Path) -> int:
    """Print the best round; the exit code: 0 when it simulates, else 1."""
    best = run.best.observation
    met = "met" if best.meets(task.targets) else "not met"
    target = f", target {task.target_for():g}% {met}" if task.target_for() is not None else ""
    common.console.print(
        f"best: round {run.best_round + 1}, {best.status.value}, overall {best.overall():.2f}%"
        f"{target} -> {out / 'tb.sv' if run.best.testbench else 'no testbench in any response'}"
    )
    return 0 if best.sim_pass else 1


def register(app: typer.Typer) -> None:
    app.command("gen", short_help="Write a high-coverage testbench for one repo.")(gen)
