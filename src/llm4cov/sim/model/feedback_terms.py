"""Coverage points -> the RTL constructs they count, at the point's own source line.

Verilator names points by its internal construct (``'elsif'``, ``'cond_then'``,
``((timer == 4'h9)==1) => 1``) and gives an ``else`` the line of its ``if``. This
module maps each point back to the RTL construct with pyslang (syntax only, no
elaboration): :meth:`SourceIndex.construct` gives its typed
:class:`~llm4cov.sim.model.construct.Construct` (an ``if`` arm with its condition, a ``case``
item with its label, a ``?:`` arm, an expression term with its terms, a toggle bit,
...) and the item's own line; :meth:`SourceIndex.phrase` words it through the phrase
table (:func:`llm4cov.sim.model.wording.render`), e.g. ``then branch of the if at
uart_tx.v:89 never taken``.

Verilator's point naming (observed on the pinned 5.049 build, ``tests/test_feedback_terms.py``):
a branch/line point with comment ``if`` sits at the ``if`` keyword, ``else`` one column
to its right (no ``S`` key when the ``if`` has no ``else``), ``elsif`` is the then-block
of an ``if`` whose ``else`` is another ``if``, ``case`` sits at the item's colon,
``cond_then``/``cond_else`` inside a ``?:``, and expression points at the operator (or
the first token of a one-term expression).

A condition whose identifiers are all parameters (``if (MODE == 1)``) is constant once
the design is elaborated, so one of its branches can never be taken: such constructs
are ``param_only`` and their wording ends with :data:`~llm4cov.sim.model.wording.CONSTANT_NOTE`
- a known source of false holes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

import pyslang
from pyslang import syntax

from llm4cov.sim.model.construct import TOGGLE_POINT, Construct, strip_parens
from llm4cov.sim.model.construct import ConstructKind as Kind
from llm4cov.sim.model.metrics import BRANCH, COVERGROUP, EXPR, FSM, LINE, TOGGLE
from llm4cov.sim.model.wording import CONSTANT_NOTE, Phrase, render
from llm4cov.tasks.hdl import parse_tree

__all__ = ["CONSTANT_NOTE", "Phrase", "SourceIndex", "design_time_unit", "render",
           "sim_time_text"]

K = syntax.SyntaxKind
IDENTIFIER = pyslang.parsing.TokenKind.Identifier
_MAX_EXPR = 60


@dataclass(frozen=True)
class _If:
    line: int
    col: int
    else_line: int | None
    predicate: str
    constant: bool


@dataclass(frozen=True)
class _CaseItem:
    line: int
    col: int  # the colon
    case_line: int
    label: str


@dataclass(frozen=True)
class _Ternary:
    line: int
    col: int  # the predicate's first column
    predicate: str
    constant: bool


@dataclass
class _FileIndex:
    ifs: list[_If]
    case_items: list[_CaseItem]
    ternaries: list[_Ternary]
    exprs: dict[tuple[int, int], tuple[str, bool]]  # (line, col) -> (text, constant)


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def _text(node: object) -> str:
    """The source text of ``node`` on one line, without comments (a case item's
    ``// synopsys parallel_case`` is trivia of its first token), at most ``_MAX_EXPR``."""
    text = strip_parens(" ".join(_COMMENT.sub(" ", str(node)).split()))
    return text if len(text) <= _MAX_EXPR else text[: _MAX_EXPR - 3] + "..."


@functools.lru_cache(maxsize=64)
def _index(text: str, name: str) -> _FileIndex:
    tree = parse_tree(text, name)
    sm = tree.sourceManager
    params = _parameter_names(tree)
    index = _FileIndex([], [], [], {})

    def pos(token: pyslang.parsing.Token) -> tuple[int, int]:
        return sm.getLineNumber(token.location), sm.getColumnNumber(token.location)

    def constant(node: object) -> bool:
        names: set[str] = set()

        def collect(n: object) -> bool:
            if isinstance(n, pyslang.parsing.Token) and n.kind == IDENTIFIER:
                names.add(n.valueText)
            return True

        node.visit(collect)  # type: ignore[attr-defined]
        return bool(params) and bool(names) and names <= params

    def visit(node: object) -> bool:
        if isinstance(node, pyslang.parsing.Token):
            return True
        kind = node.kind  # type: ignore[attr-defined]
        if kind == K.ConditionalStatement:
            line, col = pos(node.ifKeyword)  # type: ignore[attr-defined]
            clause = node.elseClause  # type: ignore[attr-defined]
            pred = node.predicate  # type: ignore[attr-defined]
            index.ifs.append(_If(line, col, pos(clause.elseKeyword)[0] if clause else None,
                                 _text(pred), constant(pred)))
            index.exprs.setdefault(pos(pred.getFirstToken()), (_text(pred), constant(pred)))
        elif kind == K.CaseStatement:
            case_line = pos(node.caseKeyword)[0]  # type: ignore[attr-defined]
            for item in node.items:  # type: ignore[attr-defined]
                label = ("default" if item.kind == K.DefaultCaseItem
                         else ", ".join(_text(e) for e in item.expressions if hasattr(e, "kind")))
                line, col = pos(item.colon) if hasattr(item, "colon") else pos(
                    item.getFirstToken())
                index.case_items.append(_CaseItem(line, col, case_line, label))
        elif kind == K.ConditionalExpression:
            pred = node.predicate  # type: ignore[attr-defined]
            line, col = pos(pred.getFirstToken())
            index.ternaries.append(_Ternary(line, col, _text(pred), constant(pred)))
            index.exprs.setdefault((line, col), (_text(pred), constant(pred)))
        op = getattr(node, "operatorToken", None)
        if op is not None and kind.name.endswith("Expression") and "Assignment" not in kind.name:
            index.exprs.setdefault(pos(op), (_text(node), constant(node)))
            first = node.getFirstToken()  # type: ignore[attr-defined]
            index.exprs.setdefault(pos(first), (_text(node), constant(node)))
        return True

    tree.root.visit(visit)
    return index


def _parameter_names(tree: syntax.SyntaxTree) -> set[str]:
    names: set[str] = set()

    def visit(node: object) -> bool:
        if isinstance(node, pyslang.parsing.Token):
            return True
        if node.kind == K.ParameterDeclaration:  # type: ignore[attr-defined]
            for decl in node.declarators:  # type: ignore[attr-defined]
                if hasattr(decl, "name"):
                    names.add(decl.name.valueText)
        return True

    tree.root.visit(visit)
    return names


class SourceIndex:
    """Maps the coverage points of one design to their constructs; build once per set
    of sources.

    ``sources`` maps file names as they appear in ``coverage.dat`` to their text. A
    file that is missing or does not parse still gets a plain construct (``condition``
    None, a case item without ``label``).
    """

    def __init__(self, sources: Mapping[str, str]):
        self._sources = dict(sources)

    def _file(self, name: str) -> _FileIndex | None:
        text = self._sources.get(name)
        return _index(text, name) if text is not None else None

    def construct(self, metric: str, file: str, line: int, col: int, comment: str,
                  lines: str = "") -> tuple[Construct, int]:
        """The typed construct of a point and the point's own line (1-based; an
        ``else`` at its keyword) from its ``Point`` fields (``lines`` is Verilator's
        ``S`` key, ``col`` its ``n`` key, 0 when unknown)."""
        idx = self._file(file)
        if metric in (LINE.name, BRANCH.name):
            if comment in ("if", "elsif", "else"):
                return _if_construct(idx, line, col, comment, lines)
            if comment.startswith("case"):
                item = _nearest([c for c in idx.case_items if c.line == line], col) if idx else None
                if item is None:
                    return Construct(kind=Kind.CASE_ITEM, at=line), line
                return Construct(kind=Kind.CASE_ITEM, at=item.case_line, label=item.label), line
            if comment in ("cond_then", "cond_else"):
                tern = _nearest([t for t in idx.ternaries if t.line == line], col) if idx else None
                return Construct(kind=Kind.TERNARY_ARM, at=line,
                                 arm="true" if comment == "cond_then" else "false",
                                 condition=tern.predicate if tern else None,
                                 param_only=bool(tern and tern.constant)), line
            return Construct(kind=Kind.BLOCK, label=comment, lines=lines), line
        if metric == EXPR.name:
            return _expr_construct(idx, line, col, comment), line
        if metric == TOGGLE.name:
            if (m := TOGGLE_POINT.match(comment)) is None:  # no signal, bit, direction
                return Construct(kind=Kind.TOGGLE, label=comment), line
            bit = int(m["bit"]) if m["bit"] is not None else -1
            return Construct(kind=Kind.TOGGLE, signal=m["sig"], bits=(bit,),
                             direction=m["dir"], label=comment), line
        if metric == FSM.name:  # `state::IDLE`, `state::IDLE->RUN`
            variable, named, _ = comment.rpartition("::")
            return Construct(kind=Kind.FSM, label=comment, signal=variable if named else ""), line
        kind = Kind.COVERGROUP_BIN if metric == COVERGROUP.name else Kind.NAMED
        return Construct(kind=kind, label=comment), line

    def phrase(self, metric: str, file: str, line: int, col: int, comment: str,
               lines: str = "") -> Phrase:
        """The wording and own line of an uncovered point (``Point`` fields, see
        :meth:`construct`)."""
        construct, own = self.construct(metric, file, line, col, comment, lines)
        return Phrase(render(metric, file, construct), own)


def _if_construct(idx: _FileIndex | None, line: int, col: int, comment: str,
                  lines: str) -> tuple[Construct, int]:
    cands = [i for i in idx.ifs if i.line == line] if idx else []
    stmt = _nearest(cands, col if comment != "else" else col - 1)
    fields = {"kind": Kind.IF_ARM, "at": line, "condition": stmt.predicate if stmt else None,
              "param_only": bool(stmt and stmt.constant)}
    if comment != "else":
        return Construct(arm="then", **fields), line
    if (stmt is not None and stmt.else_line is None) or (stmt is None and not lines):
        return Construct(arm="else", has_else=False, **fields), line
    own = stmt.else_line if stmt and stmt.else_line else _first_line(lines, line)
    return Construct(arm="else", **fields), own


def _nearest(cands: list, col: int):
    """The candidate whose column is closest to ``col`` (first on ties), or None."""
    return min(cands, key=lambda c: abs(c.col - col)) if cands else None


def _first_line(lines: str, default: int) -> int:
    head = lines.split("-", 1)[0].split(",", 1)[0]
    return int(head) if head.isdigit() else default


_RESULT = re.compile(r"^(?P<terms>.*)\s=>\s*(?P<result>\S+)$")


def _expr_construct(idx: _FileIndex | None, line: int, col: int, comment: str) -> Construct:
    m = _RESULT.match(comment.strip())
    found = idx.exprs.get((line, col)) if idx else None
    expr, const = found if found else ("", False)
    if m is None:
        return Construct(kind=Kind.EXPR_TERM, expression=expr, row=comment, param_only=const)
    terms = tuple(_split_term(t) for t in _split_and(strip_parens(m["terms"])))
    return Construct(kind=Kind.EXPR_TERM, expression=expr, terms=terms, result=m["result"],
                     row=comment, param_only=const)


def _split_and(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    i = 0
    while i < len(text):
        ch = text[i]
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and text.startswith(" && ", i):
            parts.append(text[start:i])
            start = i = i + 4
            continue
        i += 1
    return [*parts, text[start:]]


def _split_term(term: str) -> tuple[str, str]:
    """``sel==1`` -> (``sel``, ``1``); ``(a == 3)==0`` -> (``a == 3``, ``0``)."""
    depth = 0
    for j in range(len(term) - 2, 0, -1):
        depth += {")": 1, "(": -1}.get(term[j + 1], 0)
        if (depth == 0 and term[j : j + 2] == "==" and term[j - 1] not in "=!<>"
                and term[j + 2 : j + 3] != "="):
            return strip_parens(term[:j]), term[j + 2 :].strip()
    return strip_parens(term), "1"


_TIMESCALE = re.compile(r"`timescale\s+(\d+)\s*([munpf]?s)\b")
_TIMEUNIT = re.compile(r"\btimeunit\s+(\d+)\s*([munpf]?s)\b")
_UNIT_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "fs": 1e-15}


def design_time_unit(testbench: str) -> tuple[str, float]:
    """The testbench top's time unit as text and seconds: its ``timeunit`` declaration,
    else its first `` `timescale``, else Verilator's default ``1ps``."""
    m = _TIMEUNIT.search(testbench) or _TIMESCALE.search(testbench)
    if m is None:
        return "1ps", 1e-12
    return f"{m[1]}{m[2]}", int(m[1]) * _UNIT_SECONDS[m[2]]


def sim_time_text(seconds: float, testbench: str) -> str:
    """Simulated time in the design's time unit, naming the unit and the value in
    engineering units, e.g. ``100 (time unit 1ns) = 100ns``."""
    unit, unit_s = design_time_unit(testbench)
    eng = next((f"{seconds / scale:g}{name}" for name, scale in _UNIT_SECONDS.items()
                if seconds >= scale), f"{seconds / 1e-15:g}fs")
    return f"{seconds / unit_s:.6g} (time unit {unit}) = {eng}"
