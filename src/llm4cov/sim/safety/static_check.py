"""Static safety check of an untrusted testbench, on the text Verilator compiles.

The testbench is code written by a model. The check is the fast first line; the OS
sandbox (:mod:`llm4cov.sim.safety.isolation`) is the real guarantee. Rejected
(``Status.REJECTED``), with one reason per finding (``tb.sv:7: ...``):

- ``$system`` and Verilator's C++ escapes (``$c``, ``$cN``, ``$cpure``, `` `systemc_*``
  blocks), which run arbitrary host code; `` `verilator_config`` blocks, which change how
  every file is compiled and covered;
- DPI imports and exports (``import "DPI-C"``), which link host functions;
- file access that could leave the work dir: ``$fopen``, ``$readmem*``, ``$writemem*``,
  ``$dumpfile``, ``$dumpports`` whose file name is not one plain string literal (a
  computed name cannot be checked), uses escape sequences (``"\\057etc"`` is
  ``"/etc"`` to Verilator: any escape is refused, the decoded name is shown), or is
  absolute, contains ``..``, starts with ``~`` or holds control characters;
- `` `include`` of a file outside the work dir (absolute, ``..``, a link out); and, in
  every preprocessor branch of the raw text (whatever ``VERILATOR`` or pyslang's
  ``__slang__`` switch off), an `` `include`` that pyslang, in this process, could not be
  kept inside the work dir for: an absolute or climbing name, a computed, escaped or
  ``<...>`` name, a macro that can build a directive (token pasting onto an argument,
  `` `arg`` in a body), a `` `pragma protect`` envelope (the include rule of
  :mod:`llm4cov.tasks.includes`, checked before anything is parsed);
- `` `line`` directives whose file name holds a character outside the work-dir file
  name rule (:func:`llm4cov.tasks.names.unsafe_chars`: no ``$``, ``(``, ``:``, white
  space, quotes, ...): Verilator writes those names into files make could read, and
  into logs and coverage records;
- in the testbench's part only (:func:`_tb_only`): an escaped name holding ``.`` or
  ``*`` (read as an instance path in coverage records), the evaluator's per-instance
  parameter name, a ``lint_off`` of every warning or of an error on writes, a
  ``config`` block or `` `uselib`` (they choose which module an instance is);
- text that expands past the limits (:class:`CheckLimits`, "preprocessing exceeded
  limits"): a macro bomb is cut by Verilator's own per-line token limit or by the
  limits on the child processes, within a second (0.3 s for a 643-byte doubling bomb).

What is checked is exactly what Verilator compiles: the testbench's part of the
output of ``verilator -E`` run with the build's own command line (same predefined
macros such as ``VERILATOR``, same ``-D`` macros, include dirs and file order, so the RTL's
macros are expanded too), read with Verilator's own lexical rules (:mod:`vlex`).
Branches Verilator does not take are not checked, because they are not compiled.

The backend supplies that run and how its messages read: the command is its
:meth:`~llm4cov.sim.backends.base.SimBackend.preprocess_command` (``-E`` appended), its
output the IEEE 1800 text with `` `line`` markers (22.12) that any SystemVerilog
preprocessor writes, and its messages are read by the backend's
:class:`PreprocessMessages` (Verilator's:
``sim/backends/verilator/failures.py``). The refused constructs include Verilator's
C++ escapes for every backend: refusing them elsewhere costs nothing.

The same run gives the evaluator its one view of the testbench
(:class:`Preprocessed`, from :func:`inspect_testbench`): which modules the testbench
and the RTL declare is read from this text (:mod:`llm4cov.sim.analysis.structure`), never from
a parse with other macros. When the evaluator rewrites the sources or adds generated
code, the text it compiles is checked again (:func:`new_findings`): nothing the first
check did not see may appear.

The evaluator's own pyslang passes (structure, pre-check) parse the raw testbench in its
process, with other macros than Verilator's. When the testbench uses the preprocessor,
those parses (and the parses of Verilator's view) are first run in a limited child
(:mod:`llm4cov.sim.safety.ppguard`; in the OS sandbox too when the check has one), so a bomb
that only pyslang would expand is rejected, too.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from llm4cov.sim.safety import vlex, workdirs
from llm4cov.sim.safety.bounded import PYTHON_ENV, python_sandbox
from llm4cov.sim.safety.host import host_env
from llm4cov.sim.safety.process import Limits, Sandbox, run_limited
from llm4cov.tasks import includes
from llm4cov.tasks.hdl import USES_MACROS, search_dirs
from llm4cov.tasks.model import SourceFile, Task
from llm4cov.tasks.names import unsafe_chars

FORBIDDEN_TASKS = {"$system": "runs a host shell command"}
#: File tasks and the index of their file-name argument (-1: the last one).
FILE_TASKS = {
    "$fopen": 0,
    "$readmemh": 0,
    "$readmemb": 0,
    "$writememh": 0,
    "$writememb": 0,
    "$dumpfile": 0,
    "$dumpports": -1,
}
#: Verilator errors on writes a testbench may not waive with ``lint_off``: to an input
#: (ASSIGNIN), a procedural write to a net (PROCASSWIRE), a continuous one to a variable
#: (CONTASSREG), blocking and non-blocking writes mixed (BLKANDNBLK).
#: The parameter the per-instance rewrite adds (:mod:`llm4cov.sim.analysis.instances`).
INSTANCE_PARAM = "LLM4COV_INST"
WAIVER_REFUSED = frozenset({"ASSIGNIN", "PROCASSWIRE", "CONTASSREG", "BLKANDNBLK"})
_C_ESCAPE = re.compile(r"^\$c(pure)?\d*$")
_CPP_DIRECTIVE = re.compile(r"^`systemc_\w*$")
_CONFIG_DIRECTIVE = "`verilator_config"
#: A backtick other than a directive that needs no macro: the testbench needs ppguard.
_USES_MACROS = USES_MACROS
_PP_OUT = "llm4cov_pp.sv"
_CALL_LOOKAHEAD = 256
#: What the pyslang guard's Python child needs of the environment (nothing else).
_PYTHON_ENV = PYTHON_ENV


@dataclass(frozen=True)
class PreprocessMessages:
    """How the static check reads the messages of a backend's preprocessing run
    (:meth:`~llm4cov.sim.backends.base.SimBackend.preprocess_command` with ``-E``)."""

    limit: tuple[str, ...] = ()
    """Texts that say the preprocessor's own limit stopped it (a macro bomb)."""
    limit_label: str = "the preprocessor's own limit"
    """That limit as a rejection names it."""
    killed: tuple[str, ...] = ()
    """Texts that say the preprocessor died (besides an exit code other than 0 and 1)."""
    missing_include: re.Pattern[str] | None = None
    """An include file it did not find; groups ``(file:line, included name)``."""

    def missing(self, output: str) -> list[tuple[str, str]]:
        """``(file:line, included name)`` of every include file ``output`` says was
        not found."""
        return self.missing_include.findall(output) if self.missing_include else []


