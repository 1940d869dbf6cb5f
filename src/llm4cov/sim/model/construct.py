"""What a coverage point counts, as typed data: the RTL construct behind a point.

A simulator names its points by its own internal construct (Verilator: ``elsif``,
``cond_then``, ``((timer == 4'h9)==1) => 1``, ``q[3]:0->1``);
:meth:`llm4cov.sim.model.feedback_terms.SourceIndex.construct` maps each point to the RTL
construct it counts, a :class:`Construct`: an arm of an ``if``, a ``case`` item, an arm
of a ``?:``, a block, a term of an expression, a toggle of a signal's bits, an FSM
state or arc, a named point (a ``cover property``), a covergroup bin. Every consumer
that needs to know what a miss *is* reads these fields (formal goals, the
parameter-constant flag); the wording of a miss (``UncoveredItem.detail``) is rendered
from them in one place (:func:`llm4cov.sim.model.feedback_terms.render`) and read by no
program.

This module is light (no parser): :mod:`llm4cov.sim.model.observation` stores a construct in
every :class:`~llm4cov.sim.model.observation.UncoveredItem`.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer


class ConstructKind(StrEnum):
    """The kind of RTL construct a coverage point counts."""

    IF_ARM = "if_arm"
    """The ``then`` or ``else`` arm of an ``if`` (``arm``; ``has_else`` False: the
    condition false of an ``if`` without ``else``), the ``if`` at line ``at``."""
    CASE_ITEM = "case_item"
    """An item of a ``case`` (``label``; the ``case`` at line ``at``)."""
    TERNARY_ARM = "ternary_arm"
    """The ``true`` or ``false`` arm of a ``?:`` on ``condition`` at line ``at``."""
    BLOCK = "block"
    """A block of statements that is not an arm above (``label``: the simulator's
    name for it, ``lines``: the lines it covers)."""
    EXPR_TERM = "expr_term"
    """A row of an expression's truth table: ``expression`` never took ``result`` with
    its ``terms`` at their values (``terms`` None: a row not understood, ``row``)."""
    TOGGLE = "toggle"
    """Toggles of ``signal``'s ``bits`` in ``direction`` (both when empty); one toggle
    point also has its own name (``label``, ``q[3]:0->1``), the item of a signal's
    missing toggles none. No ``bits``: a toggle point whose name was not understood."""
    FSM = "fsm"
    """A state or an arc of a state machine (``label``: the simulator's name,
    ``state::IDLE`` or ``state::IDLE->RUN``, :attr:`Construct.is_arc`; ``signal``: the
    state variable)."""
    NAMED = "named"
    """A point known by its name only (``label``): a ``cover property``, a point of a
    metric with no construct of its own."""
    COVERGROUP_BIN = "covergroup_bin"
    """A bin of a testbench covergroup (``label``: its type)."""


BOOL_VALUES = {"1": "true", "0": "false"}
"""An expression term's value that is a truth value, in words."""

_NAME = re.compile(r"[\w.$\[\]:]+")
_PLAIN_SIGNAL = re.compile(r"[A-Za-z_][\w$]*(?:\[\d+\])*")


def is_name(text: str) -> bool:
    """True when ``text`` is a plain name (``sel``, ``a.b[3]``), not an expression."""
    return _NAME.fullmatch(text) is not None


