"""Options and helpers shared by the CLI commands."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from llm4cov.bench.progress import NullProgress, RunProgress
from llm4cov.exec.base import ExecutorError, ExecutorKind, SimExecutor, get_executor
from llm4cov.sim.config import SimConfig
from llm4cov.sim.toolchain import ToolchainError, find_toolchain
from llm4cov.tasks.loaders import load_tasks, task_from_dir
from llm4cov.tasks.model import Task, TaskError

console = Console(stderr=True)

COMPILE_TIMEOUT = typer.Option(300.0, help="Compile wall-clock limit, seconds.")
RUN_TIMEOUT = typer.Option(60.0, help="Run wall-clock limit, seconds.")
SEED = typer.Option(1, help="Simulator seed (+verilator+seed).")
FSM = typer.Option(False, "--fsm/--no-fsm", help="Also collect FSM coverage (opt-in).")
NO_CACHE = typer.Option(
    False, "--no-cache",
    help="Always simulate: do not read or write the result cache (~/.cache/llm4cov, or "
         "$LLM4COV_CACHE_DIR).",
)

EXECUTOR = typer.Option(ExecutorKind.LOCAL.value, "--executor",
                        help="Where simulations run: local (process pool) or ray (Ray tasks, "
                             "docs/scale.md).")
ADDRESS = typer.Option(None, "--address", help="Ray cluster to join: auto or HOST:PORT "
                       "(default: start a local Ray instance). Needs --executor ray.")
WORKERS = typer.Option(None, "--workers", min=1,
                       help="Parallel simulations: local processes (default: CPU count) or "
                            "Ray tasks in flight (default: the cluster's CPUs).")
QUIET = typer.Option(False, "--quiet", "-q", "--no-progress",
                     help="No progress display (for logs): only the final summary.")


def sim_config(
    compile_timeout: float, run_timeout: float, seed: int, fsm: bool, no_cache: bool = False
) -> SimConfig:
    """A :class:`SimConfig` from the shared CLI options."""
    return SimConfig(
        compile_timeout_s=compile_timeout, run_timeout_s=run_timeout, seed=seed,
        fsm_coverage=fsm, result_cache=not no_cache,
    )


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print ``message`` as an error and return the Exit to raise."""
    console.print(f"[red]error:[/red] {message}")
    return typer.Exit(code)


def resolve_task(
    rtl: Path | None,
    tasks: Path | None,
    task_id: str | None,
    top: str | None,
    instance: str | None,
) -> Task:
    """The task named by the CLI: an RTL directory or ``--tasks FILE --id ID``.

    Raises:
        typer.Exit: (code 2) with a clear message when the input is unusable.
    """
    try:
        if tasks is not None:
            if not task_id:
                raise fail("--tasks needs --id")
            if instance or top:
                raise fail("--top/--instance apply to an RTL directory, not to --tasks")
            return load_tasks(tasks, [task_id])[0]
        if rtl is None:
            raise fail("give an RTL directory or --tasks FILE --id ID")
        return task_from_dir(rtl, top=top, instance=instance or "dut")
    except (TaskError, OSError) as exc:
        raise fail(str(exc)) from exc


def open_executor(kind: ExecutorKind, workers: int | None, config: SimConfig,
                  address: str | None) -> SimExecutor:
    """The executor of ``--executor``/``--workers``/``--address``, once the simulator
    toolchain is found here.

    Raises:
        typer.Exit: code 3 when the toolchain is missing, 2 when the executor cannot be
            set up (Ray not installed, no cluster at the address, ...).
    """
    try:
        find_toolchain()
        return get_executor(kind, workers, config, address)
    except ToolchainError as exc:
        raise fail(f"simulator toolchain: {exc}", code=3) from exc
    except ExecutorError as exc:
        raise fail(str(exc)) from exc


def progress(quiet: bool) -> RunProgress | NullProgress:
    """The progress display of a long command: none with ``--quiet``, a live display on
    a terminal, a status line every 30 s in logs."""
    return NullProgress() if quiet else RunProgress(console)


def evaluator_or_exit(config: SimConfig):
    """An :class:`Evaluator`, or exit 3 with the toolchain problem (infrastructure)."""
    from llm4cov.sim.evaluator import Evaluator

    try:
        return Evaluator(config)
    except ToolchainError as exc:
        raise fail(f"simulator toolchain: {exc}", code=3) from exc