@dataclass(frozen=True)
class Preprocessor:
    """The backend's preprocessing run for one call, as the static check runs it: the
    build's own ``command`` line (``-E`` is appended), its environment ``env`` and how
    its ``messages`` read. The caller supplies it (the evaluator from its backend,
    ``SimBackend.preprocessor``), so this layer names no backend."""

    command: tuple[str, ...]
    env: Mapping[str, str]
    messages: PreprocessMessages


@dataclass(frozen=True)
class CheckLimits:
    """Bounds on the check itself (bytes and seconds).

    ``expanded_bytes``: the testbench's part of the preprocessed text (the whole output
    may also hold ``4 x`` the RTL's size). ``memory_bytes``: Verilator ``-E``;
    ``parse_memory_bytes``: the pyslang guard (the largest benchmark design with its
    reference testbench parses in under 256 MiB). ``cpu_s``/``timeout_s``: each child."""

    testbench_bytes: int = 1 << 20
    expanded_bytes: int = 2 << 20
    memory_bytes: int = 1 << 30
    parse_memory_bytes: int = 512 << 20
    cpu_s: int = 10
    timeout_s: float = 30.0


EXCEEDED = "preprocessing exceeded limits"


@dataclass
class Preprocessed:
    """Verilator's view of one call's sources: the ``verilator -E`` output ``text`` of
    the whole command line, its line ``markers`` and ``tb_offset``, where the
    testbench's part (named ``name``) starts; ``outside`` and ``missing``: the included
    files that lie outside the work dir, ``(file:line, name)`` of those the preprocessor
    did not find (for :meth:`findings`)."""

    text: str
    markers: list[vlex.LineMarker]
    tb_offset: int
    name: str
    outside: list[str]
    missing: list[tuple[str, str]]
    _findings: list[str] | None = None

    def rtl_part(self) -> str:
        """The text of everything compiled before the testbench (the RTL)."""
        return self.text[: self.tb_offset]

    def tb_part(self) -> str:
        """The testbench's text as Verilator compiles it (its includes expanded, the
        RTL's and Verilator's macros applied; `` `line`` markers keep file and line)."""
        return self.text[self.tb_offset:]

    def findings(self) -> list[str]:
        """What the static check's rules find anywhere in the text, RTL included (the
        RTL may use what a testbench may not; :func:`new_findings` compares two views)."""
        if self._findings is None:
            where = vlex.SourceMap(self.text, self.markers, self.name).where
            self._findings = [
                *self.outside,
                *_missing_includes(self.missing, None),
                *_line_names(self.markers, where),
                *_scan(list(vlex.tokens(self.text)), where),
            ]
        return self._findings


