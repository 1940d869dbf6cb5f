"""SBY jobs: the ``.sby`` file, its log, and Yosys witness traces (``.yw``).

A job reads the marked RTL with ``read_slang`` (SystemVerilog; ``-j 1`` because the
WebAssembly build has no threads), falling back to ``read_verilog -formal -sv`` when
slang rejects it, elaborates the DUT as the top with the task's parameters, and pins
every register without an initial value to zero (``setundef -zero -init``), the same
convention as the evaluator (Verilator ``+verilator+rand+reset+0``). SBY's default
single-clock mode makes one solver step one clock edge. Engine: ``smtbmc yices``
(bounded model checking for ``cover``, k-induction for ``prove``; the WebAssembly build
has no ABC, so no PDR).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from llm4cov.formal.soundness import SIM_DEFINES, SLANG_UNDEFINES
from llm4cov.tasks.model import SourceFile, TaskError
from llm4cov.tasks.names import source_arg

_REACHED = re.compile(r"Reached cover statement (?:in step (?P<s1>\d+) at .*?: (?P<l1>\S+)"
                      r"|at .*?: (?P<l2>\S+) in step (?P<s2>\d+))")
_TRACE_YW = re.compile(r"Writing trace to Yosys witness file: (?P<path>\S+)")
_CHECKING = re.compile(r"Checking (?:cover reachability|assumptions|assertions) in step (\d+)")
_FAILED = re.compile(
    r"engine_\d+\.(?P<phase>basecase|induction): .*Assert failed in .*?: (?P<label>\S+)")
_DONE = re.compile(r"DONE \((?P<status>[A-Z]+)")
_ERROR = re.compile(r"(ERROR: .*|\S+:\d+:\d+: error: .*)")


def read_script(
    files: list[SourceFile], top: str, parameters: dict[str, str] | None = None,
    defines: dict[str, str] | None = None, include_dirs: list[str] | None = None,
    frontend: str = "slang",
) -> list[str]:
    """The Yosys commands that read ``files`` (in that order, ``-I`` list
    ``include_dirs``) with ``frontend`` (``slang``: ``read_slang``; ``verilog``: Yosys'
    own parser) and elaborate ``top`` with ``parameters``; the macros are the
    simulator's, then the task's ``defines`` (:mod:`llm4cov.formal.soundness`)."""
    names = " ".join(script_word(source_arg(f.name)) for f in files)
    opts = [f"-I{script_word(d)}" for d in include_dirs or []]
    opts += [f"-D{script_word(f'{k}={v}')}" for k, v in {**SIM_DEFINES, **(defines or {})}.items()]
    if frontend == "slang":
        opts += [f"-U {m}" for m in SLANG_UNDEFINES]
        opts += [f"-G {script_word(f'{k}={v}')}" for k, v in (parameters or {}).items()]
        read = [f"read_slang -j 1 --top {script_word(top)} {' '.join(opts)} {names}"]
    else:
        read = [f"read_verilog -formal -sv {' '.join(opts)} {names}"]
        read += [f"chparam -set {script_word(k)} {script_word(v)} {script_word(top)}"
                 for k, v in (parameters or {}).items()]
    return [*read, f"prep -top {script_word(top)}"]


#: What one word of a Yosys or SBY script may hold: no white space (a word break), no
#: ``;`` (Yosys ends a command there), ``#`` (a comment), quote or backslash (Yosys reads
#: them itself), control character (a new line of the ``.sby`` file) or ``[``-led
#: section header.
_WORD = re.compile(r"[A-Za-z0-9_$.,:+\-*/=%&|^~!?<>(){}'@\[\]]+")


def script_word(text: str) -> str:
    """``text`` as one word of a Yosys or SBY script, unchanged.

    Raises:
        TaskError: a character the script would read as structure (a task's define or
            parameter value with ``;``, ``#``, a quote, a space or a line break had run
            Yosys commands and SBY's Python of its own, forging "proven unreachable").
    """
    if not _WORD.fullmatch(text):
        raise TaskError(f"{text[:80]!r} cannot be passed to the formal tools: a value with "
                        "white space, `;`, `#`, a quote or a backslash would be read as "
                        "script structure (write the value without them)")
    return text


def job_text(
    files: list[SourceFile], top: str, mode: str, depth: int,
    parameters: dict[str, str] | None = None, defines: dict[str, str] | None = None,
    include_dirs: list[str] | None = None, frontend: str = "slang",
    copied: list[SourceFile] | None = None, model: str | None = None,
) -> str:
    """The ``.sby`` file of one job that compiles ``files`` (in that order) with the
    ``-I`` list ``include_dirs``; ``frontend`` is ``slang`` (``read_slang``) or
    ``verilog`` (Yosys' own parser).

    Paths are relative to the work dir and keep their folders: SBY copies every file
    of ``copied`` (default ``files``; give every RTL file, headers included) to the
    same relative path in the job's ``src/`` (a ``[files]`` line ``DEST SOURCE``: a
    bare name would be copied by its base name, and ``src/x.sv`` or
    `` `include "cc/r.svh"`` would not be found).

    Traces are written as Yosys witnesses only (``vcd off``: writing a VCD per trace
    took about half of a cover job's time with a hundred traces).

    ``model``: an RTLIL file of the work dir to read instead of ``files`` (an
    elaborated, flattened model with its initial state set: a continuation,
    :mod:`llm4cov.formal.continuation`).
    """
    if model is not None:
        script = [f"read_rtlil {script_word(model)}", "setundef -zero -init"]
        copy = [model]
    else:
        script = [*read_script(files, top, parameters, defines, include_dirs, frontend),
                  "setundef -zero -init"]
        copy = [f.name for f in copied or files]
    return "\n".join([
        "[options]", f"mode {mode}", f"depth {depth}", "vcd off", "",
        "[engines]", "smtbmc yices", "",
        "[script]", *script, "",
        "[files]", *(f"{script_word(name)} {script_word(name)}" for name in copy), "",
    ])


@dataclass
class JobResult:
    """What one SBY run said.

    ``status``: SBY's final word (``PASS``, ``FAIL``, ``UNKNOWN``, ``ERROR``,
    ``TIMEOUT``); ``reached``: cover label -> (step, witness path relative to the work
    dir); ``failed``: assertion labels that failed, by phase (``basecase``,
    ``induction``); ``depth``: the deepest step checked (-1: none); ``error``: the first
    error line. A ``prove`` job whose base case failed (an assertion violated within k
    steps from the initial state: its goal is reachable) gives that run's witness
    (``base_trace``, relative to the work dir) and the step it failed in
    (``base_step``).
    """

    status: str
    reached: dict[str, tuple[int, str]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    depth: int = -1
    error: str = ""
    base_trace: str = ""
    base_step: int = -1

    @property
    def cycles(self) -> int:
        """How many cycles (steps 0..depth) the solver checked; 0 when none."""
        return self.depth + 1


def parse_log(text: str, job_dir: str) -> JobResult:
    """Parse SBY's output (its console log) for the job in ``job_dir``."""
    result = JobResult(status="ERROR")
    pending: list[tuple[str, int]] = []
    base_step = -1
    for line in text.splitlines():
        if ".basecase:" in line:
            if (m := _CHECKING.search(line)) and "assertions" in line:
                base_step = int(m.group(1))
            elif m := _TRACE_YW.search(line):
                result.base_trace = f"{job_dir}/{m['path']}"
            elif _FAILED.search(line):
                result.base_step = base_step
        if m := _REACHED.search(line):  # the label may carry its instance path
            pending.append(((m["l1"] or m["l2"]).rsplit(".", 1)[-1], int(m["s1"] or m["s2"])))
        elif (m := _TRACE_YW.search(line)) and pending:
            for label, step in pending:
                result.reached.setdefault(label, (step, f"{job_dir}/{m['path']}"))
            pending = []
        elif m := _CHECKING.search(line):
            result.depth = max(result.depth, int(m.group(1)))
        elif m := _FAILED.search(line):
            # the two phases run in parallel and their lines come in either order; a
            # base-case failure (reachable within k) decides over an induction one
            label = m["label"].rsplit(".", 1)[-1]
            if m["phase"] == "basecase" or label not in result.failed:
                result.failed[label] = m["phase"]
        elif m := _DONE.search(line):
            result.status = m["status"]
        if not result.error and (m := _ERROR.search(line)) and "engine_" not in line:
            result.error = m.group(1)[:300]
    return result


def read_witness(path: Path, inputs: set[str]) -> list[dict[str, int]]:
    """Per-step values of the top-level ``inputs`` in a Yosys witness file.

    A step's ``bits`` string holds every signal of the ``signals`` list, the first
    signal at the right end (least significant bit last); ``x``/``?`` read as 0.

    Raises:
        OSError, ValueError: the file is missing or not a witness trace.
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    signals = data["signals"]
    steps: list[dict[str, int]] = []
    for step in data["steps"]:
        bits = step["bits"][::-1]
        values: dict[str, int] = {}
        pos = 0
        for sig in signals:
            width = int(sig["width"])
            chunk = bits[pos: pos + width]
            pos += width
            path_parts = sig["path"]
            if sig.get("init_only") or len(path_parts) != 1:
                continue
            name = path_parts[0].removeprefix("\\")
            if name not in inputs:
                continue
            value = int("".join("1" if c == "1" else "0" for c in chunk[::-1]) or "0", 2)
            values[name] = values.get(name, 0) | (value << int(sig.get("offset", 0)))
        steps.append(values)
    return steps
