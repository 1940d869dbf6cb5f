"""``llm4cov gen``: run the memoryless agent on one repo and write the best testbench."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import typer

from llm4cov.agent.loop import AgentConfig, AgentRun, arun_agent
from llm4cov.cli import common, report_opts
from llm4cov.cli.round_progress import RoundProgress
from llm4cov.exec import ExecutorKind
from llm4cov.policies import SamplingParams, get_policy
from llm4cov.sim.report import coverage_markdown
from llm4cov.tasks.model import Task


def write_run(out: Path, task: Task, run: AgentRun) -> None:
    """Write the run: ``tb.sv`` (best testbench), ``rounds/round_<k>.json`` (every
    round's prompt, response, testbench and observation), ``run.json`` and
    ``coverage.md`` (human-readable summary of the best round).

    Rounds are numbered from 1 in every file, as on the console (``from_round`` 0 is
    the initial state, before any testbench); the agent's records count from 0."""
    (out / "rounds").mkdir(parents=True, exist_ok=True)
    for record in run.rounds:
        shown = record.model_copy(update={"round": record.round + 1,
                                          "from_round": record.from_round + 1})
        (out / "rounds" / f"round_{shown.round}.json").write_text(
            shown.model_dump_json(indent=2), encoding="utf-8"
        )
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


def gen(
    rtl: Path = typer.Argument(None, help="Directory of RTL (and spec) files."),
    out: Path = typer.Option(..., "--out", file_okay=False, help="Output directory."),
    tasks: Path = typer.Option(None, "--tasks", help="Task JSONL file (instead of a directory)."),
    task_id: str = typer.Option(None, "--id", help="Task id in --tasks."),
    top: str = typer.Option(None, "--top", help="DUT module when the RTL has several tops."),
    instance: str = typer.Option(None, "--instance", help="DUT instance name (default dut)."),
    model: str = typer.Option("random", "--model", help="'random' or a served model name."),
    base_url: str = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint URL."),
    rounds: int = typer.Option(3, "--rounds", min=1, help="Agent rounds (1 = direct)."),
    start_from: str = typer.Option("latest", "--start-from",
                                   help="Next round starts from the 'latest' or 'best' state."),
    temperature: float = typer.Option(0.7, min=0.0, help="Sampling temperature."),
    top_p: float = typer.Option(0.8, "--top-p", min=0.0, max=1.0, help="Nucleus sampling top-p."),
    max_tokens: int = typer.Option(8192, "--max-tokens", min=1, help="Max tokens per response."),
    sample_seed: int = typer.Option(0, "--sample-seed", help="Seed of the policy's sampling."),
    syntax_rules: bool = typer.Option(False, "--syntax-rules",
                                      help="Add the expert SystemVerilog rules to the prompt."),
    stimulus_length: int = typer.Option(200, "--stimulus-length", min=1,
                                        help="random policy: stimulus vectors (clock "
                                             "cycles) per testbench."),
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
    executor: ExecutorKind = common.EXECUTOR,
    address: str = common.ADDRESS,
    html: Path = report_opts.HTML,
    no_html: bool = typer.Option(False, "--no-html", help="Skip the HTML report (and the "
                                 "extra simulation of the best testbench it needs)."),
    lcov: Path = report_opts.LCOV,
    ucis: Path = report_opts.UCIS,
    trace: str = report_opts.TRACE,
    keep_workdir: bool = report_opts.KEEP_WORKDIR,
    exclude: Path = report_opts.EXCLUDE,
) -> None:
    """Write a high-coverage testbench with the memoryless agent (N rounds).

    Writes OUT/tb.sv (best testbench), OUT/coverage.md, OUT/run.json and one JSON file
    per round under OUT/rounds/. Simulations run one at a time on --executor (a worker
    process, or a Ray task). Exit code 0 when the best testbench simulates, 1 when no
    round produced a passing simulation (or the model server or the workers failed),
    2 for bad input, 3 for toolchain problems.

    Example: llm4cov gen examples/traffic_fsm --out runs/traffic
    """
    task = common.resolve_task(rtl, tasks, task_id, top, instance,
                               common.repo_options(incdir, define, filelist, param))
    if start_from not in ("latest", "best"):
        raise common.fail("--start-from must be 'latest' or 'best'")
    policy = get_policy(model, base_url,
                        **({"length": stimulus_length} if model == "random" else {}))
    request = report_opts.ReportRequest(None if no_html else html or out / "html", lcov, ucis,
                                        trace, keep_workdir, exclude)
    steps = out / "rounds" / ".step"
    steps.parent.mkdir(parents=True, exist_ok=True)
    sim_config = replace(request.config(
        common.sim_config(compile_timeout, run_timeout, seed, fsm, no_cache, no_sandbox)),
        progress_file=str(steps.resolve()))
    sims = common.open_executor(executor, 1, sim_config, address)
    config = AgentConfig(
        rounds=rounds,
        start_from=start_from,  # type: ignore[arg-type]
        params=SamplingParams(temperature=temperature, top_p=top_p, max_tokens=max_tokens),
        syntax_rules=syntax_rules,
        seed=sample_seed,
    )
    console = common.console

    with console.status(f"{task.id}: {policy.name} writing testbenches ...") as status:
        progress = RoundProgress(console, status, rounds, out, policy.name, steps)

        async def agent() -> AgentRun:
            with progress.ticking():
                return await arun_agent(task, policy, progress.wrap(sims.simulate), config,
                                        progress.on_round)

        try:
            run = asyncio.run(agent())
        finally:
            sims.close()
            steps.unlink(missing_ok=True)
        write_run(out, task, run)
        if run.best.testbench and request.needs_capture():
            status.update("best testbench: simulating again for the coverage reports ...")
            again = report_opts.produce(task, run.best.testbench,
                                        replace(sim_config, progress_file=None), request, out,
                                        title=f"Coverage: {task.id}, best testbench "
                                              f"(round {run.best_round + 1})", rtl_dir=rtl)
            if again.observation.coverage != run.best.observation.coverage:
                console.print("note: the reports' re-simulation measured other coverage "
                              "than the scored round (a nondeterministic testbench?)")
    best = run.best.observation
    met = "met" if best.meets(task.targets) else "not met"
    target = f", target {task.target_for():g}% {met}" if task.target_for() is not None else ""
    console.print(
        f"best: round {run.best_round + 1}, {best.status.value}, overall {best.overall():.2f}%"
        f"{target} -> {out / 'tb.sv' if run.best.testbench else 'no testbench in any response'}"
    )
    raise typer.Exit(0 if best.sim_pass else 1)


def register(app: typer.Typer) -> None:
    app.command("gen", short_help="Write a high-coverage testbench for one repo.")(gen)