@dataclass(frozen=True)
class Inspection:
    """The static check's verdict (``reasons``; empty: safe to compile) and, when
    Verilator preprocessed the sources, its view of them (``view``)."""

    reasons: list[str]
    view: Preprocessed | None = None


def new_findings(before: Preprocessed, after: Preprocessed) -> list[str]:
    """What the static check finds in ``after`` (the sources as the evaluator compiles
    them, rewritten or extended) that it did not find in ``before`` (the sources it
    checked), counted with multiplicity; empty when the rewrite added nothing the check
    refuses."""
    return list((Counter(after.findings()) - Counter(before.findings())).elements())


def inspect_testbench(
    text: str,
    name: str = "tb.sv",
    task: Task | None = None,
    *,
    preprocessor: Preprocessor,
    aux_files: Sequence[SourceFile] = (),
    workdir_root: str | None = None,
    limits: CheckLimits = CheckLimits(),
    sandbox: Sandbox | None = None,
    guard: bool = True,
) -> Inspection:
    """The static check of the testbench ``text`` named ``name``: the reasons to reject it
    (``Inspection.reasons``; empty = safe to compile) and Verilator's view of the sources
    (``Inspection.view``, :class:`Preprocessed`; None when the text is too big or Verilator
    did not reach the testbench). ``guard=False`` leaves out the pyslang guard and the
    rules on the testbench's own names (:func:`_tb_only`), for sources the evaluator
    checked before it rewrote them (its rewrite adds the reserved parameter itself).

    ``task`` gives the RTL files, macros (``Task.defines``), include dirs and compile
    order it is compiled with (None: the testbench alone). ``preprocessor`` is the
    build's own command line (the evaluator passes its backend's; ``-E`` is appended),
    run in a scratch dir laid out like the work dir, with its environment and message
    rules (:class:`Preprocessor`; required: this layer builds no backend). With
    ``sandbox`` that run is in the OS sandbox too (an included file outside is then
    judged by its name), and so is the pyslang guard
    (:func:`llm4cov.sim.safety.bounded.python_sandbox`): it reads
    nothing outside the scratch dir either, as the include rule is checked first.
    Reasons are in source order; each names the file and line, e.g.
    ``tb.sv:7: $system is not allowed (runs a host shell command)``.

    Raises:
        OSError: the scratch dir cannot be written or Verilator cannot be started.
    """
    too_big = _oversized(text, name, limits)
    if too_big:
        return Inspection(too_big)
    with _scratch(text, name, task, aux_files, workdir_root) as scratch:
        unsafe = include_reasons(text, name, task, scratch)
        rtl_bytes = sum(len(f.content) for f in task.rtl_files) if task else 0
        reasons, view = _compiler_view(list(preprocessor.command), preprocessor.messages,
                                       scratch, dict(preprocessor.env), name,
                                       rtl_bytes, limits, sandbox, given=guard)
        if not reasons and not unsafe and guard and _USES_MACROS.search(text):
            reasons = _pyslang_views(scratch, name, task, limits, sandbox is not None, view)
        return Inspection(_with_includes(reasons, unsafe), view)