class Construct(BaseModel):
    """The typed construct of one coverage point (:class:`ConstructKind` says which
    fields apply). Stored in the JSON form of an uncovered item with every field at
    its default left out."""

    model_config = ConfigDict(frozen=True)

    kind: ConstructKind
    at: int = 0
    """The line of the enclosing construct the point belongs to (the ``if``, ``?:`` or
    ``case``); 0: none."""
    arm: str = ""
    """``then``/``else`` of an ``if``, ``true``/``false`` of a ``?:``."""
    has_else: bool = True
    """An ``if``'s ``else`` arm: False when the ``if`` has no ``else``."""
    condition: str | None = None
    """The ``if``'s or ``?:``'s condition as the RTL writes it (one line, at most 60
    characters); None when the construct was not found in the source. An expression
    term read back from its wording (``from_text``): the SystemVerilog condition of its
    row as read."""
    label: str | None = None
    """A case item's label (None: the item was not found); the simulator's name of a
    block, FSM state or arc, named point or bin, or of one toggle point
    (``q[3]:0->1``; an item of a signal's toggles has none)."""
    lines: str = ""
    """The source lines a block covers (``12-14,16``)."""
    param_only: bool = False
    """The condition reads only parameters: constant once the design is elaborated, so
    one of its outcomes can never be seen (a syntactic check)."""
    expression: str = ""
    """The expression of an expression term as the RTL writes it (empty: unknown)."""
    terms: tuple[tuple[str, str], ...] | None = None
    """An expression row's terms as ``(subject, value)``; None: the row was not read."""
    result: str = ""
    """The value the expression never took with those terms."""
    row: str = ""
    """The simulator's row of an expression term, as written."""
    signal: str = ""
    """A toggled signal (unpacked indices included: ``mem[3]``); an FSM's state
    variable."""
    bits: tuple[int, ...] = ()
    """The toggled bits (``(-1,)``: a 1-bit signal, shown bare)."""
    direction: str = ""
    """``0->1`` or ``1->0``; empty: both."""
    from_text: bool = False
    """Read back from a wording (:func:`llm4cov.sim.model.wording.read_detail`): an item
    written by hand or stored before items carried their construct."""

    @model_serializer(mode="wrap")
    def _compact(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        fields = type(self).model_fields
        return {k: v for k, v in data.items() if k == "kind" or (
            k in fields and v != fields[k].default and v != _json_default(fields[k].default))}

    @property
    def is_arc(self) -> bool:
        """An FSM point that is an arc (``A->B``), not a state."""
        return self.kind is ConstructKind.FSM and "->" in (self.label or "")

    def plain_signal(self) -> bool:
        """A toggle of a plain or array signal (``q``, ``mem[3]``), one a formal goal
        can name; not a field of a structured signal (``s.f``)."""
        return (self.kind is ConstructKind.TOGGLE
                and _PLAIN_SIGNAL.fullmatch(self.signal) is not None)


def _json_default(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


TOGGLE_POINT = re.compile(r"^(?P<sig>.*?)(\[(?P<bit>\d+)\])?:(?P<dir>0->1|1->0)$")
"""A toggle point's name (Verilator's comment): ``sig[bit]:0->1`` (``sig:1->0`` for a
1-bit signal)."""


def bit_ranges(sig: str, bits: list[int]) -> str:
    """``sig`` with its toggle bits as descending ranges (``q[7:4,1]``); ``[-1]``: a
    1-bit signal, shown bare."""
    if bits == [-1]:
        return sig
    runs = [f"{a}" if a == b else f"{a}:{b}" for a, b in bit_runs(bits)]
    return f"{sig}[{','.join(runs)}]"


def bit_runs(bits: tuple[int, ...] | list[int]) -> list[tuple[int, int]]:
    """Toggle bits as descending runs ``(first, last)``, ``first >= last``
    (``[7, 6, 5, 4, 1]`` -> ``[(7, 4), (1, 1)]``); a negative bit (a 1-bit signal's)
    is left out."""
    ordered = sorted({b for b in bits if b >= 0}, reverse=True)
    runs: list[tuple[int, int]] = []
    for b in ordered:
        if runs and b == runs[-1][1] - 1:
            runs[-1] = (runs[-1][0], b)
        else:
            runs.append((b, b))
    return runs


def toggle_bits(construct: Construct) -> list[int]:
    """The bits of a toggle construct one at a time: each descending run (as the
    wording shows them) from its lowest bit up (``q[7:4,1]`` -> 4, 5, 6, 7, 1);
    ``[-1]`` for a 1-bit signal."""
    if list(construct.bits) == [-1]:
        return [-1]
    out = [b for first, last in bit_runs(construct.bits) for b in range(last, first + 1)]
    return out or [-1]


def toggle_directions(construct: Construct) -> list[str]:
    """The directions of a toggle construct (both when it names none)."""
    return [construct.direction] if construct.direction else ["0->1", "1->0"]


def term_condition(construct: Construct) -> str | None:
    """The SystemVerilog condition that makes an expression-term construct's row true
    (the term alone when the row is one term of a larger condition; every term at its
    value otherwise), or None when its row was not read."""
    if construct.kind is not ConstructKind.EXPR_TERM:
        return None
    if construct.from_text:  # read back from a wording: the condition read with it
        return construct.condition
    terms = construct.terms
    if not terms:
        return None
    shown = single_term(construct)
    if shown is not None:
        return f"({shown})" if terms[0][1] == "1" else f"!({shown})"
    parts = []
    for subject, value in terms:
        if is_name(subject) or value not in BOOL_VALUES:
            parts.append(f"({subject}) == {value}")
        else:
            parts.append(f"({subject})" if value == "1" else f"!({subject})")
    return "(" + " && ".join(parts) + ")"


def single_term(construct: Construct) -> str | None:
    """The one boolean term an expression-term construct is about, as shown: the
    expression itself when its row is the whole expression (or the expression is
    unknown), the term alone when the row is one term of a larger condition; None
    when the row has several terms or names a plain signal of a larger expression."""
    terms = construct.terms
    if not terms or len(terms) != 1 or terms[0][1] not in BOOL_VALUES:
        return None
    subject, expr = terms[0][0], construct.expression
    if not expr or _same_expression(subject, expr):
        return expr or subject
    return None if is_name(subject) else subject


_LITERAL = re.compile(r"(?<![\w$'])(?:\d[\d_]*\s*)?'[sS]?(?P<base>[bodhBODH])\s*"
                      r"(?P<digits>[0-9a-fA-F_]+)\b|(?<![\w$'])(?P<dec>\d[\d_]*)\b")
_RADIX = {"b": 2, "o": 8, "d": 10, "h": 16}


def _literal_value(m: re.Match) -> str:
    if m["dec"] is not None:
        return str(int(m["dec"].replace("_", "")))
    return str(int(m["digits"].replace("_", ""), _RADIX[m["base"].lower()]))


def normalized(text: str) -> str:
    """``text`` without spaces and outer parentheses, number literals as their values:
    Verilator's row writes ``timer == 4'h9`` for the RTL's ``timer == 4'd9``."""
    return re.sub(r"\s+", "", _LITERAL.sub(_literal_value, strip_parens(text)))


def _same_expression(subject: str, expression: str) -> bool:
    return normalized(subject) == normalized(expression)


def strip_parens(text: str) -> str:
    """``text`` without the parentheses around all of it."""
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
