"""Options and helpers shared by the CLI commands."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import typer
from rich.console import Console

from llm4cov.bench.progress import NullProgress, RunProgress
from llm4cov.cli.errors import FAILED, CliError, classify
from llm4cov.exec.base import ExecutorKind, SimExecutor, get_executor
from llm4cov.sim.config import SimConfig
from llm4cov.sim.toolchain import find_toolchain
from llm4cov.tasks.hdl import module_decls
from llm4cov.tasks.loaders import filelist_root, load_tasks, task_from_dir
from llm4cov.tasks.model import Task, TaskError, is_identifier

console = Console(stderr=True)

COMPILE_TIMEOUT = typer.Option(300.0, min=0.001, help="Compile wall-clock limit, seconds (> 0).")
RUN_TIMEOUT = typer.Option(60.0, min=0.001, help="Run wall-clock limit, seconds (> 0).")
SEED = typer.Option(1, help="Simulator seed (+verilator+seed).")
FSM = typer.Option(False, "--fsm/--no-fsm", help="Also collect FSM coverage (opt-in).")
NO_CACHE = typer.Option(
    False, "--no-cache",
    help="Always simulate: do not read or write the result cache (~/.cache/llm4cov, or "
         "$LLM4COV_CACHE_DIR).",
)

INCDIR = typer.Option(None, "--incdir", help="Extra `include directory, relative to the RTL "
                      "directory (repeatable).")
DEFINE = typer.Option(None, "--define", help="Macro NAME[=VALUE] for the RTL and the "
                      "testbench (repeatable; Verilator +define+).")
FILELIST = typer.Option(None, "-f", "--filelist", help="Verilator/VCS filelist (+incdir+, "
                        "+define+, -y/-v, -f; paths relative to the list): the RTL is what "
                        "it compiles; every file must lie below the RTL directory (default: the "
                        "list's own folder).")
PARAM = typer.Option(None, "--param", help="DUT parameter override NAME=VALUE (repeatable; "
                     "Verilator -G on a testbench top that declares it).")


def repo_options(incdir: list[Path] | None, define: list[str] | None,
                 filelist: Path | None, param: list[str] | None) -> dict:
    """The build options of ``--incdir/--define/-f/--param`` as ``task_from_dir`` keywords.

    Raises:
        TaskError: a ``--define``/``--param`` without a name.
    """
    from llm4cov.tasks.filelist import parse_assignments

    for item in param or []:
        if "=" not in item:
            raise fail(f"--param {item!r}: expected NAME=VALUE")
    return {
        "include_dirs": list(incdir or []),
        "defines": parse_assignments(define or [], "--define"),
        "parameters": parse_assignments(param or [], "--param"),
        "filelist": filelist,
    }


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


NO_SANDBOX = typer.Option(
    False, "--no-sandbox",
    help="Build and run simulations without the OS sandbox (bubblewrap): for trusted "
         "testbenches only, e.g. where user namespaces are forbidden. Every observation "
         "says so.",
)


def sim_config(
    compile_timeout: float, run_timeout: float, seed: int, fsm: bool, no_cache: bool = False,
    no_sandbox: bool = False,
) -> SimConfig:
    """A :class:`SimConfig` from the shared CLI options."""
    return SimConfig(
        compile_timeout_s=compile_timeout, run_timeout_s=run_timeout, seed=seed,
        fsm_coverage=fsm, result_cache=not no_cache, sandbox=not no_sandbox,
    )


def fail(message: str, code: int = 2) -> CliError:
    """The error to raise for ``message``: ``main`` prints it as one line and exits with
    ``code`` (2 bad input, 1 failed, 3 toolchain; see :mod:`llm4cov.cli.errors`)."""
    return CliError(message, code)


@contextlib.contextmanager
def resumable(saved: str) -> Iterator[None]:
    """Around a resumable job: an interrupt exits 130 saying that ``saved`` (e.g.
    "finished rows are saved") and a rerun resumes; a failed job's one-line error says
    the same."""
    try:
        yield
    except KeyboardInterrupt:
        console.print(f"interrupted: {saved}; rerun the same command to resume")
        raise typer.Exit(130) from None
    except Exception as exc:
        if classify(exc)[0] == FAILED:
            exc.add_note(f"({saved}; rerun to resume)")
        raise


@contextlib.contextmanager
def reading(path: Path) -> Iterator[None]:
    """Around reading the input file ``path``: text that is not UTF-8 is a TaskError
    naming the file and the first bad byte."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise TaskError(f"{path}: not UTF-8 text (byte {exc.start})") from exc