def guard_pyslang(
    text: str,
    name: str = "tb.sv",
    task: Task | None = None,
    *,
    aux_files: Sequence[SourceFile] = (),
    workdir_root: str | None = None,
    limits: CheckLimits = CheckLimits(),
    sandboxed: bool = False,
) -> list[str]:
    """Reasons not to parse the untrusted testbench with pyslang in this process (empty:
    its parses stay within ``limits`` and read no file outside the repo: the include
    rule, :func:`include_reasons`, then the bounded child). Only a testbench that uses
    the preprocessor costs a child process. :func:`inspect_testbench` includes this; call
    it before any pyslang parse that comes first (the CLI's).
    """
    too_big = _oversized(text, name, limits)
    if too_big or not _USES_MACROS.search(text):
        return too_big
    with _scratch(text, name, task, aux_files, workdir_root) as scratch:
        return include_reasons(text, name, task, scratch) or _pyslang_views(
            scratch, name, task, limits, sandboxed)


def include_reasons(text: str, name: str, task: Task | None, scratch: Path) -> list[str]:
    """Reasons from the include rule (:mod:`llm4cov.tasks.includes`) on the raw
    testbench and the RTL, in every preprocessor branch, with the scratch dir's
    sources folder as the repository: the files the testbench includes (aux files too)
    are read there and checked in turn; a name tried outside it must not exist."""
    rtl = {f.name: f.content for f in task.rtl_files} if task else {}
    dirs = search_dirs(task.rtl_files, task.include_dirs) if task else ["."]
    found = includes.problems({**rtl, name: text}, dirs, task.defines if task else None,
                              includes.Disk(workdirs.sources(scratch)))
    return [f"{p} (checked in every preprocessor branch)" for p in found]


def _with_includes(reasons: list[str], unsafe: list[str]) -> list[str]:
    """``reasons`` (Verilator's view), then the include rule's ``unsafe`` reasons but
    those about an `` `include`` on a line a reason of Verilator's view already names."""
    def at(reason: str) -> str | None:
        where, _, what = reason.partition(": ")
        return where if what.startswith("`include") else None

    named = {at(r) for r in reasons} - {None}
    return [*reasons, *(r for r in unsafe if at(r) is None or at(r) not in named)]


def _oversized(text: str, name: str, limits: CheckLimits) -> list[str]:
    size = len(text.encode("utf-8", errors="surrogateescape"))
    if size <= limits.testbench_bytes:
        return []
    return [f"{name}: the testbench has {size} bytes, more than the "
            f"{limits.testbench_bytes} allowed ({EXCEEDED})"]


@contextlib.contextmanager
def _scratch(text, name, task, aux_files, workdir_root) -> Iterator[Path]:
    """A temporary dir laid out like the work dir: the RTL, aux files and testbench in
    its sources folder (a :mod:`workdirs` dir, so a killed check leaks none)."""
    scratch = workdirs.create(workdir_root)
    try:
        rtl = list(task.rtl_files) if task else []
        for f in [*rtl, *aux_files, SourceFile(name=name, content=text)]:
            path = workdirs.sources(scratch) / f.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f.content, encoding="utf-8", errors="surrogateescape")
        yield scratch
    finally:
        workdirs.release(scratch)


def unsafe_path(path: str) -> str | None:
    """Why a (decoded) file name may leave the work dir, or None when it stays inside."""
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        return "control characters in the file name"
    p = PurePosixPath(path)
    if p.is_absolute() or ".." in p.parts or path.startswith("~"):
        return "outside the work dir (absolute or '..' path)"
    return None


# -- the compiler's view -----------------------------------------------------------------


