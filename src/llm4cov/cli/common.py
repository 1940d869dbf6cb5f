"""Options and helpers shared by the CLI commands."""

from __future__ import annotations

import contextlib
import shlex
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from llm4cov.cli import interrupt
from llm4cov.cli.errors import FAILED, CliError, classify
from llm4cov.cli.options import Flag, flag, parameter_source, switch, with_options
from llm4cov.sim.backends import open_backend
from llm4cov.sim.config import SimConfig
from llm4cov.tasks.hdl import ParseBoundError, check_bounded_many, module_decls, search_dirs
from llm4cov.tasks.layout import Exclusions
from llm4cov.tasks.loaders import filelist_root, load_tasks, task_from_paths
from llm4cov.tasks.model import Task, TaskError, is_identifier
from llm4cov.util.progress import NullProgress, RunProgress, TerminalConsole

if TYPE_CHECKING:
    from llm4cov.bench.config import BenchConfig
    from llm4cov.exec import ExecutorKind, SimExecutor
    from llm4cov.policies import Policy

console = TerminalConsole(stderr=True)

SIM_FLAGS = {f.key: f for f in (
    flag("simulator"), flag("compile_timeout_s", "--compile-timeout", min=0.001),
    flag("run_timeout_s", "--run-timeout", min=0.001), flag("seed"), switch("fsm"), flag("cxx"),
    flag("executor"), flag("address"), flag("workers", min=1), switch("cache"),
    switch("sandbox"),
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
                      "directory (repeatable); one outside it is read for included files "
                      "only.")
DEFINE = typer.Option(None, "--define", help="Macro NAME[=VALUE] for the RTL and the "
                      "testbench (repeatable; Verilator +define+).")
FILELIST = typer.Option(None, "-f", "--filelist", help="Verilator/VCS filelist (+incdir+, "
                        "+define+, -y/-v, -f; paths relative to the list) or Bender.yml: "
                        "the RTL is what it compiles; every file must lie below the RTL "
                        "directory (default: the list's own folder).")
EXCLUDE_DIR = typer.Option(None, "--exclude-dir", metavar="GLOB", help="Leave out of the "
                           "RTL directory the folders (name or relative path) or files "
                           "(relative path) matching GLOB (repeatable).")
DEFAULT_EXCLUDES = typer.Option(True, "--default-excludes/--no-default-excludes",
                                help="Leave out test/tb/sim/verification folders and "
                                "files that are testbenches of their own (a module "
                                "without ports instantiating the design).")
TARGET = typer.Option(None, "--target", metavar="NAME", help="Bender target to activate besides "
                      "simulation and verilator (repeatable; with -f Bender.yml).")
PARAM = typer.Option(None, "--param", help="DUT parameter override NAME=VALUE (repeatable; "
                     "Verilator -G on a testbench top that declares it).")


REPO_FLAGS = {"include_dirs": "--incdir", "defines": "--define", "parameters": "--param",
              "filelist": "-f", "targets": "--target"}
"""The :func:`repo_options` keys given by a flag of their own (for error messages)."""


def repo_options(incdir: list[Path] | None, define: list[str] | None,
                 filelist: Path | None, param: list[str] | None,
                 exclude_dir: list[str] | None = None, default_excludes: bool = True,
                 target: list[str] | None = None) -> dict:
    """The build and layout options (``--incdir/--define/-f/--param/--exclude-dir/
    --no-default-excludes/--target``) as ``task_from_paths`` keywords.

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
        "exclude": Exclusions(tuple(exclude_dir or ()), default_excludes),
        "targets": list(target or []),
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
             and parameter_source(ctx, p.name) not in ("DEFAULT", "DEFAULT_MAP")]
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
    with interrupt.explained(lambda: f"interrupted: {saved}; rerun the same command to "
                             "resume"):
        try:
            yield
        except KeyboardInterrupt:
            interrupt.say_why()
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
    # the RTL's parses in this process are bounded: one child checks every task's first
    sets = [(t.rtl_files, search_dirs(t.rtl_files, t.include_dirs), t.defines,
             t.compile_files) for t in tasks]
    with contextlib.suppress(ParseBoundError):  # named per task below
        check_bounded_many(sets)
    for task, one in zip(tasks, sets, strict=True):
        try:
            check_bounded_many([one])
        except ParseBoundError as exc:
            raise TaskError(f"{source}: task {task.id}: {exc}") from None
        declared = {d.name for d in module_decls(task.rtl_files, task.include_dirs,
                                                 task.defines, task.compile_files)}
        if task.dut_module_name not in declared:
            raise TaskError(f"{source}: task {task.id}: dut_module_name "
                            f"{task.dut_module_name!r} is not declared in its RTL files")


def resolve_task(
    rtl: Path | Sequence[Path] | None,
    tasks: Path | None,
    task_id: str | None,
    top: str | None,
    instance: str | None,
    repo: dict | None = None,
) -> Task:
    """The task named by the CLI: an RTL directory or RTL files (with the
    :func:`repo_options` ``repo``), or ``--tasks FILE --id ID``. The loader's notes
    (what was left out of the directory, ...) are printed, one line each.

    Raises:
        CliError, TaskError, OSError: the input is unusable (exit 2).
    """
    paths = [rtl] if isinstance(rtl, Path) else list(rtl or [])
    repo = repo or {}
    if instance is not None and not is_identifier(instance):
        raise fail(f"--instance {instance!r} is not a SystemVerilog identifier")
    if tasks is not None:
        if paths:
            raise fail("give either an RTL directory or --tasks FILE --id ID, not both")
        if not task_id:
            raise fail("--tasks needs --id")
        if instance or top:
            raise fail("--top/--instance apply to an RTL directory, not to --tasks")
        given = [flag for key, flag in REPO_FLAGS.items() if repo.get(key)]
        if given or repo.get("exclude", Exclusions()) != Exclusions():
            raise fail("--incdir/--define/-f/--param/--exclude-dir/--target apply to an RTL "
                       "directory, not to --tasks (a task row has include_dirs, defines, "
                       "parameters)")
        with reading(tasks):
            selected = load_tasks(tasks, [task_id])
        check_tasks(selected, tasks)
        return selected[0]
    if not paths and repo.get("filelist"):
        paths = [filelist_root(repo["filelist"])]
    if not paths:
        raise fail("give an RTL directory or --tasks FILE --id ID")
    task = task_from_paths(paths, top=top, instance=instance or "dut", **repo)
    for note in task.meta.get("notes", []):
        console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    return task


def rtl_root(task: Task) -> Path | None:
    """The folder that the names of a loaded task's RTL files are relative to (None for
    a task of a JSONL file, whatever its row says: :attr:`Task.root`)."""
    return Path(task.root) if task.root else None


RTL_ARGUMENT = typer.Argument(None, metavar="RTL...", show_default=False,
                              help="Directory of RTL (and spec) files, or RTL files "
                                   "(compiled in this order); the same as --rtl.")
"""The positional RTL of ``sim``, ``gen`` and ``formal`` (``--rtl``, repeatable, is the
other spelling, in :data:`TASK_OPTIONS`)."""

TASK_OPTIONS = {
    "rtl_option": (list[Path], typer.Option(None, "--rtl", help="Directory of RTL (and "
                                            "spec) files, or an RTL file (repeatable); the "
                                            "same as the positional RTL.")),
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
    "exclude_dir": (list[str], EXCLUDE_DIR),
    "default_excludes": (bool, DEFAULT_EXCLUDES),
    "target": (list[str], TARGET),
}
"""The options that name one task (with the command's ``rtl`` directory)."""


def one_rtl(positional: Sequence[Path] | None, option: Sequence[Path] | None) -> list[Path]:
    """The RTL paths named positionally or by ``--rtl`` (either spelling, once).

    Raises:
        CliError: both name different paths (exit 2).
    """
    first, second = [Path(p) for p in positional or []], [Path(p) for p in option or []]
    if first and second and first != second:
        shown = " ".join(map(str, first))
        raise fail(f"the RTL is named twice ({shown} and --rtl "
                   f"{' --rtl '.join(map(str, second))}): name it once, positionally or "
                   "with --rtl")
    return first or second


def given_rtl(ctx: typer.Context) -> list[Path]:
    """The RTL paths the command line names (positional or ``--rtl``), else empty
    (``--tasks``, or a filelist alone)."""
    return one_rtl(ctx.params.get("rtl"), ctx.params.get("rtl_option"))


def _task_of(ctx: typer.Context, values: dict) -> Task | None:
    if ctx.invoked_subcommand is not None:
        return None
    return resolve_task(given_rtl(ctx), values["tasks"],
                        values["task_id"], values["top"], values["instance"],
                        repo_options(values["incdir"], values["define"], values["filelist"],
                                     values["param"], values["exclude_dir"],
                                     values["default_excludes"], values["target"]))


with_task = with_options("task", TASK_OPTIONS, _task_of)
"""Add :data:`TASK_OPTIONS` to a command that takes ``ctx``, ``rtl`` (the positional
:data:`RTL_ARGUMENT`) and ``task``; the command gets the task they name
(:func:`resolve_task` of the RTL given either way, :func:`one_rtl`; None when a
subcommand runs).

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
    from llm4cov.exec import get_executor  # process pools, Ray: only when a command runs

    return get_executor(kind, workers, config, address)


CPU_MAX_TOKENS = 2048
"""Answer length of a local model on the CPU unless --max-tokens says otherwise:
SmolLM2-135M decoded 7.5-16 tokens/s on 2 cores (experiments/smollm2_cpu/notebook.md),
so an answer of 8,192 tokens takes up to 9-18 min there, one of 2,048 up to 2-5 min."""


def sized_for_the_device(policy: Policy, settings: BenchConfig, flags: dict) -> BenchConfig:
    """``settings`` with ``max_tokens`` capped at :data:`CPU_MAX_TOKENS` when ``policy``
    is a local model on the CPU and ``--max-tokens`` was not given (``flags``: the flags
    given); a note on the console says so."""
    if getattr(policy, "device", None) != "cpu" or "max_tokens" in flags \
            or settings.max_tokens <= CPU_MAX_TOKENS:
        return settings
    console.print(f"note: {policy.name} runs on the CPU: answers are capped at "
                  f"{CPU_MAX_TOKENS:,} tokens (not {settings.max_tokens:,}; --max-tokens to "
                  "change); the status line shows tokens/s and the most time left")
    return settings.model_copy(update={"max_tokens": CPU_MAX_TOKENS})


def runtime_unbuilt(config: SimConfig) -> bool:
    """Whether the build store holds no precompiled Verilator runtime of the configured
    compiler yet: the first simulation on a machine (or with another ``--cxx``) builds it
    (about a minute; ``sim/backends/verilator/artifacts.py`` keeps it under
    ``build/pch/``)."""
    from llm4cov.sim.backends.verilator.artifacts import has_runtime_pch
    from llm4cov.sim.cache import BUILD_DIR, cache_root

    return config.runtime_pch and not has_runtime_pch(cache_root(config) / BUILD_DIR,
                                                      config.cxx)


def simulating(config: SimConfig, what: str) -> str:
    """The status text of a simulation of ``what``, with the one-time runtime build said
    when it is due (:func:`runtime_unbuilt`)."""
    first = " (first run: building the Verilator runtime once, about a minute)"
    return f"simulating {what}" + (first if runtime_unbuilt(config) else "")


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
