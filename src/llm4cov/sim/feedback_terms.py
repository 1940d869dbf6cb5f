"""Uncovered coverage points in an engineer's terms, at the item's own source line.

Verilator names points by its internal construct (``'elsif'``, ``'cond_then'``,
``((timer == 4'h9)==1) => 1``) and gives an ``else`` the line of its ``if``. This
module maps each point back to the RTL construct with pyslang (syntax only, no
elaboration) and words it the way an engineer reads the code:

- ``then branch of the if at uart_tx.v:89 never taken`` / ``else branch of the if at
  uart_tx.v:89 never taken`` (shown at the ``else`` keyword's own line) / ``the if at
  f.v:12 never saw its condition false (it has no else)``;
- ``case item 2'd3 of the case at f.v:20 never executed``;
- ``true arm of the ?: on `go` at f.v:27 never taken``;
- ``` `sel && en` never evaluated to 1 with sel=1, en=1``` and, for a row that is one
  term of a larger condition, that term as the row writes it: ``` `timer == 4'h9`
  never true (term of `timer == 4'd9 || (ped_req && timer >= 4'd2)`)``` (never "the
  whole condition never true": its other terms may have made it true).

Verilator's point naming (observed on the pinned 5.049 build, ``tests/test_feedback_terms.py``):
a branch/line point with comment ``if`` sits at the ``if`` keyword, ``else`` one column
to its right (no ``S`` key when the ``if`` has no ``else``), ``elsif`` is the then-block
of an ``if`` whose ``else`` is another ``if``, ``case`` sits at the item's colon,
``cond_then``/``cond_else`` inside a ``?:``, and expression points at the operator (or
the first token of a one-term expression).

A condition whose identifiers are all parameters (``if (MODE == 1)``) is constant once
the design is elaborated, so one of its branches can never be taken: such items say
``(condition depends only on parameters: constant after elaboration, likely
unreachable)`` - a known source of false holes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass

import pyslang
from pyslang import syntax

from llm4cov.tasks.hdl import parse_tree

K = syntax.SyntaxKind
IDENTIFIER = pyslang.parsing.TokenKind.Identifier
CONSTANT_NOTE = (
    " (condition depends only on parameters: constant after elaboration, likely unreachable)"
)
_MAX_EXPR = 60


@dataclass(frozen=True)
class Phrase:
    """An uncovered point in words: ``detail`` and the item's own ``line`` (1-based)."""

    detail: str
    line: int

    def hit_label(self) -> str:
        """The point named without the miss, for a point that was hit: ``then branch of
        the if at f.v:3``, ```sel && en` true with sel=1, en=1``."""
        text = re.sub(r" never (executed|taken|hit)\b", "", self.detail, count=1)
        return text.replace(" never ", " ", 1)


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
    text = _strip_parens(" ".join(_COMMENT.sub(" ", str(node)).split()))
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
    """Words coverage points of one design; build once per set of sources.

    ``sources`` maps file names as they appear in ``coverage.dat`` to their text. A
    file that is missing or does not parse still gets a plain wording.
    """

    def __init__(self, sources: Mapping[str, str]):
        self._sources = dict(sources)

    def _file(self, name: str) -> _FileIndex | None:
        text = self._sources.get(name)
        return _index(text, name) if text is not None else None

    def phrase(self, metric: str, file: str, line: int, col: int, comment: str,
               lines: str = "") -> Phrase:
        """The wording and own line of an uncovered point (``Point`` fields; ``lines``
        is Verilator's ``S`` key, ``col`` its ``n`` key, 0 when unknown)."""
        idx = self._file(file)
        where = f"{file}:{line}"
        if metric in ("line", "branch"):
            verb = "executed" if metric == "line" else "taken"
            if comment in ("if", "elsif", "else"):
                return self._if_phrase(idx, file, line, col, comment, verb, lines)
            if comment.startswith("case"):
                return self._case_phrase(idx, file, line, col, verb)
            if comment in ("cond_then", "cond_else"):
                tern = _nearest([t for t in idx.ternaries if t.line == line], col) if idx else None
                arm = "true" if comment == "cond_then" else "false"
                on = f" on `{tern.predicate}`" if tern else ""
                note = CONSTANT_NOTE if tern and tern.constant else ""
                return Phrase(f"{arm} arm of the ?:{on} at {where} never {verb}{note}", line)
            span = f" (lines {lines})" if lines else ""
            label = "block" if comment in ("", "block") else f"{comment} block"
            return Phrase(f"{label} never {verb}{span}", line)
        if metric == "expr":
            return Phrase(_expr_phrase(idx, line, col, comment), line)
        return Phrase(f"{comment or metric} never hit", line)

    def _if_phrase(self, idx, file, line, col, comment, verb, lines) -> Phrase:
        cands = [i for i in idx.ifs if i.line == line] if idx else []
        stmt = _nearest(cands, col if comment != "else" else col - 1)
        where = f"{file}:{line}"
        note = CONSTANT_NOTE if stmt and stmt.constant else ""
        if comment != "else":
            return Phrase(f"then branch of the if at {where} never {verb}{note}", line)
        if (stmt is not None and stmt.else_line is None) or (stmt is None and not lines):
            return Phrase(f"the if at {where} never saw its condition false "
                          f"(it has no else){note}", line)
        own = stmt.else_line if stmt and stmt.else_line else _first_line(lines, line)
        return Phrase(f"else branch of the if at {where} never {verb}{note}", own)

    def _case_phrase(self, idx, file, line, col, verb) -> Phrase:
        item = _nearest([c for c in idx.case_items if c.line == line], col) if idx else None
        if item is None:
            return Phrase(f"case item at {file}:{line} never {verb}", line)
        return Phrase(f"case item {item.label} of the case at {file}:{item.case_line} "
                      f"never {verb}", line)