def check_tasks(tasks: Sequence[Task], source: Path) -> None:
    """Bad input that would only show up as failed simulations: an id that appears more
    than once, a ``dut_module_name`` that no RTL file declares.

    Raises:
        TaskError: naming ``source`` and the task.
    """
    repeated = sorted(i for i, n in Counter(t.id for t in tasks).items() if n > 1)
    if repeated:
        raise TaskError(f"{source}: duplicate task id {', '.join(repeated)}")
    for task in tasks:
        declared = {d.name for d in module_decls(task.rtl_files, task.include_dirs,
                                                 task.defines)}
        if task.dut_module_name not in declared:
            raise TaskError(f"{source}: task {task.id}: dut_module_name "
                            f"{task.dut_module_name!r} is not declared in its RTL files")


def resolve_task(
    rtl: Path | None,
    tasks: Path | None,
    task_id: str | None,
    top: str | None,
    instance: str | None,
    repo: dict | None = None,
) -> Task:
    """The task named by the CLI: an RTL directory (with the :func:`repo_options`
    ``repo``) or ``--tasks FILE --id ID``.

    Raises:
        CliError, TaskError, OSError: the input is unusable (exit 2).
    """
    if instance is not None and not is_identifier(instance):
        raise fail(f"--instance {instance!r} is not a SystemVerilog identifier")
    if tasks is not None:
        if rtl is not None:
            raise fail("give either an RTL directory or --tasks FILE --id ID, not both")
        if not task_id:
            raise fail("--tasks needs --id")
        if instance or top:
            raise fail("--top/--instance apply to an RTL directory, not to --tasks")
        if any((repo or {}).values()):
            raise fail("--incdir/--define/-f/--param apply to an RTL directory, not to "
                       "--tasks (a task row has include_dirs, defines, parameters)")
        with reading(tasks):
            selected = load_tasks(tasks, [task_id])
        check_tasks(selected, tasks)
        return selected[0]
    if rtl is None and (repo or {}).get("filelist"):
        rtl = filelist_root(repo["filelist"])
    if rtl is None:
        raise fail("give an RTL directory or --tasks FILE --id ID")
    return task_from_dir(rtl, top=top, instance=instance or "dut", **(repo or {}))


def open_executor(kind: ExecutorKind, workers: int | None, config: SimConfig,
                  address: str | None) -> SimExecutor:
    """The executor of ``--executor``/``--workers``/``--address``, once the simulator
    toolchain is found here.

    Raises:
        ToolchainError: the toolchain is missing (exit 3).
        ExecutorError: the executor cannot be set up (Ray not installed, no cluster at
            the address, ...; exit 2).
    """
    find_toolchain()
    return get_executor(kind, workers, config, address)


def progress(quiet: bool) -> RunProgress | NullProgress:
    """The progress display of a long command: none with ``--quiet``, a live display on
    a terminal, a status line every 30 s in logs."""
    return NullProgress() if quiet else RunProgress(console)


def evaluator(config: SimConfig):
    """An :class:`Evaluator`.

    Raises:
        ToolchainError: the simulator toolchain is missing (exit 3).
    """
    from llm4cov.sim.evaluator import Evaluator

    return Evaluator(config)
