"""``llm4cov bench``: the CVDP-ECov benchmark (Sim Pass, Cov Pass, Avg Cov, pass@k).

``llm4cov bench --tasks FILE ...`` runs (or resumes) a benchmark into a run directory;
``llm4cov bench report RUN_DIR`` re-scores a run directory from its saved results.
"""

from __future__ import annotations

import re
from pathlib import Path

import typer

from llm4cov.bench import pipeline
from llm4cov.bench.config import BASELINES, BenchConfig, Mode
from llm4cov.bench.metrics import Estimator
from llm4cov.bench.report import tables
from llm4cov.cli import common
from llm4cov.exec.base import ExecutorKind
from llm4cov.util.jsonl import iter_jsonl

bench_app = typer.Typer(no_args_is_help=False, add_completion=False)

ESTIMATOR = typer.Option(Estimator.UNBIASED.value, "--pass-k-estimator",
                         help="pass@k estimator: 'unbiased' (Chen et al. 2021, "
                              "1-C(n-c,k)/C(n,k)) or 'cvdp' (CVDP run_samples.py, 1-(1-c/n)^k).")
PLOTS = typer.Option(True, "--plots/--no-plots", help="Write report.html with plots.")


def default_out(config: BenchConfig) -> Path:
    """``runs/bench/<tasks file stem>/<model>-<mode>-n<samples>``: the same command
    resumes the same directory."""
    model = re.sub(r"[^\w.-]+", "_", config.model)
    return Path("runs/bench") / Path(config.tasks).stem / f"{model}-{config.mode}-n{config.samples}"


def _estimator(name: str) -> Estimator:
    try:
        return Estimator(name)
    except ValueError as exc:
        raise common.fail(f"--pass-k-estimator must be one of "
                          f"{', '.join(e.value for e in Estimator)}") from exc


def _print_results(summary: dict, out: Path) -> None:
    main = tables(summary)[0]
    typer.echo("| " + " | ".join(main.header) + " |")
    for row in main.rows:
        typer.echo("| " + " | ".join(row) + " |")
    state = "complete" if summary["complete"] else "INCOMPLETE (rerun the command to resume)"
    common.console.print(f"{state}; reports in {out}/summary.md and {out}/report.html")


