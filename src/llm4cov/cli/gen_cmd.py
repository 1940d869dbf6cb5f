"""``llm4cov gen``: run the memoryless agent on one repo and write the best testbench."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import typer

from llm4cov.agent.loop import AgentRun, arun_agent
from llm4cov.bench.config import BenchConfig
from llm4cov.cli import common, interrupt, report_opts
from llm4cov.cli.options import PRINT_CONFIG, flag, print_config, with_flags
from llm4cov.cli.round_progress import RoundFiles, RoundProgress, write_round
from llm4cov.policies import Policy, get_policy
from llm4cov.sim.report import coverage_markdown
from llm4cov.sim.rtl_check import guard
from llm4cov.tasks.model import Task
from llm4cov.util.settings import load


def write_run(out: Path, task: Task, run: AgentRun) -> None:
    """Write the run: ``tb.sv`` (best testbench), ``rounds/round_<k>.json`` (every
    round's prompt, response, testbench and observation), ``run.json`` and
    ``coverage.md`` (human-readable summary of the best round).

    Rounds are numbered from 1 in every file, as on the console (``from_round`` 0 is
    the initial state, before any testbench); the agent's records count from 0."""
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
                "targets_met": r.observation.meets(task.targets),
            }
            for r in run.rounds
        ],
    }
    (out / "run.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    (out / "coverage.md").write_text(
        coverage_markdown(best.observation, task, title=f"Best testbench (round {best.round + 1})"),
        encoding="utf-8",
    )


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
GEN_UNUSED = {**dict.fromkeys(("samples", "baselines", "ids", "limit", "max_concurrency",
                               "max_samples", "max_sim_calls", "max_total_tokens"), True),
              "sim": {"workers"}}
""":class:`BenchConfig` fields that do not apply to one gen run (left out of
``--print-config``)."""


@common.with_task
@with_flags(BenchConfig, *GEN_FLAGS)
def gen(
    ctx: typer.Context,
    rtl: Path = common.RTL_ARGUMENT,
    out: Path = typer.Option(..., "--out", file_okay=False, help="Output directory."),
    stimulus_length: int = typer.Option(200, "--stimulus-length", min=1,
                                        help="random policy: stimulus vectors (clock "
                                             "cycles) per testbench."),
    html: Path = report_opts.HTML,
    no_html: bool = typer.Option(False, "--no-html", help="Skip the HTML report (and the "
                                 "extra simulation of the best testbench it needs)."),
    lcov: Path = report_opts.LCOV,
    ucis: Path = report_opts.UCIS,
    trace: str = report_opts.TRACE,
    keep_workdir: bool = report_opts.KEEP_WORKDIR,
    exclude: Path = report_opts.EXCLUDE,
    show: bool = PRINT_CONFIG,
    task: Task | None = None,
    flags: dict | None = None,
) -> None:
    """Write a high-coverage testbench with the memoryless agent (N rounds).

    Writes OUT/tb.sv (best testbench), OUT/coverage.md, OUT/run.json and one JSON file
    per round under OUT/rounds/. Simulations run one at a time on --executor (a worker
    process, or a Ray task). Exit code 0 when the best testbench simulates, 1 when no
    round produced a passing simulation (or the model server or the workers failed),
    2 for bad input (also: the RTL does not compile on its own, found after the first
    testbench whose errors all lie in the RTL), 3 for toolchain problems.

    Example: llm4cov gen examples/traffic_fsm --out runs/traffic
    """
    settings = load(BenchConfig, flags=flags, base={"tasks": task.id})
    if show:
        print_config(settings.model_dump(exclude=GEN_UNUSED))
        return
    policy = get_policy(settings.model, settings.base_url, **(
        {"length": stimulus_length} if settings.model == "random" else {}))
    settings = common.sized_for_the_device(policy, settings, flags)
    request = report_opts.ReportRequest(None if no_html else html or out / "html", lcov, ucis,
                                        trace, keep_workdir, exclude)
    run = _run_agent(task, policy, settings, request, out)
    if run.best.testbench and request.needs_capture():
        with common.console.status("best testbench: simulating again for the coverage "
                                   "reports ..."):
            again = report_opts.produce(task, run.best.testbench,
                                        request.config(settings.sim_config()), request, out,
                                        title=f"Coverage: {task.id}, best testbench "
                                              f"(round {run.best_round + 1})",
                                        rtl_dir=common.given_rtl(ctx))
        if again.observation.coverage != run.best.observation.coverage:
            common.console.print("note: the reports' re-simulation measured other coverage "
                                 "than the scored round (a nondeterministic testbench?)")
    raise typer.Exit(_print_best(task, run, out))


def _run_agent(task: Task, policy: Policy, settings: BenchConfig,
               request: report_opts.ReportRequest, out: Path) -> AgentRun:
    """Run the agent (sample 0 of ``settings``) on one simulator with a live display;
    write the run into ``out``."""
    steps = out / "rounds" / ".step"
    steps.parent.mkdir(parents=True, exist_ok=True)
    sim = settings.sim
    sim_config = replace(request.config(sim.sim_config()), progress_file=str(steps.resolve()))
    sims = common.open_executor(sim.executor, 1, sim_config, sim.address)
    config = settings.agent_config(0)
    files = RoundFiles(out, task)
    with common.console.status(f"{task.id}: {policy.name} writing testbenches ...") as status:
        progress = RoundProgress(common.console, status, config.rounds, out, policy.name,
                                 steps, getattr(policy, "meter", None),
                                 common.runtime_unbuilt(sim_config))

        def on_round(record) -> None:
            files(record)
            progress.on_round(record)

        async def agent() -> AgentRun:
            with progress.ticking():
                return await arun_agent(task, policy, progress.wrap(guard(sims.simulate)), config,
                                        on_round)

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