def _compiler_view(
    command: list[str], messages: PreprocessMessages, scratch: Path, env: dict, name: str,
    rtl_bytes: int, limits: CheckLimits, sandbox: Sandbox | None, given: bool = True,
) -> tuple[list[str], Preprocessed | None]:
    cap = limits.expanded_bytes + 4 * rtl_bytes
    src = workdirs.sources(scratch)
    run = run_limited(
        ["/bin/sh", "-c", f'exec "$@" > ../{_PP_OUT}', "sh", *command, "-E"],
        cwd=str(src),
        workdir=str(scratch),
        env=env,
        timeout_s=limits.timeout_s,
        limits=Limits(limits.cpu_s, limits.memory_bytes, cap),
        output_cap=64 * 1024,
        sandbox=sandbox,
    )
    out_path = scratch / _PP_OUT
    out_size = out_path.stat().st_size if out_path.exists() else 0
    errors = run.output
    # the compiler's own errors exit 1; a killed or crashed run exits otherwise
    killed = run.returncode not in (0, 1) or any(k in errors for k in messages.killed)
    limited = any(t in errors for t in messages.limit)
    if run.timed_out or killed or out_size >= cap or limited:
        why = messages.limit_label if limited else (
            f"{limits.timeout_s:g} s, {limits.cpu_s} s CPU, {limits.memory_bytes >> 20} MiB "
            f"or {cap >> 20} MiB of output; exit {run.returncode}")
        return [f"{name}: {EXCEEDED} ({why})"], None
    missing = messages.missing(errors)
    reasons = _missing_includes(missing, name)  # not found here: judge the name
    pp = out_path.read_text(encoding="utf-8", errors="surrogateescape")
    markers = vlex.line_markers(pp)
    start = next((m for m in markers if m.level == 1
                  and os.path.normpath(m.file) == os.path.normpath(name)), None)
    if start is None:  # Verilator stopped before the testbench: nothing is built
        return (reasons if run.returncode != 0 else [
            f"{name}: the testbench is missing from Verilator's preprocessed output"]), None
    part = pp[start.offset:]
    if len(part) > limits.expanded_bytes:
        return [f"{name}: {EXCEEDED} (expands to more than "
                f"{limits.expanded_bytes >> 20} MiB)"], None
    # the whole view's included files are judged now, while the scratch dir exists
    # (links); its positions are only mapped when one lies outside (rare)
    view = Preprocessed(pp, markers, start.offset, name, _outside_files(
        markers, src, lambda at: vlex.SourceMap(pp, markers, name).where(at)), missing)
    inside = [_shift(m, start.offset) for m in markers if m.offset >= start.offset]
    where = vlex.SourceMap(part, inside, name).where
    reasons += _outside_files(inside, src, where)
    reasons += _line_names(inside, where)
    reasons += _scan(list(vlex.tokens(part)), where)
    if given:
        reasons += _tb_only(part, where)
    return list(dict.fromkeys(reasons)), view


def _missing_includes(missing: list[tuple[str, str]], name: str | None) -> list[str]:
    """Reasons for the `` `include``s Verilator did not find (in ``name``'s part; None:
    anywhere) whose name points outside the work dir: the build's cwd differs from the
    check's, so the name is judged."""
    return [
        f"{at}: `include \"{target}\" points {why}"
        for at, target in missing
        if (name is None or at.startswith(f"{name}:")) and (why := unsafe_path(target))
    ]


def _line_names(markers: list[vlex.LineMarker], where) -> list[str]:
    """Reasons for `` `line`` markers whose file name breaks the file-name rule, one
    per name (at the line of its first directive: the one after the output line before
    the marker)."""
    reasons, seen = [], set()
    for m in markers:
        if m.file not in seen and (why := unsafe_chars(m.file)):
            seen.add(m.file)
            file, _, line = where(max(0, m.offset - 1)).rpartition(":")
            at = f"{file}:{int(line) + 1}" if m.offset and line.isdigit() else where(0)
            reasons.append(f"{at}: `line names the file {m.file!r}, which {why}")
    return reasons


def _shift(marker: vlex.LineMarker, by: int) -> vlex.LineMarker:
    return vlex.LineMarker(marker.offset - by, marker.line, marker.file, marker.level)


def _outside_files(markers, src: Path, where) -> list[str]:
    """Reasons for the included files (markers entering a file) outside the sources
    folder ``src`` of the scratch dir."""
    root = os.path.realpath(src)
    reasons = []
    for m in (m for m in markers if m.level == 1):
        real = os.path.realpath(os.path.join(root, m.file))
        if os.path.commonpath([root, real]) != root:
            at = where(max(0, m.offset - 1))  # the line of the `include
            reasons.append(f"{at}: `include of \"{m.file}\" reads a file outside the work dir")
    return reasons