@bench_app.callback(invoke_without_command=True)
def bench(
    ctx: typer.Context,
    tasks: Path = typer.Option(None, "--tasks", help="Task JSONL: our schema, raw CVDP "
                               "(cid012 records) or CVDP-ECov; detected from the content."),
    model: str = typer.Option("random", "--model", help="'random' or a served model name."),
    base_url: str = typer.Option(None, "--base-url", help="OpenAI-compatible endpoint URL."),
    mode: Mode = typer.Option(Mode.AGENTIC.value, "--mode",
                              help="agentic (--rounds rounds with feedback) or direct (1)."),
    rounds: int = typer.Option(3, "--rounds", min=1, help="Rounds per sample in agentic mode."),
    samples: int = typer.Option(5, "--samples", min=1, help="Independent samples per task (n)."),
    baselines: str = typer.Option(",".join(BASELINES), "--baselines",
                                  help="Comma-separated baseline rows: random, reference "
                                       "(hidden reference testbench); '' for none."),
    temperature: float = typer.Option(0.7, min=0.0, help="Sampling temperature."),
    top_p: float = typer.Option(0.8, "--top-p", min=0.0, max=1.0, help="Nucleus sampling top-p."),
    max_tokens: int = typer.Option(8192, "--max-tokens", min=1, help="Max tokens per response."),
    seed: int = typer.Option(0, "--seed", help="Policy seed; sample s uses seed + 1000*s."),
    start_from: str = typer.Option("latest", "--start-from",
                                   help="Next round starts from the 'latest' or 'best' state."),
    syntax_rules: bool = typer.Option(False, "--syntax-rules/--no-syntax-rules",
                                      help="Add the expert SystemVerilog rules to prompts."),
    stop_at_full: bool = typer.Option(True, "--stop-at-full-coverage/--no-stop-at-full-coverage",
                                      help="End a sample once a round reaches 100%."),
    ids: list[str] = typer.Option(None, "--id", help="Only this task id (repeatable)."),
    limit: int = typer.Option(None, "--limit", min=1, help="Only the first N tasks."),
    compile_timeout: float = common.COMPILE_TIMEOUT,
    run_timeout: float = common.RUN_TIMEOUT,
    sim_seed: int = typer.Option(1, "--sim-seed", help="Simulator seed (+verilator+seed)."),
    fsm: bool = common.FSM,
    no_cache: bool = common.NO_CACHE,
    no_sandbox: bool = common.NO_SANDBOX,
    executor: ExecutorKind = common.EXECUTOR,
    address: str = common.ADDRESS,
    workers: int = common.WORKERS,
    max_concurrency: int = typer.Option(16, "--max-concurrency", min=1,
                                        help="Samples in flight = max concurrent LLM requests."),
    max_samples: int = typer.Option(None, "--max-samples", min=0,
                                    help="Budget: sample trajectories in the run directory."),
    max_sim_calls: int = typer.Option(None, "--max-sim-calls", min=0,
                                      help="Budget: simulator calls in the run directory."),
    max_total_tokens: int = typer.Option(None, "--max-total-tokens", min=0,
                                         help="Budget: model tokens (prompt + completion)."),
    out: Path = typer.Option(None, "--out", file_okay=False, help="Run directory (default: "
                             "runs/bench/<tasks stem>/<model>-<mode>-n<samples>)."),
    estimator: str = ESTIMATOR,
    plots: bool = PLOTS,
    quiet: bool = common.QUIET,
    coverage_html: bool = typer.Option(
        False, "--coverage-html", help="Also write the annotated coverage report of each "
        "task's best testbench (one more simulation per task), linked from report.html."),
) -> None:
    """Benchmark a model in the CVDP-ECov protocol, with random and reference baselines.

    Per task, --samples independent samples of --rounds memoryless agent rounds (1 in
    direct mode); rows go to OUT/results.jsonl as they finish, and rerunning the same
    command resumes. Writes OUT/summary.json, OUT/summary.md (paste-ready tables) and
    OUT/report.html (plots). Exit code 0 when the run ends (complete or stopped by a
    budget), 1 on a model-server failure or lost workers, 2 for bad input, 3 for
    toolchain problems.

    \b
    Examples:
      llm4cov bench --tasks ../shared/benchmarks/rtllm.jsonl --samples 5
      llm4cov bench --tasks cvdp_ecov.jsonl --model Qwen/Qwen3-4B \\
          --base-url http://localhost:8000/v1
      llm4cov bench --tasks cvdp_ecov.jsonl --executor ray --address auto \\
          --max-concurrency 256
      llm4cov bench report runs/bench/rtllm/random-agentic-n5
    """
    if ctx.invoked_subcommand is not None:
        return
    if tasks is None:
        raise common.fail("--tasks FILE is required (or use: llm4cov bench report RUN_DIR)")
    config = BenchConfig(
        tasks=str(tasks), model=model, base_url=base_url, mode=mode, rounds=rounds,
        samples=samples, baselines=tuple(b for b in baselines.split(",") if b.strip()),
        temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed,
        start_from=start_from, syntax_rules=syntax_rules, stop_at_full_coverage=stop_at_full,
        ids=tuple(ids or ()), limit=limit, compile_timeout_s=compile_timeout,
        run_timeout_s=run_timeout, sim_seed=sim_seed, fsm=fsm, executor=executor,
        address=address, workers=workers, cache=not no_cache, sandbox=not no_sandbox,
        max_concurrency=max_concurrency, max_samples=max_samples,
        max_sim_calls=max_sim_calls, max_total_tokens=max_total_tokens,
    )
    est = _estimator(estimator)
    run_dir = out or default_out(config)
    with common.reading(tasks):
        selected = pipeline.select_tasks(config)
    common.check_tasks(selected, tasks)
    with common.resumable("finished rows are saved"), common.progress(quiet) as display:
        summary = pipeline.run(config, selected, run_dir, est, display, plots)
    if coverage_html:
        from llm4cov.report.bench_links import write_task_reports

        with common.console.status("coverage reports of the best testbenches ..."):
            write_task_reports(run_dir, selected, iter_jsonl(run_dir / pipeline.RESULTS_FILE),
                               config.sim_config())
        pipeline.write_reports(run_dir, est, plots)
    _print_results(summary, run_dir)


@bench_app.command("report")
def report(
    run_dir: Path = typer.Argument(..., help="A bench run directory (holds run.json)."),
    estimator: str = ESTIMATOR,
    plots: bool = PLOTS,
) -> None:
    """Re-score a run directory from run.json and results.jsonl (no simulation).

    Rewrites summary.json, summary.md and report.html. Example:
    llm4cov bench report runs/bench/rtllm/random-agentic-n5 --pass-k-estimator cvdp
    """
    summary = pipeline.write_reports(run_dir, _estimator(estimator), plots)
    _print_results(summary, run_dir)


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench", short_help="Benchmark a model (CVDP-ECov protocol).")
