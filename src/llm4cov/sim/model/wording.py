"""The phrase table: a coverage miss in words, rendered from its typed construct.

:func:`render` is the one place a :class:`~llm4cov.sim.model.construct.Construct` becomes the
wording of a miss (``UncoveredItem.detail``, the prompt's feedback, the Markdown and
HTML reports, ``llm4cov close``'s residual), the way an engineer reads the code:

- ``then branch of the if at uart_tx.v:89 never taken`` / ``else branch of the if at
  uart_tx.v:89 never taken`` (shown at the ``else`` keyword's own line) / ``the if at
  f.v:12 never saw its condition false (it has no else)``;
- ``case item 2'd3 of the case at f.v:20 never executed``;
- ``true arm of the ?: on `go` at f.v:27 never taken``;
- ``` `sel && en` never evaluated to 1 with sel=1, en=1``` and, for a row that is one
  term of a larger condition, that term as the row writes it: ``` `timer == 4'h9`
  never true (term of `timer == 4'd9 || (ped_req && timer >= 4'd2)`)``` (never "the
  whole condition never true": its other terms may have made it true);
- ``q[7:4] never toggled 0->1``; a point known by its name: ``NAME never hit``.

A condition that reads only parameters (``Construct.param_only``) gets
:data:`CONSTANT_NOTE`. No program reads these words back, with one exception:
:func:`read_detail` gives an item that has only its wording (written by hand, or
stored before items carried their construct) a construct, marked ``from_text``.
Changing a phrase here changes what the model and the reports read, nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from llm4cov.sim.model.construct import (
    BOOL_VALUES,
    Construct,
    ConstructKind,
    bit_ranges,
    is_name,
    single_term,
)
from llm4cov.sim.model.metrics import BRANCH, EXPR, LINE, TOGGLE
from llm4cov.sim.model.metrics import verb as metric_verb

Kind = ConstructKind
CONSTANT_NOTE = (
    " (condition depends only on parameters: constant after elaboration, likely unreachable)"
)
"""The note of a miss whose condition reads only parameters (``Construct.param_only``):
one of its outcomes is constant after elaboration, a known source of false holes."""


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


def render(metric: str, file: str, c: Construct) -> str:
    """The wording of a miss of metric ``metric`` in ``file`` whose construct is ``c``:
    the one place a construct becomes words (the feedback, the reports)."""
    note = CONSTANT_NOTE if c.param_only else ""
    verb = metric_verb(metric)
    where = f"{file}:{c.at}"
    if c.kind is Kind.IF_ARM:
        if c.arm == "then":
            return f"then branch of the if at {where} never {verb}{note}"
        if not c.has_else:
            return f"the if at {where} never saw its condition false (it has no else){note}"
        return f"else branch of the if at {where} never {verb}{note}"
    if c.kind is Kind.CASE_ITEM:
        if c.label is None:
            return f"case item at {where} never {verb}"
        return f"case item {c.label} of the case at {where} never {verb}"
    if c.kind is Kind.TERNARY_ARM:
        on = f" on `{c.condition}`" if c.condition is not None else ""
        return f"{c.arm} arm of the ?:{on} at {where} never {verb}{note}"
    if c.kind is Kind.BLOCK:
        span = f" (lines {c.lines})" if c.lines else ""
        label = "block" if c.label in (None, "", "block") else f"{c.label} block"
        return f"{label} never {verb}{span}"
    if c.kind is Kind.EXPR_TERM:
        return _expr_words(c) + note
    if c.kind is Kind.TOGGLE:
        if c.label is not None:  # one toggle point, by its own name
            return f"{c.label} never hit"
        how = f"never {verb} {c.direction}" if c.direction else f"never {verb}"
        return f"{bit_ranges(c.signal, list(c.bits))} {how}"  # a signal's missing toggles
    return f"{c.label or metric} never {verb}"  # a point known by its name


def _expr_words(c: Construct) -> str:
    expr = c.expression
    if c.terms is None:
        return f"expression `{expr or c.row}` term {c.row} never seen"
    shown = single_term(c)
    if shown is not None:
        value = BOOL_VALUES[c.terms[0][1]]
        if not expr or shown == expr:
            return f"`{shown}` never {value}"
        return f"`{shown}` never {value} (term of `{expr}`)"
    result = BOOL_VALUES.get(c.result, f"evaluated to {c.result}")
    words = ", ".join(_term_words(s, v) for s, v in c.terms)
    subject = f"`{expr}`" if expr else "the expression"
    return f"{subject} never {result} with {words}"


def _term_words(subject: str, value: str) -> str:
    if is_name(subject):
        return f"{subject}={value}"
    return f"`{subject}` {BOOL_VALUES.get(value, f'= {value}')}"


# Reading a wording back: only for an item that carries no construct (written by
# hand, or stored before items carried one). The rules are those formal goals used
# on the wording before items were typed, so such an item gets the goal it got then.
_NOTE_AT_END = re.compile(r"\s*\((condition depends only|constant)[^)]*\)\s*$")
_TERM_OF = re.compile(r"\s*\(term of `.*`\)\s*$")
_IF_AT = re.compile(r"of the if at (?P<file>\S+):(?P<line>\d+)|the if at (?P<f2>\S+):(?P<l2>\d+)")
_ELSE = re.compile(r"\belse\b")
_TOGGLE = re.compile(
    r"^(?P<sig>[A-Za-z_][\w$]*(?:\[\d+\])*?)(\[(?P<bits>[\d:,]+)\])? never toggled"
    r"(?: (?P<dir>0->1|1->0))?$"
)
_OLD_TERM = re.compile(r"^expression term \((?P<cond>.*)\) => \S+ never seen$")
_NEVER_BOOL = re.compile(r"^`(?P<expr>.+)` never (?P<value>true|false)$")
_WITH = re.compile(
    r"^`?(?P<expr>.*?)`? never (?P<result>evaluated to \S+|true|false) with (?P<words>.+)$")
_WORD = re.compile(
    r"`(?P<subj>[^`]+)` (?P<bool>true|false|= [^\s,]+)|(?P<name>[\w.$\[\]:]+)=(?P<val>[^\s,]+)")
_VALUE = {"true": "1", "false": "0"}


def read_detail(kind: str, line: int, detail: str) -> Construct:
    """A construct for an item of metric ``kind`` at ``line`` known only by its wording
    ``detail`` (``from_text``; see the comment above)."""
    fields = {"from_text": True, "param_only": detail.endswith(CONSTANT_NOTE)}
    if kind in (LINE.name, BRANCH.name):
        if "?:" in detail or "cond_then" in detail or "cond_else" in detail:
            arm = "false" if detail.startswith("false") else "true"
            return Construct(kind=Kind.TERNARY_ARM, arm=arm, at=line, **fields)
        if "case" in detail:
            return Construct(kind=Kind.CASE_ITEM, at=line, **fields)
        at = _IF_AT.search(detail)
        wants_else = (_ELSE.search(detail.split(" of the if")[0]) is not None
                      or "condition false" in detail)
        if at is None and not wants_else:
            return Construct(kind=Kind.BLOCK, **fields)
        return Construct(kind=Kind.IF_ARM, at=int(at["line"] or at["l2"]) if at else line,
                         arm="else" if wants_else else "then",
                         has_else="condition false" not in detail, **fields)
    if kind == EXPR.name:
        return _read_expr(_TERM_OF.sub("", _NOTE_AT_END.sub("", detail)).strip(), fields)
    if kind == TOGGLE.name:
        m = _TOGGLE.match(_NOTE_AT_END.sub("", detail).strip())
        if m is None:
            return Construct(kind=Kind.TOGGLE, **fields)
        bits: list[int] = []
        for part in (m["bits"] or "").split(","):
            if part:
                hi, _, lo = part.partition(":")
                bits.extend(range(int(lo or hi), int(hi) + 1))
        return Construct(kind=Kind.TOGGLE, signal=m["sig"], bits=tuple(bits) or (-1,),
                         direction=m["dir"] or "", **fields)
    return Construct(kind=Kind.NAMED, **fields)


def _read_expr(text: str, fields: dict) -> Construct:
    """An expression term read back, with the condition formal goals made of these
    words (``condition``; the typed path derives it from the terms)."""
    kind = Kind.EXPR_TERM
    if m := _OLD_TERM.match(text):
        return Construct(kind=kind, terms=((m["cond"], "1"),), result="1",
                         condition=f"({m['cond']})", **fields)
    if m := _NEVER_BOOL.match(text):
        value = _VALUE[m["value"]]
        cond = f"({m['expr']})" if value == "1" else f"!({m['expr']})"
        return Construct(kind=kind, expression=m["expr"], terms=((m["expr"], value),),
                         result=value, condition=cond, **fields)
    if m := _WITH.match(text):
        terms, parts = [], []
        for w in _WORD.finditer(m["words"]):
            if w["name"]:
                terms.append((w["name"], w["val"]))
                parts.append(f"({w['name']}) == {w['val']}")
            elif w["bool"] in _VALUE:
                terms.append((w["subj"], _VALUE[w["bool"]]))
                parts.append(f"({w['subj']})" if w["bool"] == "true" else f"!({w['subj']})")
            else:
                terms.append((w["subj"], w["bool"][2:]))
                parts.append(f"({w['subj']}) == {w['bool'][2:]}")
        result = _VALUE.get(m["result"], m["result"].removeprefix("evaluated to "))
        return Construct(kind=kind, expression=m["expr"] if text.startswith("`") else "",
                         terms=tuple(terms) or None, result=result,
                         condition="(" + " && ".join(parts) + ")" if parts else None,
                         **fields)
    return Construct(kind=kind, **fields)
