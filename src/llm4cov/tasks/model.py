"""The task (a hardware repository plus what the testbench must do).

A task is the paper's repository ``R`` (RTL + spec files) together with the DUT
module, the instance name the testbench must use, the instruction shown to the
model and the coverage targets (``../shared/benchmarks/README.md``, "Task schema").
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator

from llm4cov.tasks.names import length_problem, name_errors, unsafe_chars

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
#: Bounds of a task's defines and parameters (each one command-line argument; IEEE 1800
#: 5.6 asks tools for identifiers of at least 1,024 characters).
MAX_IDENTIFIER, MAX_VALUE, MAX_ENTRIES = 1024, 4096, 1024
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NOT_IN_ID = re.compile(r"%(?![0-9A-Fa-f]{2})|[^A-Za-z0-9_$.+:@=/%-]")


def is_identifier(name: str) -> bool:
    """Whether ``name`` is a simple SystemVerilog identifier (IEEE 1800 5.6)."""
    return _IDENTIFIER.fullmatch(name) is not None


class TaskError(ValueError):
    """A task or repository that cannot be used (no RTL, bad file name, ...)."""


def safe_task_id(task_id: str) -> str:
    """``task_id`` as it is kept: every character but letters, digits and
    ``_ $ . + : @ = / -`` percent-encoded as its UTF-8 bytes (``x\nSF:/etc`` ->
    ``x%0ASF:/etc``, ``a b`` -> ``a%20b``; a ``%`` not already starting an ``%XX`` is
    ``%25``, so the rule is idempotent). Ids reach every output (LCOV ``TN:``, Markdown,
    HTML titles, JSON rows, per-task file names), so nothing in one can start a record,
    a line or markup there; a row with such an id still loads and runs, and ``--id``
    finds it by either spelling.

    Raises:
        ValueError: an empty id, or one over 200 characters.
    """
    if not task_id or len(task_id) > 200:
        raise ValueError(f"task id {task_id[:80]!r}: must have 1-200 characters")
    return _NOT_IN_ID.sub(lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode()),
                          task_id)


class SourceFile(BaseModel):
    """One text file of a repository: a relative POSIX path and its content."""

    model_config = ConfigDict(frozen=True)

    name: str
    content: str

    @field_validator("name")
    @classmethod
    def _relative_name(cls, name: str) -> str:
        path = PurePosixPath(name)
        if not name or path.is_absolute() or ".." in path.parts:
            raise ValueError(f"file name must be a relative path without '..': {name!r}")
        return name


class Target(BaseModel):
    """A coverage target: ``inst_name``'s ``metric`` must reach ``target_percentage``.

    ``target_percentage`` is a percent (0-100). ``metric`` is ``overall`` (the mean of
    the per-metric percentages) or one metric name (``line``, ``branch``, ``expr``,
    ``toggle``, ``fsm``).
    """

    model_config = ConfigDict(frozen=True)

    inst_name: str
    metric: str = "overall"
    target_percentage: float



class ReferenceTestbench(BaseModel):
    """The task's hidden human-written testbench (never shown to a model)."""

    model_config = ConfigDict(frozen=True)

    name: str
    content: str
    aux_files: list[SourceFile] = Field(default_factory=list)


DEFAULT_INSTRUCTION = (
    "Write a SystemVerilog stimulus testbench for the design described in the spec files "
    "(RTL in the rtl files). The testbench is one top-level module that instantiates "
    "`{module}` with the instance name `{instance}`, drives all of its inputs (clocks, "
    "resets, data, control) and ends the simulation with $finish. Aim for maximum code "
    "coverage of the `{instance}` instance and everything below it: line/block, branch, "
    "expression and toggle coverage (scored as their average). Stimulus only: no "
    "assertions, no output checks, no scoreboards. Do not modify the RTL."
)


