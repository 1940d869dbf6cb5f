"""Options and helpers shared by the CLI commands."""

from __future__ import annotations

import contextlib
import shlex
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import typer
from rich.console import Console

from llm4cov.cli.errors import FAILED, CliError, classify
from llm4cov.cli.options import Flag, flag, with_options
from llm4cov.exec import ExecutorKind, SimExecutor, get_executor
from llm4cov.sim.backends import open_backend
from llm4cov.sim.config import SimConfig
from llm4cov.tasks.hdl import module_decls
from llm4cov.tasks.loaders import filelist_root, load_tasks, task_from_dir
from llm4cov.tasks.model import Task, TaskError, is_identifier
from llm4cov.util.progress import NullProgress, RunProgress

console = Console(stderr=True)

SIM_FLAGS = {f.key: f for f in (
    flag("simulator", "--simulator"),
    flag("compile_timeout_s", "--compile-timeout", min=0.001),
    flag("run_timeout_s", "--run-timeout", min=0.001),
    flag("seed", "--seed"),
    flag("fsm", "--fsm/--no-fsm"),
    flag("executor", "--executor"),
    flag("address", "--address"),
    flag("workers", "--workers", min=1),
    flag("cache", "--cache/--no-cache"),
    flag("sandbox", "--sandbox/--no-sandbox"),
)}
"""The simulator flags: fields of :class:`~llm4cov.exec.settings.SimSettings`."""
EVALUATOR_FLAGS = tuple(f for key, f in SIM_FLAGS.items()
                        if key not in ("executor", "address", "workers"))
"""The simulator flags of a command that simulates in this process (``sim``, ``formal``)."""


def sim_flags(seed: str = "--seed") -> tuple[Flag, ...]:
    """The simulator flags of a command whose settings have a ``sim`` section;
    ``seed`` names the simulator seed's flag (bench: ``--sim-seed``)."""
    return tuple(replace(f, key=f"sim.{f.key}", decls=(seed,) if f.key == "seed" else f.decls)
                 for f in SIM_FLAGS.values())


CONFIG = typer.Option(None, "--config", help="YAML file of settings (see --print-config).")
SET = typer.Option(None, "--set", metavar="KEY=VALUE",
                   help="Override one setting, e.g. --set sim.workers=2 "
                   "(repeatable; values are YAML).")

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


QUIET = typer.Option(False, "--quiet", "-q", "--no-progress",
                     help="No progress display (for logs): only the final summary.")


def command_line(ctx: typer.Context, *words: str) -> str:
    """The invocation ``llm4cov WORDS ...`` as a command line: every option whose value
    is not its default, in the order the command declares them."""
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


def subcommand_invoked(ctx: typer.Context) -> bool:
    """Whether a subcommand of the group ``ctx`` runs (then the group's own body must
    not). The group's options given with a subcommand would be ignored silently, so
    they are refused.

    Raises:
        CliError: an option of the group was given on the command line (exit code 2).
    """
    if ctx.invoked_subcommand is None:
        return False
    given = [p.opts[0] for p in ctx.command.params if p.name and p.opts
             and ctx.get_parameter_source(p.name).name not in ("DEFAULT", "DEFAULT_MAP")]
    if given:
        raise fail(f"{', '.join(given)}: option(s) of `llm4cov {ctx.info_name}` do not "
                   f"apply to `{ctx.info_name} {ctx.invoked_subcommand}`; give "
                   f"`{ctx.info_name} {ctx.invoked_subcommand}`'s own options after it")
    return True


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


TASK_OPTIONS = {
    "tasks": (Path, typer.Option(None, "--tasks", help="Task JSONL file (instead of an RTL "
                                 "directory).")),
    "task_id": (str, typer.Option(None, "--id", help="Task id in --tasks.")),
    "top": (str, typer.Option(None, "--top", help="DUT module when the RTL has several "
                              "tops.")),
    "instance": (str, typer.Option(None, "--instance", help="Required DUT instance name "
                                   "(default: dut; with an RTL directory only).")),
    "incdir": (list[Path], INCDIR),
    "define": (list[str], DEFINE),
    "filelist": (Path, FILELIST),
    "param": (list[str], PARAM),
}
"""The options that name one task (with the command's ``rtl`` directory)."""


def _task_of(ctx: typer.Context, values: dict) -> Task | None:
    if ctx.invoked_subcommand is not None:
        return None
    return resolve_task(ctx.params.get("rtl"), values["tasks"], values["task_id"],
                        values["top"], values["instance"],
                        repo_options(values["incdir"], values["define"], values["filelist"],
                                     values["param"]))


with_task = with_options("task", TASK_OPTIONS, _task_of)
"""Add :data:`TASK_OPTIONS` to a command that takes ``ctx``, ``rtl`` and ``task``; the
command gets the task they name (:func:`resolve_task`; None when a subcommand runs).

Raises (when the command runs):
    CliError, TaskError, OSError: the input is unusable (exit 2).
"""


def open_executor(kind: ExecutorKind, workers: int | None, config: SimConfig,
                  address: str | None) -> SimExecutor:
    """The executor of ``--executor``/``--workers``/``--address``, once the simulator
    ``config.backend`` names is found here and supports ``config``.

    Raises:
        UnknownBackend, UnsupportedOption: bad ``--simulator`` or option (exit 2).
        ToolchainError: the toolchain is missing (exit 3).
        ExecutorError: the executor cannot be set up (Ray not installed, no cluster at
            the address, ...; exit 2).
    """
    open_backend(config)
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