def _nearest(cands: list, col: int):
    """The candidate whose column is closest to ``col`` (first on ties), or None."""
    return min(cands, key=lambda c: abs(c.col - col)) if cands else None


def _first_line(lines: str, default: int) -> int:
    head = lines.split("-", 1)[0].split(",", 1)[0]
    return int(head) if head.isdigit() else default


_RESULT = re.compile(r"^(?P<terms>.*)\s=>\s*(?P<result>\S+)$")


def _expr_phrase(idx: _FileIndex | None, line: int, col: int, comment: str) -> str:
    m = _RESULT.match(comment.strip())
    found = idx.exprs.get((line, col)) if idx else None
    expr, const = found if found else ("", False)
    note = CONSTANT_NOTE if const else ""
    if m is None:
        return f"expression `{expr or comment}` term {comment} never seen{note}"
    terms = [_split_term(t) for t in _split_and(_strip_parens(m["terms"]))]
    result = _BOOL.get(m["result"], f"evaluated to {m['result']}")
    if len(terms) == 1 and terms[0][1] in _BOOL:
        subject, value = terms[0]
        if not expr or _norm(subject) == _norm(expr):
            return f"`{expr or subject}` never {_BOOL[value]}{note}"
        if not _is_name(subject):  # one term of a larger condition: name the term
            return f"`{subject}` never {_BOOL[value]} (term of `{expr}`){note}"
    words = ", ".join(_term_words(s, v) for s, v in terms)
    subject = f"`{expr}`" if expr else "the expression"
    return f"{subject} never {result} with {words}{note}"


_BOOL = {"1": "true", "0": "false"}


def _is_name(text: str) -> bool:
    return re.fullmatch(r"[\w.$\[\]:]+", text) is not None


def _term_words(subject: str, value: str) -> str:
    if _is_name(subject):
        return f"{subject}={value}"
    return f"`{subject}` {_BOOL.get(value, f'= {value}')}"


_LITERAL = re.compile(r"(?<![\w$'])(?:\d[\d_]*\s*)?'[sS]?(?P<base>[bodhBODH])\s*"
                      r"(?P<digits>[0-9a-fA-F_]+)\b|(?<![\w$'])(?P<dec>\d[\d_]*)\b")
_RADIX = {"b": 2, "o": 8, "d": 10, "h": 16}


def _literal_value(m: re.Match) -> str:
    if m["dec"] is not None:
        return str(int(m["dec"].replace("_", "")))
    return str(int(m["digits"].replace("_", ""), _RADIX[m["base"].lower()]))


def _norm(text: str) -> str:
    """``text`` without spaces and outer parentheses, number literals as their values:
    Verilator's row writes ``timer == 4'h9`` for the RTL's ``timer == 4'd9``."""
    return re.sub(r"\s+", "", _LITERAL.sub(_literal_value, _strip_parens(text)))


def _strip_parens(text: str) -> str:
    text = text.strip()
    while text.startswith("(") and text.endswith(")") and _balanced(text[1:-1]):
        text = text[1:-1].strip()
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


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
            return _strip_parens(term[:j]), term[j + 2 :].strip()
    return _strip_parens(term), "1"


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
