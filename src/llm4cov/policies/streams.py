"""Valid/ready streams of a DUT: recognised from its port names and the RTL's use, and
driven with legal transfers by the ``random`` policy (:mod:`llm4cov.policies.agents`).

**Stream** (:func:`detect_streams`): a 1-bit handshake port whose name has ``valid``/
``vld`` at the end of a name token (``in_valid``, ``s_axis_tvalid``, ``I_TVALID``,
``valid_i``) or a ``req`` token, paired with a 1-bit port of the other direction named
the same with ``ready``/``rdy``/``ack`` in its place (``_i``/``_o``, ``_in``/``_out``
swapped: ``valid_i`` with ``ready_o``):

- an **input stream** (the DUT receives: valid in, ready out) drives its data inputs
  with each transfer: the inputs named with the same template (``s_axis_t*``: ``tdata``,
  ``tlast``, ``tkeep``, ``tuser``; an empty prefix, ``valid_i``, takes only data words:
  ``data_i``, ``last_i``, ...; a port matching two templates goes to the longer
  prefix), and, by the RTL's use, the inputs named with a data word (``din``,
  ``wr_data``, ``pkt_last``) read under a condition on the valid (``if (in_valid &&
  in_ready) mem[wp] <= din;``, also through a wire assigned from the valid and through
  submodule ports; not a clear, pulse or enable input, nor a configuration input such
  as ``prescale``). ``*last``/``eop`` marks the last beat of a burst,
  ``*first``/``sop`` the first, ``*keep``/``*strb`` are all ones but on the last beat;
- an **output stream** (the DUT sends: valid out, ready in) gets its ready driven.

Ports a register bus or a bus-master port already claims are not streams (AXI4-Lite's
``awvalid``/``awready`` are channels of that bus, not a stream of their own).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pyslang import syntax

from llm4cov.policies.stimulus_plan import connected_names
from llm4cov.tasks.hdl import Design, Port

_VALID = re.compile(r"(valid|vld)(?=_|$)|(?:^|(?<=_))(req)(?=_|$)")
_PARTNERS = {"valid": ("ready", "rdy", "ack"), "vld": ("rdy", "ready", "ack"),
             "req": ("ack", "ready", "rdy")}
_SWAPS = (("_i", "_o"), ("_in", "_out"))
DATA_WORDS = frozenset({"data", "din", "dat", "payload", "last", "keep", "strb", "user",
                        "id", "dest", "first", "sop", "eop", "be", "tdata", "tlast",
                        "tkeep", "tstrb", "tuser", "tid", "tdest"})
"""Middles an empty-prefix template (``valid_i``) takes as data (``data_i``)."""
_USE_WORDS = DATA_WORDS - {"id", "dest", "be", "tid", "tdest", "first", "sop", "user"}
"""Name tokens of an input the RTL's use may add to a stream (``din``, ``wr_data``; not
a configuration input such as ``prescale`` that is also read when a transfer starts)."""
_LAST = {"last", "tlast", "eop"}
_FIRST = {"first", "sop"}
_KEEP = {"keep", "tkeep", "strb", "tstrb", "be", "byteen"}
_IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
_WIRE_ASSIGN = re.compile(r"(?:\bassign\s+|\bwire\b[^;=()]*?)\b(\w+)\s*=\s*([^;]+);")


@dataclass(frozen=True)
class Stream:
    """One valid/ready stream of the DUT: ``direction`` ``in`` when the DUT receives
    (its ``valid`` is an input), ``out`` when it sends (its ``ready`` is an input);
    ``data`` the inputs driven with each transfer of an input stream, among them
    ``last``/``first`` (1-bit beat markers) and ``keep`` (byte enables)."""

    direction: str
    valid: Port
    ready: Port
    prefix: str = ""
    suffix: str = ""
    data: tuple[Port, ...] = ()
    last: Port | None = None
    first: Port | None = None
    keep: tuple[Port, ...] = field(default=())

    def inputs(self) -> set[str]:
        """Names of the DUT inputs this stream drives."""
        if self.direction == "out":
            return {self.ready.name}
        return {self.valid.name, *(p.name for p in self.data)}

    def ports(self) -> set[str]:
        """Every port of the stream (its handshake and data)."""
        return {self.valid.name, self.ready.name, *(p.name for p in self.data)}


def _swapped(suffix: str) -> list[str]:
    out = [suffix]
    for a, b in _SWAPS:
        for x, y in ((a, b), (b, a)):
            if suffix.endswith(x):
                out.append(suffix[: -len(x)] + y)
    return out


def _scalar(p: Port) -> bool:
    return p.width == 1 and not p.unpacked and not p.cast


def _pair(port: Port, by_name: dict[str, Port]) -> tuple[Port, str, str] | None:
    """The ready partner of a valid-like port and the name template around the
    handshake word (prefix, suffix), lower case."""
    name = port.name.lower()
    matches = list(_VALID.finditer(name))
    if not matches:
        return None
    m = matches[-1]
    word = m.group(1) or m.group(2)
    prefix, suffix = name[:m.start()], name[m.end():]
    other = "output" if port.direction == "input" else "input"
    for w in _PARTNERS[word]:
        for suf in _swapped(suffix):
            p = by_name.get(prefix + w + suf)
            if p is not None and p.direction == other and _scalar(p):
                return p, prefix, suffix
    return None


def _middle(name: str, prefix: str, suffix: str) -> str | None:
    """What a name has between a template's prefix and suffix (None: no match); an
    empty prefix matches data words only."""
    name = name.lower()
    if not name.startswith(prefix) or not name.endswith(suffix) \
            or len(name) <= len(prefix) + len(suffix):
        return None
    middle = name[len(prefix):len(name) - len(suffix)]
    if not prefix.strip("_") and middle.strip("_") not in DATA_WORDS:
        return None
    return middle.strip("_")


def _read_under(design: Design, valid: str) -> set[str]:
    """Identifiers read where a condition names the valid (or a wire assigned from it,
    or a submodule port it is connected to): an ``if``'s then-branch, a ``?:``'s arms."""
    text = str(design.tree.root)
    names = connected_names(text, valid)
    for m in _WIRE_ASSIGN.finditer(text):
        if set(_IDENT.findall(m.group(2))) & names:
            names.add(m.group(1))
    found: set[str] = set()

    def visit(node: object) -> bool:
        if isinstance(node, syntax.ConditionalStatementSyntax):
            if set(_IDENT.findall(str(node.predicate))) & names:
                found.update(_IDENT.findall(str(node.statement)))
        elif isinstance(node, syntax.ConditionalExpressionSyntax) \
                and set(_IDENT.findall(str(node.predicate))) & names:
            found.update(_IDENT.findall(f"{node.left} {node.right}"))
        return True

    design.tree.root.visit(visit)
    return found


def detect_streams(ports: list[Port], drivable: list[Port], design: Design | None = None,
                   skip: set[str] | None = None, plain: set[str] | None = None
                   ) -> list[Stream]:
    """The DUT's valid/ready streams (see the module docstring). ``drivable``: the data
    inputs a testbench may drive (no clock or reset), ``skip``: ports another interface
    claims; ``design`` (the RTL) adds to an input stream's data the inputs read under
    its valid, among ``plain`` (default: all; the random style's controls, clears and
    pulses, are left out)."""
    skip = skip or set()
    free = [p for p in ports if p.name not in skip]
    by_name = {p.name.lower(): p for p in free}
    can_drive = {p.name for p in drivable if p.name not in skip}
    found: list[Stream] = []
    claimed: set[str] = set()
    for p in free:
        if not _scalar(p) or p.name in claimed or p.direction not in ("input", "output"):
            continue
        pair = _pair(p, by_name)
        if pair is None or pair[0].name in claimed:
            continue
        ready, prefix, suffix = pair
        driven = p if p.direction == "input" else ready
        if driven.name not in can_drive:
            continue
        found.append(Stream("in" if p.direction == "input" else "out", p, ready,
                            prefix, suffix))
        claimed |= {p.name, ready.name}
    data: dict[int, list[Port]] = {i: [] for i in range(len(found))}
    candidates = [p for p in drivable if p.name in can_drive and p.name not in claimed
                  and not p.unpacked]
    for p in candidates:
        best = max(((len(s.prefix) + len(s.suffix), i) for i, s in enumerate(found)
                    if s.direction == "in" and _middle(p.name, s.prefix, s.suffix)),
                   default=None)
        if best is not None:
            data[best[1]].append(p)
    taken = {q.name for ports_ in data.values() for q in ports_}
    ins = [i for i, s in enumerate(found) if s.direction == "in"]
    if design is not None and ins:
        text = str(design.tree.root)
        rest = [p for p in candidates if p.name not in taken
                and (plain is None or p.name in plain)
                and set(p.name.lower().split("_")) & _USE_WORDS]
        aliases = {p.name: connected_names(text, p.name) for p in rest}
        for i in ins:
            used = _read_under(design, found[i].valid.name)
            extra = [p for p in rest if p.name not in taken and aliases[p.name] & used]
            data[i] += extra
            taken |= {q.name for q in extra}
    return [_roles(s, data[i]) for i, s in enumerate(found)]


def _roles(s: Stream, data: list[Port]) -> Stream:
    def middle(p: Port) -> str:
        return _middle(p.name, s.prefix, s.suffix) or ""

    last = next((p for p in data if _scalar(p) and middle(p) in _LAST), None)
    first = next((p for p in data if _scalar(p) and middle(p) in _FIRST), None)
    keep = tuple(p for p in data if middle(p) in _KEEP)
    return Stream(s.direction, s.valid, s.ready, s.prefix, s.suffix, tuple(data), last,
                  first, keep)