def _scan(toks: list[vlex.Token], where) -> list[str]:
    reasons = []
    constants = _file_constants(toks)
    for i, tok in enumerate(toks):
        at = where(tok.offset)
        if tok.kind == "sys":
            if tok.text in FORBIDDEN_TASKS:
                reasons.append(f"{at}: {tok.text} is not allowed ({FORBIDDEN_TASKS[tok.text]})")
            elif _C_ESCAPE.match(tok.text):
                reasons.append(f"{at}: {tok.text} (embedded C++) is not allowed")
            elif tok.text in FILE_TASKS:
                why = _file_argument(toks, i, FILE_TASKS[tok.text], constants)
                if why:
                    reasons.append(f"{at}: {tok.text}{why}")
        elif tok.kind == "dir":
            if _CPP_DIRECTIVE.match(tok.text):
                reasons.append(f"{at}: {tok.text} (embedded C++) is not allowed")
            elif tok.text == _CONFIG_DIRECTIVE:
                reasons.append(f"{at}: {tok.text} is not allowed (it changes how every file "
                               "is compiled and covered)")
        elif (tok.kind == "id" and tok.text in ("import", "export") and i + 1 < len(toks)
              and toks[i + 1].kind == "str"):
            reasons.append(f"{at}: DPI imports/exports are not allowed")
    return reasons


def _tb_only(part: str, where) -> list[str]:
    """Reasons for what the testbench's part may not hold though the RTL may (and the
    evaluator's own rewrites add): the name of the per-instance parameter the evaluator
    adds (:data:`INSTANCE_PARAM`: a testbench that sets it can
    give its own instance the DUT's copy),
    an escaped identifier holding ``.`` or ``*`` (coverage records name an instance by
    its dotted path, ``*`` marking merged instances: a testbench instance named
    ``\\dut.x`` reads as one inside the DUT), and a meta-comment that waives one of
    Verilator's errors on writes (:data:`WAIVER_REFUSED`, or every warning), and a
    ``config`` block or `` `uselib`` (IEEE 1800 33: they bind an instance of the
    design to another module, e.g. the DUT's submodule to the testbench's own; the
    pinned Verilator ignores them, a later one need not)."""
    reasons = []
    for tok in vlex.tokens(part):
        if (tok.kind, tok.text) in (("id", "config"), ("dir", "`uselib")):
            reasons.append(f"{where(tok.offset)}: `{tok.text.lstrip('`')}` is not allowed (it "
                           "chooses which module an instance of the design is)")
            continue
        if tok.kind != "id":
            continue
        name = tok.text.removeprefix("\\")
        if name == INSTANCE_PARAM:
            reasons.append(f"{where(tok.offset)}: the name `{name}` is reserved for the "
                           "evaluator")
        elif tok.text.startswith("\\") and ("." in name or "*" in name):
            reasons.append(f"{where(tok.offset)}: the escaped name `{name}` holds `.` or "
                           "`*`, which coverage records read as an instance path")
    for tok in vlex.metacomments(part):
        words = tok.text.strip("/* \t").split()
        codes = {w.upper() for w in words[2:]} if len(words) > 1 else set()
        if len(words) > 1 and words[1].lower() == "lint_off" and \
                (not codes or codes & WAIVER_REFUSED):
            waived = ", ".join(sorted(codes & WAIVER_REFUSED)) or "every warning"
            reasons.append(f"{where(tok.offset)}: `lint_off` of {waived} is not allowed "
                           "(it waives an error on writes the check relies on)")
    return reasons


def _file_argument(toks: list[vlex.Token], i: int, index: int,
                   constants: Mapping[str, vlex.Token]) -> str | None:
    """Why the file-name argument of the call at ``toks[i]`` is unsafe (None: safe or no
    call): a string literal, or the name of one of ``constants`` (its literal is
    judged), that points inside the work dir. The text returned follows the task name in
    the reason."""
    args = _arguments(toks, i)
    if args is None:
        return None
    arg = args[index] if args and -len(args) <= index < len(args) else []
    if len(arg) == 1 and arg[0].kind == "id" and _name(arg[0]) in constants:
        arg = [constants[_name(arg[0])]]
    if len(arg) != 1 or arg[0].kind != "str":
        return (" needs a string-literal file name or a constant of one (a computed path "
                "cannot be checked to stay inside the work dir)")
    literal = arg[0].text
    value = vlex.string_value(literal)
    if "\\" in literal:
        return f"({literal}) uses escape sequences in its file name (decodes to {value!r})"
    why = unsafe_path(value)
    return f"(\"{value}\") points {why}" if why else None


def _name(tok: vlex.Token) -> str:
    """An identifier as SystemVerilog compares it (``\\f `` is ``f``, IEEE 1800 5.6.1)."""
    return tok.text.removeprefix("\\")


