"""Coverage holes -> formal goals: markers placed in a working copy of the RTL.

Each uncovered item (``Observation.uncovered`` or the whole hole list of
:func:`llm4cov.sim.model.coverage.uncovered_items`: file, line, kind and its typed construct,
``UncoveredItem.typed``) becomes one or more *goals*, each a labelled immediate check
placed where the simulator counts the point:

- a branch or block never taken/executed (``then``/``else`` of an ``if``, a ``case``
  item, an ``elsif`` block): ``LABEL: cover (1'b1);`` as the first statement of that
  branch (the statement is wrapped as ``begin ... end``; a missing ``else`` is added);
- an expression term never seen: ``LABEL: cover (TERM);`` just before the statement that
  evaluates it (same control context), or at module level for continuous assignments;
- a toggle never seen (one goal per bit and direction): a shadow register of the bit,
  clocked by the module's clock, and ``cover (!prev && bit)`` (``0->1``) at module level;
  in a module without a clock the value alone (``cover (bit)`` for ``0->1``, ``cover
  (!bit)`` for ``1->0``): consecutive replays then make the toggle.

The statement is found with pyslang on each file's own syntax tree (byte offsets, so
non-ASCII text is safe). In ``prove`` mode each goal is ``assert (!(COND))``: proving it
means the point is unreachable. Items that cannot be placed (a ``?:`` arm, an FSM or
user point, a field of a structured signal) are returned with the reason.
Goals are built from the typed construct alone (:class:`~llm4cov.sim.model.construct.Construct`:
the line of the ``if`` an arm belongs to, the arm, the expression's terms, the toggled
signal, bits and direction), never from the item's wording: rewording a miss
(``sim/model/wording.py``) changes no goal.

Each file is parsed with the macros it sees (the task's defines, then the
`` `define``s of the RTL files it `` `include``s, found by name: no include is opened
from disk), and a token from a macro expansion is placed at the macro's use in the
file's own text, so `` `CMD_GO: st <= st_a;`` gets its ``begin`` before ``st``. The
working copy is also made fit for the formal model: delays (``#1``) are blanked and a
lone ``negedge`` clock beside ``posedge`` ones becomes ``posedge`` (same length, so
offsets never move), each with a note (:attr:`Placement.notes`).
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyslang
from pyslang import parsing, syntax

from llm4cov.formal.rtl_file import RtlFile, header_of
from llm4cov.sim.analysis.hints import syntax_tokens
from llm4cov.sim.model.construct import (
    Construct,
    ConstructKind,
    term_condition,
    toggle_bits,
    toggle_directions,
)
from llm4cov.sim.model.metrics import BRANCH, EXPR, LINE, TOGGLE
from llm4cov.sim.model.observation import UncoveredItem
from llm4cov.tasks.hdl import parse_tree
from llm4cov.tasks.model import SourceFile

K = syntax.SyntaxKind
_BRANCH_KINDS = (ConstructKind.IF_ARM, ConstructKind.CASE_ITEM, ConstructKind.TERNARY_ARM,
                 ConstructKind.BLOCK)


@dataclass(frozen=True)
class Goal:
    """One formal goal: ``label`` in the working copy, the item it stands for, what it
    checks (``what``: e.g. ``then branch``, ``q[3] 0->1``) and its coverage metric."""

    label: str
    item: UncoveredItem
    what: str
    metric: str


@dataclass
class Placement:
    """The result of :func:`place_goals`: marked files, goals, and unplaced items."""

    files: list[SourceFile]
    goals: list[Goal] = field(default_factory=list)
    unplaced: list[tuple[UncoveredItem, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rejected: list[tuple[Goal, str]] = field(default_factory=list)
    """Goals not written because ``place_goals(reject=...)`` named them, with the reason
    (their labels keep their numbers: the other labels do not move)."""
    spans: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)
    """Per marked file, the byte spans ``(start, end, label)`` of the text written for
    each goal (:mod:`llm4cov.formal.goalcheck` maps a compiler's error to its goal)."""


@dataclass(frozen=True)
class _Edit:
    """An insertion; edits at one offset are laid out in ascending ``order``: closing
    ``end``s innermost first (an added ``else`` just before the ``end`` of a wrap of its
    own ``if``), then opening ``begin``s, then module-level code."""

    offset: int
    order: tuple[int, int, int]
    text: str
    label: str = ""
    """The goal the text is written for (empty: shared structure, the reset code)."""


@dataclass(frozen=True)
class Term:
    """A term's condition read by pyslang: its syntax ``error`` (empty: none) and the
    identifiers it names."""

    error: str
    names: frozenset[str]


@functools.lru_cache(maxsize=4096)
def read_term(cond: str) -> Term:
    """``cond`` parsed by pyslang as the condition of an immediate ``cover`` (alone:
    no macro, no include): the first syntax error, if any, and its identifiers."""
    tree = parse_tree(f"module llm4cov_term;\nalways @* begin llm4cov_t: cover ({cond});"
                      " end\nendmodule\n", "llm4cov_term.sv")
    error = ""
    for diag in tree.diagnostics:
        if diag.isError():
            error = "slang: " + pyslang.DiagnosticEngine(tree.sourceManager).formatMessage(diag)
            break
    names = frozenset(t.valueText for t in syntax_tokens(tree.root)
                      if t.kind == parsing.TokenKind.Identifier)
    return Term(error, names - {"llm4cov_term", "llm4cov_t"})


_MACRO_TEXT = "the statement is not in the file's own text (a macro body)"
_IN_LOOP = ("the statement lies in a procedural loop: its goal's label would repeat on "
            "every iteration (Yosys refuses a repeated label)")
_LOOPS = frozenset({K.ForLoopStatement, K.ForeachLoopStatement, K.ForeverStatement,
                    K.LoopStatement, K.DoWhileStatement})


def _unplaceable(file: RtlFile, at, *spanned) -> str | None:
    """Why no goal can go at the statement ``at``: a node of ``spanned`` is not in the
    file's own text (a macro body), or ``at`` lies in a procedural loop; None: it can."""
    if any(file.span(node) is None for node in spanned):
        return _MACRO_TEXT
    return _IN_LOOP if _in_loop(at) else None


def _in_loop(node) -> bool:
    """Whether ``node`` lies in a loop statement of its procedural block (a procedural
    loop is unrolled in the formal model: a label in its body repeats)."""
    parent = node.parent
    while parent is not None and parent.kind not in (K.ModuleDeclaration, K.GenerateBlock):
        if parent.kind in _LOOPS:
            return True
        parent = parent.parent
    return False


_CHAINED = re.compile(r"\[\s*(?P<a>\d+)\s*:\s*(?P<b>\d+)\s*\]\s*\[\s*(?P<k>\d+)\s*\]")


def _fold_selects(expr: str) -> str:
    """``x[14:6][4]`` (Verilator's wording of a bit of a part-select) as ``x[10]``: a
    select after a range select is not SystemVerilog."""
    def fold(m: re.Match) -> str:
        a, b, k = int(m["a"]), int(m["b"]), int(m["k"])
        return f"[{b + k if a >= b else b - k}]"
    return _CHAINED.sub(fold, expr)


def branch_condition(item: UncoveredItem) -> str | None:
    """The SystemVerilog condition of an expression-term item, or None when its row was
    not read (:func:`llm4cov.sim.model.construct.term_condition` on ``item.typed``; a bit of
    a part-select is folded, ``x[14:6][4]`` -> ``x[10]``)."""
    cond = term_condition(item.typed)
    return _fold_selects(cond) if cond is not None else None


def toggle_targets(item: UncoveredItem) -> tuple[str, list[int], list[str]] | None:
    """``(signal, bits, directions)`` of a toggle item (bits ``[-1]`` = the whole 1-bit
    signal; ``signal`` keeps unpacked indices: ``mem[3]`` of ``mem[3][7:4]``), or None
    when it is not a toggle of a plain or array signal (``s.f[2]``)."""
    typed = item.typed
    if not typed.plain_signal():
        return None
    return typed.signal, toggle_bits(typed), toggle_directions(typed)


class _Placer:
    def __init__(self, files: list[SourceFile], mode: str, max_goals: int,
                 keep: set[str] | None, extra: dict[str, str],
                 defines: dict[str, str] | None = None,
                 reject: Mapping[str, str] | None = None):
        by_name = {f.name: f for f in files}
        macros: dict[str, list[str]] = {}
        self.files = {f.name: RtlFile(f, header_of(f, by_name, defines, macros)) for f in files}
        self.sources = files
        self.mode = mode
        self.max_goals = max_goals
        self.keep = keep
        self.reject = reject or {}
        self.edits: dict[str, list[_Edit]] = defaultdict(list)
        # module-level code: (goal label or "", line)
        self.module_code: dict[tuple[str, int], list[tuple[str, str]]] = defaultdict(list)
        self.result = Placement(files=files)
        for file in self.files.values():
            for m in file.modules:
                if m.header.name.valueText in extra:
                    key = (file.name, m.sourceRange.start.offset)
                    self.module_code[key].append(("", extra[m.header.name.valueText]))

    def emits(self, label: str) -> bool:
        return label not in self.reject and (self.keep is None or label in self.keep)

    def check(self, label: str, cond: str) -> str:
        if not self.emits(label):
            return ""
        if self.mode == "cover":
            return f"{label}: cover ({cond});"
        return f"{label}: assert (!({cond}));"

    def new_goal(self, item: UncoveredItem, what: str, metric: str) -> str:
        label = f"llm4cov_g{len(self.result.goals)}"
        self.result.goals.append(Goal(label, item, what, metric))
        return label

    def wrap(self, file: RtlFile, stmt, prefix: str, label: str = "") -> None:
        span = file.span(stmt)
        if not prefix or span is None:
            return
        start, end = span
        self.edits[file.name].append(_Edit(start, (2, 0, 0), f"begin {prefix} ", label))
        self.edits[file.name].append(_Edit(end, (0, -start, 0), " end"))

    def place(self, item: UncoveredItem) -> str | None:
        """Place ``item``'s goals; returns why it cannot be placed, or None."""
        file = self.files.get(item.file)
        if file is None:
            return f"file {item.file!r} is not among the RTL files"
        if len(self.result.goals) >= self.max_goals:
            return f"goal budget of {self.max_goals} per job used up"
        if item.kind in (LINE.name, BRANCH.name) and item.typed.kind in _BRANCH_KINDS:
            return self.place_branch(file, item, item.typed)
        if item.kind == EXPR.name:
            return self.place_expr(file, item)
        if item.kind == TOGGLE.name:
            return self.place_toggle(file, item)
        return f"no formal goal for {item.kind} points"

    def place_branch(self, file: RtlFile, item: UncoveredItem, typed: Construct) -> str | None:
        """An ``if`` arm, a case item or a block: ``then``/``else`` of the ``if`` at
        ``typed.at`` (else: of an ``if`` whose ``else`` is at the item's line), the case
        item at the item's line, or the statement there (a block: the ``if`` starting
        there counts as its then arm)."""
        if typed.kind is ConstructKind.TERNARY_ARM:
            return "?: arms are not placed (no statement to mark)"
        if_arm = typed.kind is ConstructKind.IF_ARM
        if_line = typed.at if if_arm and typed.at else item.line
        wants_else = if_arm and typed.arm == "else"
        if typed.kind is ConstructKind.CASE_ITEM:
            items = file.case_items.get(item.line)
            if not items:
                return f"no case item at {item.file}:{item.line}"
            if why := _unplaceable(file, items[0], items[0].clause):
                return why
            label = self.new_goal(item, "case item", item.kind)
            self.wrap(file, items[0].clause, self.check(label, "1'b1"), label)
            return None
        cands = file.ifs.get(if_line) or (file.elses.get(item.line) if wants_else else None)
        if cands:
            cond_stmt = cands[0]
            orelse = () if cond_stmt.elseClause is None else (cond_stmt.elseClause.clause,)
            if why := _unplaceable(file, cond_stmt, cond_stmt, cond_stmt.statement, *orelse):
                return why
            if wants_else:
                return self.place_else(file, item, cond_stmt)
            label = self.new_goal(item, "then branch", item.kind)
            self.wrap(file, cond_stmt.statement, self.check(label, "1'b1"), label)
            return None
        stmts = file.statements.get(item.line)
        if not stmts:
            return f"no statement at {item.file}:{item.line}"
        if why := _unplaceable(file, stmts[0], stmts[0]):
            return why
        label = self.new_goal(item, "block", item.kind)
        self.wrap(file, stmts[0], self.check(label, "1'b1"), label)
        return None

    def place_else(self, file: RtlFile, item: UncoveredItem, cond_stmt) -> str | None:
        label = self.new_goal(item, "else branch", item.kind)
        marker = self.check(label, "1'b1")
        if cond_stmt.elseClause is not None:
            self.wrap(file, cond_stmt.elseClause.clause, marker, label)
            return None
        if not marker:
            return None
        then = cond_stmt.statement
        self.wrap(file, then, "/* llm4cov */")  # a nested if must not take the new else
        start, end = file.span(cond_stmt) or (0, 0)
        self.edits[file.name].append(_Edit(end, (0, -start, -1), f" else begin {marker} end",
                                           label))
        return None

    def place_expr(self, file: RtlFile, item: UncoveredItem) -> str | None:
        """A term before the statement that evaluates it, else at module level: not
        placed when it is no SystemVerilog expression or, at module level, names what
        is declared only in a function, task or generate block around its line."""
        cond = branch_condition(item)
        if cond is None:
            return "expression term wording not understood"
        term = read_term(cond)
        if term.error:
            return f"not placed: the term {cond} is not a SystemVerilog expression ({term.error})"
        stmts = [s for s in file.ifs.get(item.line) or file.statements.get(item.line) or []
                 if file.span(s) is not None]
        if stmts:
            if why := _unplaceable(file, stmts[0]):
                return why
            label = self.new_goal(item, f"term {cond}", "expr")
            self.wrap(file, stmts[0], self.check(label, cond), label)
            return None
        module = self.module_for_line(file, item.line)
        if module is None:
            return f"line {item.line} is outside every module"
        hidden = {n: where for n, where in file.local_names(item.line).items()
                  if n in term.names}
        if hidden:
            return ("not placed: the term names "
                    + ", ".join(f"{n} (declared in {w})" for n, w in sorted(hidden.items()))
                    + ", not visible at module level where its goal would go")
        label = self.new_goal(item, f"term {cond}", "expr")
        if self.emits(label):
            self.module_code[(file.name, module.sourceRange.start.offset)].append(
                (label, f"  always @* begin {self.check(label, cond)} end"))
        return None

    def place_toggle(self, file: RtlFile, item: UncoveredItem) -> str | None:
        target = toggle_targets(item)
        if target is None:
            return "toggle of a structured or array signal is not placed"
        sig, bits, dirs = target
        module = self.module_for_line(file, item.line)
        if module is None:
            return f"line {item.line} is outside every module"
        # None: a combinational module, value goals
        clock = file.clock_of(module) or self.port_clock(module)
        code = self.module_code[(file.name, module.sourceRange.start.offset)]
        for bit in bits:
            ref = sig if bit < 0 else f"{sig}[{bit}]"
            for direction in dirs:
                if len(self.result.goals) >= self.max_goals:
                    return None
                label = self.new_goal(item, f"{ref} {direction}", "toggle")
                if not self.emits(label):
                    continue
                rise = direction == "0->1"
                if clock is None:
                    cond = ref if rise else f"!{ref}"
                else:
                    prev = f"{label}_prev"
                    cond = f"!{prev} && {ref}" if rise else f"{prev} && !{ref}"
                    code.append((label, f"  reg {prev} = 1'b0;"))
                    code.append((label, f"  always @(posedge {clock}) {prev} <= {ref};"))
                code.append((label, f"  always @* begin {self.check(label, cond)} end"))
        return None

    @functools.cached_property
    def clock_names(self) -> frozenset[str]:
        """Every clock (first edge signal) of the design's modules."""
        return frozenset(c for f in self.files.values() for c in f.clocks.values())

    def port_clock(self, module) -> str | None:
        """For a module with no edge of its own (its registers are in submodules): a
        port named as a clock the design's other modules use (``clk``), so that its
        toggles are seen between two of that clock's edges, not as values."""
        used = self.clock_names
        if module.header.ports is None or not used:
            return None
        names = {t.valueText for t in syntax_tokens(module.header.ports)}
        return next((c for c in sorted(used) if c in names), None)

    def module_for_line(self, file: RtlFile, line: int):
        for m in file.modules:
            first = file._line(m.getFirstToken())
            last = file._line(m.getLastToken())
            if first <= line <= last:
                return m
        return None

    def finish(self) -> list[SourceFile]:
        for (name, start), code in self.module_code.items():
            file = self.files[name]
            module = next(m for m in file.modules if m.sourceRange.start.offset == start)
            end_token = module.getLastToken()  # `endmodule` (or its label)
            if end_token.valueText != "endmodule":
                end_token = module.endmodule
            at = file.start(end_token)
            if at is None:
                continue
            self.edits[name].append(_Edit(at, (3, 0, -1), "\n  // llm4cov formal goals\n"))
            for n, (label, line) in enumerate(code):
                self.edits[name].append(_Edit(at, (3, 0, n), line + "\n", label))
        out = []
        removed = {name: len(f.delays) for name, f in self.files.items() if f.delays}
        if removed:
            self.result.notes.append(
                "timing controls ignored in the formal model: "
                + ", ".join(f"{n} delay{'s' if n > 1 else ''} (`#...`) in {name}"
                            for name, n in removed.items())
                + " removed from its working copy (a BMC steps from clock edge to clock"
                " edge: a delay within a cycle does not change what it reaches; the"
                " simulation keeps them)")
        flips = {name: f.negedge_clocks for name, f in self.files.items()
                 if f.negedge_clocks} if any(f.posedges for f in self.files.values()) else {}
        if flips:
            self.result.notes.append(
                "negedge-clocked blocks clocked at posedge in the formal model: "
                + ", ".join(f"{len(at)} in {name}" for name, at in flips.items())
                + " (the design also uses posedge; one solver step steps every flip-flop,"
                " and a clock used with both edges cannot be modelled so)")
        for source in self.sources:
            edits = self.edits.get(source.name)
            delays = self.files[source.name].delays
            flip = flips.get(source.name, [])
            if not edits and not delays and not flip:
                out.append(source)
                continue
            data = _blank(self.files[source.name].data, delays)
            for at in flip:
                data = data[:at] + b"posedge" + data[at + 7:]
            data, spans = _inserted(data, edits or [])
            if spans:
                self.result.spans[source.name] = spans
            out.append(source.model_copy(update={
                "content": data.decode("utf-8", errors="surrogateescape")}))
        return out


def _inserted(data: bytes, edits: list[_Edit]) -> tuple[bytes, list[tuple[int, int, str]]]:
    """``data`` with ``edits`` inserted (at one offset in ascending ``order``, the
    later-made edit first among equals) and the byte spans of the labelled ones in the
    result."""
    out = bytearray()
    spans = []
    done = 0
    ranked = sorted(enumerate(edits), key=lambda ie: (ie[1].offset, ie[1].order, -ie[0]))
    for _, e in ranked:
        out += data[done:e.offset]
        done = e.offset
        start = len(out)
        out += e.text.encode()
        if e.label:
            spans.append((start, len(out), e.label))
    out += data[done:]
    return bytes(out), spans


def _blank(data: bytes, spans: list[tuple[int, int]]) -> bytes:
    """``data`` with every byte of ``spans`` but line ends turned into a space (offsets
    and line numbers stay as they were)."""
    if not spans:
        return data
    buf = bytearray(data)
    for start, end in spans:
        for i in range(start, end):
            if buf[i] not in (0x0A, 0x0D):
                buf[i] = 0x20
    return bytes(buf)


def place_goals(
    files: list[SourceFile], items: list[UncoveredItem], mode: str = "cover",
    max_goals: int = 400, keep: set[str] | None = None, extra: dict[str, str] | None = None,
    defines: dict[str, str] | None = None, reject: Mapping[str, str] | None = None,
) -> Placement:
    """Mark every item of ``items`` in copies of ``files`` (``mode`` ``cover`` or
    ``prove``), at most ``max_goals`` goals. Labels are numbered in item order, so the
    same items give the same labels; with ``keep`` only those labels are written (all
    goals are still listed). ``extra`` maps a module name to code inserted before its
    ``endmodule`` (the reset assumption); ``defines``: the task's macros. Each file is
    parsed with the macros it sees (``defines``, then those of the RTL files it
    `` `include``s), and insertions land in its own text, also where a statement or a
    case label comes from a macro. Delays (``#1``, ``<= #1``, ``assign #2``) are
    blanked out of the copies, with a note in :attr:`Placement.notes`: a BMC steps
    clock edges, so they do not change what it reaches. The inputs are not modified.
    ``reject``: labels (of these items, from an earlier call) not to write, with the
    reason; they go to :attr:`Placement.rejected`, and the other labels keep theirs.

    Raises:
        ValueError: ``mode`` is neither ``cover`` nor ``prove``.
    """
    if mode not in ("cover", "prove"):
        raise ValueError(f"mode must be cover or prove, got {mode!r}")
    placer = _Placer(files, mode, max_goals, keep, extra or {}, defines, reject)
    for item in items:
        reason = placer.place(item)
        if reason is not None:
            placer.result.unplaced.append((item, reason))
    placer.result.files = placer.finish()
    result = placer.result
    if reject:
        result.rejected = [(g, reject[g.label]) for g in result.goals if g.label in reject]
        result.goals = [g for g in result.goals if g.label not in reject]
    return result