class Task(BaseModel):
    """A coverage task (schema of ``../shared/benchmarks/README.md``).

    Unknown keys are kept out (``extra="ignore"``) so rows of newer schemas load.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    id: str
    source: str = "local"
    rtl_files: list[SourceFile]
    spec_files: list[SourceFile] = Field(default_factory=list)
    dut_module_name: str
    dut_instance_name: str = "dut"
    instruction: str = ""
    targets: list[Target] = Field(default_factory=list)
    reference_tb: ReferenceTestbench | None = None
    difficulty: str | None = None
    is_agentic: bool = False
    meta: dict[str, Any] = Field(default_factory=dict)
    include_dirs: list[str] = Field(default_factory=list)
    """Extra `` `include`` search directories, relative to the repository root (POSIX),
    searched before the inferred ones (Verilator ``-I``/``+incdir+``)."""
    defines: dict[str, str] = Field(default_factory=dict)
    """Preprocessor macros, ``NAME -> value`` (``""`` = defined without a value), as
    Verilator ``+define+NAME=VALUE``; they apply to the RTL and the testbench."""
    parameters: dict[str, str] = Field(default_factory=dict)
    """Parameter overrides of the DUT, ``NAME -> SystemVerilog expression``: structure
    detection elaborates the DUT with them, the testbench must instantiate the DUT with
    them, and Verilator gets them as ``-GNAME=VALUE`` (they reach a testbench top that
    declares a parameter of that name)."""
    compile_files: list[str] = Field(default_factory=list)
    """The RTL files to compile, in filelist order (names of ``rtl_files``); empty =
    every ``*.v``/``*.sv`` RTL file. Other RTL files are only `` `include``d. Packages
    are compiled before their users whatever this order."""
    _root: str | None = PrivateAttr(default=None)

    @property
    def root(self) -> str | None:
        """The host folder the RTL files were read from: set by the directory loader
        only (:meth:`from_folder`), never from a task row (a row's ``source`` and
        ``meta`` are the row's word: ``meta.path = /etc`` pointed a tracefile's
        ``SF:`` at ``/etc/passwd``). None for a task of a JSONL file."""
        return self._root

    def from_folder(self, root: str) -> Task:
        """This task, read from the host folder ``root`` (:attr:`root`)."""
        self._root = root
        return self

    @field_validator("id")
    @classmethod
    def _task_id(cls, task_id: str) -> str:
        return safe_task_id(task_id)

    @field_validator("dut_module_name", "dut_instance_name")
    @classmethod
    def _design_identifier(cls, name: str) -> str:
        if not _IDENTIFIER.fullmatch(name):
            raise ValueError(f"{name[:80]!r} is not a SystemVerilog identifier")
        return name

    @field_validator("include_dirs")
    @classmethod
    def _relative_dirs(cls, dirs: list[str]) -> list[str]:
        for d in dirs:
            path = PurePosixPath(d)
            if path.is_absolute() or ".." in path.parts:
                raise ValueError(f"include dir must be relative to the repository: {d!r}")
            if why := unsafe_chars(d) or length_problem(d):
                raise ValueError(f"include dir {d[:80]!r} {why}")
        return [str(PurePosixPath(d)) for d in dirs]

    @field_validator("defines", "parameters")
    @classmethod
    def _identifiers(cls, values: dict[str, str]) -> dict[str, str]:
        """Names are identifiers; values are one line without control characters (a
        ``+define+`` or ``-G`` value has none: a newline in one had started lines of a
        formal tool's script of its own), each name at most :data:`MAX_IDENTIFIER` and
        value at most :data:`MAX_VALUE` characters, at most :data:`MAX_ENTRIES` of them
        (each is a command-line argument: a 200,000-character define passed the
        kernel's limit on one, so Verilator could not start and a bench never ended, a
        twenty-seventh red team)."""
        if len(values) > MAX_ENTRIES:
            raise ValueError(f"more than {MAX_ENTRIES} defines or parameters")
        for name, value in values.items():
            if not _IDENTIFIER.fullmatch(name):
                raise ValueError(f"not a SystemVerilog identifier: {name[:80]!r}")
            if len(name) > MAX_IDENTIFIER:
                raise ValueError(f"the name {name[:80]!r}... is longer than {MAX_IDENTIFIER} "
                                 "characters")
            if _CONTROL.search(value):
                raise ValueError(f"the value of {name} holds a line break or another "
                                 f"control character: {value[:80]!r}")
            if len(value) > MAX_VALUE:
                raise ValueError(f"the value of {name} is longer than {MAX_VALUE} "
                                 f"characters: {value[:80]!r}...")
        return values

    @field_validator("rtl_files")
    @classmethod
    def _has_rtl(cls, files: list[SourceFile]) -> list[SourceFile]:
        """At least one file, each named as a work-dir file may be
        (:mod:`llm4cov.tasks.names`), no two colliding."""
        if not files:
            raise ValueError("a task needs at least one RTL file")
        if errors := name_errors("rtl file", [f.name for f in files]):
            raise ValueError("; ".join(errors))
        return files

    def model_post_init(self, __context: Any) -> None:
        names = {f.name for f in self.rtl_files}
        if self.reference_tb is not None and (errors := name_errors(
                "reference testbench aux file", [f.name for f in self.reference_tb.aux_files],
                taken=[f.name for f in self.rtl_files])):
            raise ValueError("; ".join(errors))
        unknown = [n for n in self.compile_files if n not in names]
        if unknown:
            raise ValueError(f"compile_files not among rtl_files: {', '.join(unknown)}")
        self._check_includes()
        if not self.instruction:
            text = DEFAULT_INSTRUCTION.format(
                module=self.dut_module_name, instance=self.dut_instance_name
            )
            if self.parameters:
                overrides = ", ".join(f".{k}({v})" for k, v in self.parameters.items())
                text += f" Instantiate the DUT with the parameters #({overrides})."
            object.__setattr__(self, "instruction", text)

    def _check_includes(self) -> None:
        """Refuse RTL (or macros) that names a file outside the repository in an
        `` `include``, or could (:mod:`llm4cov.tasks.includes`): every parse of the RTL
        in this process resolves includes on the host."""
        from llm4cov.tasks import includes  # both import this module
        from llm4cov.tasks.hdl import search_dirs

        found = includes.problems({f.name: f.content for f in self.rtl_files},
                                  search_dirs(self.rtl_files, self.include_dirs),
                                  self.defines)
        if found:
            raise includes.UnsafeIncludeError(f"RTL {includes.first_problem(found)}")

    def build_settings(self) -> dict[str, Any]:
        """What besides the files decides how the RTL compiles (for cache keys)."""
        return {
            "include_dirs": self.include_dirs,
            "defines": self.defines,
            "parameters": self.parameters,
            "compile_files": self.compile_files,
        }

    def target_for(self, metric: str = "overall") -> float | None:
        """The target percentage for ``metric`` on the DUT instance, or None."""
        for target in self.targets:
            if target.metric == metric:
                return target.target_percentage
        return None