def _file_constants(toks: list[vlex.Token]) -> dict[str, vlex.Token]:
    """The names a file task may use for its file name, each with its string literal: a
    ``localparam`` (no override, ``defparam`` or ``-G`` changes one, IEEE 1800 6.20.4)
    declared once, its value one string literal (``localparam F = "rom.hex";``, also in
    a list), named nowhere else but as the whole file-name argument of a file task (so no
    other declaration shadows it). A ``parameter`` never counts: an instance or class
    specialization may override it by position, which no name betrays, and a lexical
    reading of which module holds it can be led astray (red team 35: `virtual class`,
    `typedef interface class`, keywords as identifiers under `` `begin_keywords``)."""
    uses = Counter(_name(t) for t in toks if t.kind == "id")
    as_file: Counter[str] = Counter()
    declared: dict[str, list[vlex.Token]] = {}
    for i, tok in enumerate(toks):
        if tok.kind == "sys" and tok.text in FILE_TASKS:
            args = _arguments(toks, i) or []
            index = FILE_TASKS[tok.text]
            arg = args[index] if -len(args) <= index < len(args) else []
            if len(arg) == 1 and arg[0].kind == "id":
                as_file[_name(arg[0])] += 1
        elif tok.kind == "id" and tok.text == "localparam":
            j = i + 2 if i + 1 < len(toks) and toks[i + 1].text == "string" else i + 1
            while (j + 3 < len(toks) and toks[j].kind == "id" and toks[j + 1].text == "="
                   and toks[j + 2].kind == "str" and toks[j + 3].text in (";", ",", ")")):
                declared.setdefault(_name(toks[j]), []).append(toks[j + 2])
                if toks[j + 3].text != ",":
                    break
                j += 4
    return {name: found[0] for name, found in declared.items()
            if len(found) == 1 and uses[name] == 1 + as_file[name]}


def _arguments(toks: list[vlex.Token], i: int) -> list[list[vlex.Token]] | None:
    """Arguments of a call whose name is ``toks[i]``: None when no ``(`` follows, ``[]``
    when the list is longer than the lookahead (cannot be checked)."""
    if i + 1 >= len(toks) or toks[i + 1].text != "(":
        return None
    args: list[list[vlex.Token]] = []
    current: list[vlex.Token] = []
    depth = 0
    for tok in toks[i + 2 : i + 2 + _CALL_LOOKAHEAD]:
        if tok.kind == "punct":
            if tok.text == "(":
                depth += 1
            elif tok.text == ")" and depth:
                depth -= 1
            elif depth == 0:
                args.append(current)
                if tok.text == ")":
                    return args
                current = []
                continue
        current.append(tok)
    return []


# -- pyslang's views ---------------------------------------------------------------------


def _pyslang_views(scratch: Path, name: str, task: Task | None, limits: CheckLimits,
                   sandboxed: bool = False, view: Preprocessed | None = None) -> list[str]:
    """Run the evaluator's own pyslang parses of the testbench (and of Verilator's
    ``view``, when there is one) in a limited child, in the OS sandbox when
    ``sandboxed``."""
    spec = {
        "tb": name,
        "rtl": [f.name for f in task.rtl_files] if task else [],
        "include_dirs": search_dirs(task.rtl_files, task.include_dirs) if task else ["."],
        "defines": dict(task.defines) if task else {},
        "compile_files": list(task.compile_files) if task else [],
        "top": task.dut_module_name if task else "",
        "view": [f"../{_PP_OUT}", view.tb_offset] if view is not None else None,
    }
    run = run_limited(
        [sys.executable, "-m", "llm4cov.sim.safety.ppguard", json.dumps(spec)],
        cwd=str(workdirs.sources(scratch)),
        workdir=str(scratch),
        env=host_env(_PYTHON_ENV),
        timeout_s=limits.timeout_s,
        limits=Limits(limits.cpu_s, limits.parse_memory_bytes),
        output_cap=64 * 1024,
        sandbox=python_sandbox() if sandboxed else None,
    )
    last = run.output.strip().splitlines()[-1:] if run.output.strip() else []
    if run.timed_out or run.returncode != 0 or not last:
        return [f"{name}: {EXCEEDED} (the pyslang parse of the testbench went past "
                f"{limits.cpu_s} s CPU or {limits.parse_memory_bytes >> 20} MiB)"]
    return [f"{name}: `include of \"{path}\" reads a file outside the work dir"
            for path in json.loads(last[0])]
