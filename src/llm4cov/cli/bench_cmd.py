"""``llm4cov bench``: the CVDP-ECov benchmark (Sim Pass, Cov Pass, Avg Cov, pass@k).

``llm4cov bench --tasks FILE ...`` runs (or resumes) a benchmark into a run directory;
``llm4cov bench report RUN_DIR`` re-scores a run directory from its saved results.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import typer

from llm4cov.bench import session
from llm4cov.bench.config import BenchConfig
from llm4cov.bench.metrics import Estimator
from llm4cov.bench.report import tables
from llm4cov.cli import common
from llm4cov.cli.options import PRINT_CONFIG, flag, print_config, switch, with_flags
from llm4cov.util.jsonl import iter_jsonl
from llm4cov.util.settings import load

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


BENCH_FLAGS = (
    flag("tasks"),
    flag("model"),
    flag("base_url"),
    flag("mode"),
    flag("rounds", min=1),
    flag("samples", min=1),
    flag("baselines", comma_list=True),
    flag("temperature", min=0.0),
    flag("top_p", min=0.0, max=1.0),
    flag("max_tokens", min=1),
    flag("seed"),
    flag("start_from"),
    switch("syntax_rules"),
    switch("stop_at_full_coverage"),
    flag("ids", "--id"),
    flag("limit", min=1),
    *common.sim_flags(seed="--sim-seed"),
    flag("max_concurrency", min=1),
    flag("max_samples", min=0),
    flag("max_sim_calls", min=0),
    flag("max_total_tokens", min=0),
    switch("retry_tool_errors"),
)
"""The flags of ``llm4cov bench``: fields of :class:`BenchConfig`, in the order of
:meth:`BenchConfig.command`."""


@bench_app.callback(invoke_without_command=True)
@with_flags(BenchConfig, *BENCH_FLAGS)
def bench(
    ctx: typer.Context,
    config_file: Path = common.CONFIG,
    overrides: list[str] = common.SET,
    out: Path = typer.Option(None, "--out", file_okay=False, help="Run directory (default: "
                             "runs/bench/<tasks stem>/<model>-<mode>-n<samples>)."),
    estimator: str = ESTIMATOR,
    plots: bool = PLOTS,
    quiet: bool = common.QUIET,
    coverage_html: bool = typer.Option(
        False, "--coverage-html", help="Also write the annotated coverage report of each "
        "task's best testbench (one more simulation per task), linked from report.html."),
    show: bool = PRINT_CONFIG,
    flags: dict | None = None,
) -> None:
    """Benchmark a model in the CVDP-ECov protocol, with random and reference baselines.

    Per task, --samples independent samples of --rounds memoryless agent rounds (1 in
    direct mode); rows go to OUT/results.jsonl as they finish, and rerunning the same
    command resumes. Writes OUT/summary.json, OUT/summary.md (paste-ready tables) and
    OUT/report.html (plots). Settings: defaults < --config YAML < --set < flags. Exit
    code 0 when the run ends (complete or stopped by a budget), 1 on a model-server
    failure or lost workers, 2 for bad input, 3 for toolchain problems.

    \b
    Examples:
      llm4cov bench --tasks ../shared/benchmarks/rtllm.jsonl --samples 5
      llm4cov bench --tasks cvdp_ecov.jsonl --model Qwen/Qwen3-4B \\
          --base-url http://localhost:8000/v1
      llm4cov bench --tasks cvdp_ecov.jsonl --executor ray --address auto \\
          --max-concurrency 256
      llm4cov bench --config bench.yaml --set sim.workers=4 --print-config
      llm4cov bench report runs/bench/rtllm/random-agentic-n5
    """
    if common.subcommand_invoked(ctx):
        return
    if config_file is None and "tasks" not in (flags or {}) and not any(
            o.partition("=")[0].strip() == "tasks" for o in overrides or []):
        raise common.fail("--tasks FILE is required (or use: llm4cov bench report RUN_DIR)")
    config = load(BenchConfig, config_file, overrides or [], flags)
    if show:
        print_config(config)
        return
    est = _estimator(estimator)
    _run(config, out or default_out(config), est, plots, quiet, coverage_html)


def _run(config: BenchConfig, run_dir: Path, est: Estimator, plots: bool, quiet: bool,
         coverage_html: bool) -> None:
    """Run (or resume) ``config`` into ``run_dir`` and print the headline table."""
    tasks = Path(config.tasks)
    with common.reading(tasks):
        selected = session.select_tasks(config)
    common.check_tasks(selected, tasks)
    with common.resumable("finished rows are saved"), common.progress(quiet) as display:
        summary = session.run(config, selected, run_dir, est, display, plots)
    if coverage_html:
        from llm4cov.report.bench_links import write_task_reports

        with common.console.status("coverage reports of the best testbenches ..."):
            write_task_reports(run_dir, selected, iter_jsonl(run_dir / session.RESULTS_FILE),
                               config.sim_config())
        session.write_reports(run_dir, est, plots)
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
    summary = session.write_reports(run_dir, _estimator(estimator), plots)
    _print_results(summary, run_dir)


def _run_and_arm(spec: str) -> tuple[Path, str | None]:
    """``RUN_DIR`` and ``ARM`` of ``RUN_DIR[:ARM]``: the shortest prefix before a colon
    that is a run directory (arm names hold colons: ``direct:local:runs/x``)."""
    if (Path(spec) / "summary.json").is_file():
        return Path(spec), None
    for colon in (m.start() for m in re.finditer(":", spec)):
        if (Path(spec[:colon]) / "summary.json").is_file():
            return Path(spec[:colon]), spec[colon + 1:]
    return Path(spec), None


@bench_app.command("compare")
def compare(
    runs: list[str] = typer.Argument(..., help="Bench run directories, each optionally "
                                     "RUN_DIR:ARM (default: the run's model arm), and "
                                     "@rN for the state after round N of an agentic run."),
) -> None:
    """Intervals (Wilson, bootstrap) of each arm and paired tests against the first.

    Prints one Markdown table: Sim Pass, Cov Pass and Avg Cov with 95% intervals, then for
    every arm after the first the paired bootstrap of the Avg Cov difference and sign tests
    on the tasks whose outcome differs (bench/compare.py). Examples:
    llm4cov bench compare runs/base-direct runs/stage0-direct runs/stage0-direct:random;
    llm4cov bench compare runs/stage0-agentic@r1 runs/stage0-agentic (direct vs 3 rounds)
    """
    from llm4cov.bench.compare import arm_stats, markdown_table, pick_arm

    labels, arms = [], []
    for spec in runs:
        after = re.search(r"@r(\d+)$", spec)
        spec = spec[:after.start()] if after else spec
        path, arm = _run_and_arm(spec)
        if not (path / "summary.json").is_file():
            raise common.fail(f"{path}: no summary.json (run llm4cov bench report on it)")
        summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
        name = pick_arm(summary, arm)
        labels.append(f"{path.name}:{name}" + (after.group(0) if after else ""))
        try:
            arms.append(arm_stats(summary["arms"][name],
                                  after_round=int(after.group(1)) if after else None))
        except ValueError as exc:
            raise common.fail(f"{spec}: {exc}") from exc
    typer.echo(markdown_table(labels, arms))


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench", short_help="Benchmark a model (CVDP-ECov protocol).")
