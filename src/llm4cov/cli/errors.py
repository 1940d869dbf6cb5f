"""The CLI's exit codes and the one place where exceptions become them.

Exit codes (docs/cli.md, "Commands"): 0 success, 1 the job ran but failed (model server,
lost workers, a simulation that did not pass, an unexpected error), 2 bad input (usage
errors, unreadable or invalid input files, run directories of other settings), 3 the
simulator toolchain or an optional package the command needs is missing or broken, 130
interrupted. Every error is printed as
one line on stderr (``error: ...``, control characters shown escaped:
:func:`llm4cov.util.escape.terminal`), never as a traceback; ``llm4cov -v`` also logs
the traceback.

Usage errors come from the Click that Typer uses: the separate ``click`` package up to
Typer 0.25, a copy vendored as ``typer._click`` from 0.26. Their classes are found
through :class:`typer.BadParameter`'s bases, so both work.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import typer

from llm4cov.util.escape import terminal

if TYPE_CHECKING:  # the types of Typer's own copy of Click (Typer >= 0.26, see above)
    from typer._click.exceptions import ClickException, UsageError

log = logging.getLogger("llm4cov.cli")

OK, FAILED, BAD_INPUT, TOOLCHAIN, INTERRUPTED = 0, 1, 2, 3, 130


def _click_class(name: str) -> type[Any]:
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == name)


CLICK_EXCEPTION: type[ClickException] = _click_class("ClickException")
"""Click's base of usage and file errors (``message`` + ``exit_code``)."""
USAGE_ERROR: type[UsageError] = _click_class("UsageError")
"""Click's usage error: missing option, bad value, unknown flag or command."""

_TRAIN = ("the [train] extra: install torch for your machine (CPU: pip install torch "
          "--index-url https://download.pytorch.org/whl/cpu), then pip install -e '.[train]'")
#: Optional packages -> how to install them (a missing one exits 3, like a missing tool).
EXTRAS = {
    **dict.fromkeys(("torch", "transformers", "trl", "peft", "accelerate", "datasets",
                     "gguf"), _TRAIN),
    "ray": "the [ray] extra: pip install -e '.[ray]'",
}

_BAD_INPUT_OS_ERRORS = (FileNotFoundError, FileExistsError, IsADirectoryError,
                        NotADirectoryError, PermissionError)


class CliError(Exception):
    """An error the CLI reports as ``error: <message>`` with exit code ``code``."""

    def __init__(self, message: str, code: int = BAD_INPUT) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (newlines included) made one space."""
    return " ".join(text.split())


def classify(exc: BaseException) -> tuple[int, str]:
    """``(exit code, one-line message)`` for an exception that ended a command.

    ValueError (the package's bad-input errors: TaskError, RunDirError, ConfigError,
    DatasetError, ExecutorError, UnicodeDecodeError, ...), a replay that does not match
    its run directory and a missing/existing/unreadable path are bad input (2);
    ToolchainError and a missing optional package (:data:`EXTRAS`) are 3; anything
    else (PolicyError, WorkerLost, PipelineError, other OSErrors, bugs) is a failed job
    (1).
    """
    from llm4cov.bench.runner import ReplayMismatch
    from llm4cov.sim.safety.host import ToolchainError

    if isinstance(exc, CliError):
        return exc.code, one_line(exc.message)
    if isinstance(exc, USAGE_ERROR):
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        return exc.exit_code, one_line(exc.format_message()) + hint
    if isinstance(exc, CLICK_EXCEPTION):
        return BAD_INPUT, one_line(exc.format_message())
    if isinstance(exc, ToolchainError):
        return TOOLCHAIN, one_line(f"simulator toolchain: {exc}")
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in EXTRAS:
        package = (exc.name or "").split(".")[0]
        return TOOLCHAIN, f"this command needs {package}: {EXTRAS[package]}"
    if isinstance(exc, UnicodeDecodeError):
        return BAD_INPUT, f"input is not valid UTF-8 text (byte {exc.start}: {exc.reason})"
    if isinstance(exc, _BAD_INPUT_OS_ERRORS):
        where = f"{exc.filename}: " if exc.filename else ""
        return BAD_INPUT, one_line(f"{where}{exc.strerror or exc}")
    if isinstance(exc, ValueError | ReplayMismatch):
        return BAD_INPUT, one_line(str(exc))
    notes = " ".join(getattr(exc, "__notes__", ()))
    text = one_line(f"{exc} {notes}") or type(exc).__name__
    if isinstance(exc, RuntimeError | OSError):  # PolicyError, WorkerLost, PipelineError
        return FAILED, text
    return FAILED, f"internal error, {type(exc).__name__}: {text} (llm4cov -v shows where)"


def report(exc: BaseException) -> int:
    """Print ``exc`` as one ``error:`` line on stderr; return its exit code."""
    code, message = classify(exc)
    log.debug("command failed", exc_info=exc)
    typer.echo(f"error: {terminal(message)}", err=True)
    return code
