"""What a built-in stimulus testbench drives, and how: the DUT's ports classified.

From the DUT's ports as the compiler elaborates them (``hdl.task_ports``) and from how
the RTL uses each signal (pyslang syntax tree):

- **clocks**: 1-bit inputs named ``*clk*``/``*clock*`` (not a clock enable or divider),
  else the DUT's only edge-triggering input;
- **resets**: 1-bit inputs whose name has a token ``rst``/``reset`` with at most one
  letter before and ``n``/``b`` after (``rst_ni``, ``aresetn``, ``HRESETn``, not
  ``first``). Polarity from the RTL (``negedge rst`` or ``if (!rst)`` = active low,
  ``posedge``/``if (rst)`` = active high, over every module; a top port that only
  reaches submodules, ``.rst(rst_i)``, by the uses of the ports it is connected to),
  else from the lowRISC/
  PULP/AXI naming conventions (``_n``, ``_ni``, ``_b``, ``_l``, ``...resetn``, ``n...``);
- **controls** (:class:`Drive`), 1-bit data inputs whose random value would defeat the
  design: a synchronous clear (``clr``, ``clear``, ``flush``, ``kill``, ``abort``,
  ``init``, or any input whose ``if`` in a clocked block only clears: ``if (clr_i) q <= '0``) is
  asserted once in 32 cycles; a start/load pulse (``start``, ``go``, ``load``, ``ld``,
  ``trig``, ``trigger``) once in 16; valid/ready/enable/request inputs (``valid``,
  ``vld``, ``ready``, ``rdy``, ``en``, ``enable``, ``ce``, ``req``) three cycles in
  four. The active level of a clear or pulse comes from its ``if`` (``if (!x)`` = low),
  else its name;
- **settings** (:attr:`Drive.SETTING`), multi-bit inputs that configure a rate
  (``prescale``, ``prescaler``, ``baud``, ``clkdiv``/``clk_div``, ``divider``): a
  random value each cycle makes a bit period of up to 2**width cycles, so no frame or
  transfer ever ends, but a value that changes every cycle is also what lets a counter
  compared with it run through all its bits (``if (cnt == DIVIDER)``). So a testbench
  whose seed is a multiple of 4 drives them as random data each cycle, the others hold
  a value (1-4 half of the time, else random) drawn again once in :data:`SETTING_HOLD`
  cycles on average (:attr:`Stimulus.hold`; the random policy's first round, seed
  ``1000 s``, is of the first kind, its later rounds and most of ``close``'s steps of
  the second);
- **clock domains**: with several clocks, every other input belongs to the domain whose
  clock's always blocks read it in the DUT module, else the one whose clock name shares
  a name token (``wr_clk``: ``wr_en``, ``wr_data``; ``src_clk_i``: ``src_rst_ni``),
  else the first clock's. Each domain is driven on its own clock's edges.

The testbench writers (``random_stimulus.py``) turn this plan into SystemVerilog.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum

from pyslang import syntax

from llm4cov.tasks.hdl import Design, Port, task_design
from llm4cov.tasks.model import Task

_CLOCK = re.compile(r"clk|clock", re.IGNORECASE)
_NOT_CLOCK = re.compile(r"(^|_)(en|ena|enable|div|sel|gate|cnt|count|rate|freq)(_|$)", re.I)
_RESET_TOKEN = re.compile(r"[a-z]?(rst|reset)[nb]?", re.IGNORECASE)
_ACTIVE_LOW = re.compile(
    r"(_n|_ni|_n_i|_b|_l|_bar|_neg)$|^n|(rst|reset)[nb](_?i)?$", re.IGNORECASE)
_HANDSHAKE = re.compile(r"valid|vld|ready|rdy", re.IGNORECASE)
_ZERO, _ONE = r"(?:1'[bdh]0|'0|0)", r"(?:1'[bdh]1|'1|1)"
_LOW_TEST = re.compile(rf"[!~]\s*(\w+)|(\w+)\s*==\s*{_ZERO}|(\w+)\s*!=\s*{_ONE}")
_HIGH_TEST = re.compile(rf"(\w+)|(\w+)\s*==\s*{_ONE}|(\w+)\s*!=\s*{_ZERO}")
_ASSIGN_RHS = re.compile(r"(?<![<>=!])<?=(?!=)\s*([^;]+);")
_ZERO_CONSTANT = re.compile(r"\s*(?:\d*'[sS]?[bBoOdDhH][0_]+|'0|0+|\{\s*\d*\s*\{\s*(?:1'[bB]0|'0)"
                            r"\s*\}\s*\})\s*")
_AFFIX_TOKENS = {"clk", "clock", "i", "o", "in", "out", "n", "ni", "p", "pad"}

CLEAR_NAMES = {"clr", "clear", "flush", "kill", "abort", "init", "sclr", "srst_clr"}
PULSE_NAMES = {"start", "go", "load", "ld", "trig", "trigger", "strt"}
MOSTLY_HIGH_NAMES = {"en", "ena", "enable", "ce", "req", "request"}
RARE_CLEAR = 32
"""A clear is asserted once in this many cycles (on average)."""
RARE_PULSE = 16
"""A start/load pulse is asserted once in this many cycles (on average)."""
SETTING_NAMES = {"prescale", "prescaler", "presc", "baud", "baudrate", "clkdiv", "divider"}
SETTING_HOLD = 256
"""A setting input draws a new value once in this many cycles (on average)."""


class Drive(Enum):
    """How a data input is driven each cycle."""

    DATA = "data"          # uniformly random bits
    MOSTLY_HIGH = "high"   # active three cycles in four (valid, ready, enable)
    RARE_CLEAR = "clear"   # active once in RARE_CLEAR cycles
    RARE_PULSE = "pulse"   # active once in RARE_PULSE cycles
    SETTING = "setting"    # held, a new (mostly small) value once in SETTING_HOLD cycles


def is_reset_name(name: str) -> bool:
    """Whether ``name`` names a reset by convention (see the module docstring)."""
    return any(_RESET_TOKEN.fullmatch(tok) for tok in name.split("_"))


def _is_clock_name(name: str) -> bool:
    return bool(_CLOCK.search(name)) and not _NOT_CLOCK.search(name)


def _tokens(name: str) -> set[str]:
    return {t for t in re.split(r"_+", name.lower()) if t}


@dataclass
class SignalUsage:
    """How the RTL uses each identifier: ``edges[name]`` counts ``posedge``/``negedge``
    events on it, ``levels[name]`` ``low``/``high`` tests of it as a whole ``if``
    condition, ``clears[name]`` the levels of such tests in edge-timed always blocks
    whose then-branch only assigns zeros (a synchronous clear), ``domains[name]`` the
    clocks of the DUT module's always blocks that read it."""

    edges: dict[str, Counter] = field(default_factory=dict)
    levels: dict[str, Counter] = field(default_factory=dict)
    clears: dict[str, Counter] = field(default_factory=dict)
    domains: dict[str, Counter] = field(default_factory=dict)


def _only_zeros(statement: str) -> bool:
    rhs = _ASSIGN_RHS.findall(statement)
    return bool(rhs) and all(_ZERO_CONSTANT.fullmatch(r) for r in rhs)


def _if_test(node) -> tuple[str, str] | None:
    """``(name, level)`` of an ``if`` whose whole condition tests one identifier."""
    text = " ".join(str(node.predicate).split())
    for level, pattern in (("low", _LOW_TEST), ("high", _HIGH_TEST)):
        match = pattern.fullmatch(text)
        if match:
            return next(g for g in match.groups() if g), level
    return None


def _count_clears(statement: syntax.SyntaxNode, usage: SignalUsage) -> None:
    def visit(node: object) -> bool:
        if isinstance(node, syntax.ConditionalStatementSyntax):
            test = _if_test(node)
            if test is not None and _only_zeros(str(node.statement)):
                usage.clears.setdefault(test[0], Counter())[test[1]] += 1
        return True

    statement.visit(visit)


def _block_clock(node) -> str | None:
    """The clock of an ``always`` block timed by one edge event (``@(posedge clk ...)``)."""
    timing = getattr(node.statement, "timingControl", None)
    text = " ".join(str(timing).split()) if timing is not None else ""
    m = re.match(r"@\s*\(\s*(?:posedge|negedge)\s+(\w+)", text)
    return m.group(1) if m else None


def signal_usage(design: Design, dut: str | None = None) -> SignalUsage:
    """How the RTL uses each identifier (see :class:`SignalUsage`); clock domains are
    read from the always blocks of module ``dut`` only (its port names)."""
    usage = SignalUsage()
    module: list[str | None] = [None]

    def visit(node: object) -> bool:
        # pyslang hands each node over as its concrete syntax class (isinstance narrows;
        # the kind picks modules, not interfaces, and always blocks, not initial ones)
        if (isinstance(node, syntax.ModuleDeclarationSyntax)
                and node.kind == syntax.SyntaxKind.ModuleDeclaration):
            module[0] = node.header.name.valueText
        elif isinstance(node, syntax.SignalEventExpressionSyntax):
            edge = node.edge.valueText
            if edge in ("posedge", "negedge"):
                usage.edges.setdefault(str(node.expr).strip(), Counter())[edge] += 1
        elif isinstance(node, syntax.ConditionalStatementSyntax):
            test = _if_test(node)
            if test is not None:
                usage.levels.setdefault(test[0], Counter())[test[1]] += 1
        elif (isinstance(node, syntax.ProceduralBlockSyntax)
                and node.kind in (syntax.SyntaxKind.AlwaysFFBlock, syntax.SyntaxKind.AlwaysBlock)):
            clock = _block_clock(node)
            if clock is not None:
                _count_clears(node.statement, usage)
            if clock is not None and module[0] == dut:
                for name in set(re.findall(r"\b[A-Za-z_]\w*\b", str(node.statement))):
                    usage.domains.setdefault(name, Counter())[clock] += 1
        return True

    design.tree.root.visit(visit)
    return usage


def reset_active_low(name: str, edges: dict[str, Counter], levels: dict[str, Counter],
                     aliases: set[str] | dict[str, int] | None = None) -> bool:
    """The reset's polarity: from its edge events, else its ``if`` tests, else those of
    its aliases (``aliases``: the submodule ports it is connected to, ``.rst(rst_i)``
    and ``negedge rst`` inside; with a parity, also the nets assigned from it, 1 where
    inverted: ``wire rst = arst_i ^ ARST_LVL`` with ``ARST_LVL`` 1), else its name."""
    parity = aliases if isinstance(aliases, dict) else dict.fromkeys(aliases or (), 0)
    for names in ([name], sorted(set(parity) - {name})):
        edge: Counter[str] = Counter()
        level: Counter[str] = Counter()
        for n in names:
            flip = parity.get(n, 0) if n != name else 0
            for k, c in edges.get(n, Counter()).items():
                edge[{"negedge": "posedge", "posedge": "negedge"}[k] if flip else k] += c
            for k, c in levels.get(n, Counter()).items():
                level[{"low": "high", "high": "low"}.get(k, k) if flip else k] += c
        if edge["negedge"] != edge["posedge"]:
            return edge["negedge"] > edge["posedge"]
        if level["low"] != level["high"]:
            return level["low"] > level["high"]
    return bool(_ACTIVE_LOW.search(name))


#: A net assigned from a name, maybe inverted (``~``, ``!``) or XORed with a constant:
#: ``assign rst = ~rst_ni;``, ``wire rst = arst_i ^ ARST_LVL;``.
_ASSIGNED = r"(?:assign\s+|wire\s+(?:logic\s+)?)(\w+)\s*=\s*([~!]?)\s*\(?\s*{name}\s*" \
            r"(?:\^\s*([\w']+))?\s*\)?\s*;"


def reset_aliases(text: str, name: str, values: dict[str, int], limit: int = 16
                  ) -> dict[str, int]:
    """``name``'s aliases in ``text`` (the RTL) with their parity: the submodule ports
    connected to it (0) and the nets assigned from it (1 when inverted, or XORed with a
    constant that is 1: a literal or a parameter of ``values``), transitively; an XOR
    with a name of unknown value ends the chain."""
    found, todo = {name: 0}, [name]
    while todo and len(found) < limit:
        current = todo.pop()
        for alias in connected_names(text, current, limit) - set(found):
            found[alias] = found[current]
            todo.append(alias)
        for m in re.finditer(_ASSIGNED.format(name=re.escape(current)), text):
            alias, invert, xor = m.group(1), m.group(2), m.group(3)
            if alias in found:
                continue
            flip = 1 if invert else 0
            if xor is not None:
                digits = xor.split("'")[-1].lstrip("bBdDhHoO")
                value = values.get(xor) if xor in values else (
                    int(digits, 10) if digits.isdigit() else None)
                if value is None:
                    continue
                flip ^= int(value != 0)
            found[alias] = found[current] ^ flip
            todo.append(alias)
    return found


_CONNECT = r"\.\s*(\w+)\s*\(\s*{name}\s*(?:\[[^\]]*\])?\s*\)"


def connected_names(text: str, name: str, limit: int = 16) -> set[str]:
    """``name`` and the submodule ports connected to it by name in ``text`` (the RTL),
    transitively (``.rst(rst_i)`` makes ``rst`` one), at most ``limit`` names."""
    names, todo = {name}, [name]
    while todo and len(names) < limit:
        current = todo.pop()
        for m in re.finditer(_CONNECT.format(name=re.escape(current)), text):
            if m.group(1) not in names:
                names.add(m.group(1))
                todo.append(m.group(1))
    return names


def _ready_partner(valid: Port, outputs: dict[str, Port]) -> Port | None:
    for src, dst in (("valid", "ready"), ("VALID", "READY"), ("vld", "rdy"), ("VLD", "RDY")):
        if src in valid.name:
            base = valid.name.replace(src, dst)
            for name in (base, re.sub(r"_i$", "_o", base), re.sub(r"_in$", "_out", base)):
                if name in outputs and outputs[name].width == 1 and not outputs[name].unpacked:
                    return outputs[name]
    return None


def drivable(port: Port) -> bool:
    """Whether a testbench variable of the port's type can be assigned a cast value."""
    return port.cast or port.type_text.startswith("logic")


@dataclass
class Domain:
    """One clock domain: its clock (None for a design without one), its resets and the
    data inputs driven on its edges, with their valid/ready hold pairs."""

    clock: Port | None
    resets: list[Port] = field(default_factory=list)
    data: list[Port] = field(default_factory=list)
    holds: list[tuple[Port, Port]] = field(default_factory=list)

    def step(self) -> str:
        """One stimulus step: the falling edge of the clock, else ``#10``."""
        return f"@(negedge {self.clock.name});" if self.clock else "#10;"


class Stimulus:
    """The DUT's ports classified (see the module docstring) and the random source."""

    def __init__(self, task: Task, seed: int):
        design = task_design(task)
        self.design = design
        self.ports, self.interfaces = design.flat_ports(task.dut_module_name, task.parameters)
        usage = signal_usage(design, task.dut_module_name)
        inputs = [p for p in self.ports if p.direction == "input"]
        scalar = [p for p in inputs if p.width == 1 and not p.unpacked and not p.cast]
        self.clocks = [p for p in scalar if _is_clock_name(p.name)]
        self.resets = [p for p in scalar if p not in self.clocks and is_reset_name(p.name)]
        if not self.clocks:
            edged = [p for p in scalar if p not in self.resets and p.name in usage.edges]
            self.clocks = edged[:1]
        text = str(design.tree.root) if self.resets else ""
        values = self._values(design, task) if self.resets else {}
        self.low = {r.name: reset_active_low(r.name, usage.edges, usage.levels,
                                             reset_aliases(text, r.name, values))
                    for r in self.resets}
        self.data = [p for p in inputs
                     if p not in self.clocks and p not in self.resets and drivable(p)]
        outputs = {p.name: p for p in self.ports if p.direction == "output"}
        self.holds = [(v, r) for v in self.data if v.width == 1 and not v.unpacked
                      and (r := _ready_partner(v, outputs)) is not None]
        self.drives = {p.name: _drive(p, usage) for p in self.data}
        self.hold = seed % 4 != 0 and any(d is Drive.SETTING for d in self.drives.values())
        """Settings hold their value in this testbench (else random data each cycle)."""
        self.active_low = {p.name: _control_low(p.name, usage) for p in self.data
                           if self.drives[p.name] in (Drive.RARE_CLEAR, Drive.RARE_PULSE)}
        self.domains = self._domains(usage)
        self.rng = random.Random(seed)

    @staticmethod
    def _values(design: Design, task: Task) -> dict[str, int]:
        """The design's integer parameters by name (one value in every instance; a
        name with two values is left out), for the reset's inversions."""
        try:
            per = design.parameter_values(task.dut_module_name, task.parameters)
        except ValueError:
            return {}
        seen: dict[str, set[int]] = {}
        for values in per.values():
            for k, v in values.items():
                seen.setdefault(k, set()).add(v)
        return {k: next(iter(v)) for k, v in seen.items() if len(v) == 1}

    def _domains(self, usage: SignalUsage) -> list[Domain]:
        domains = [Domain(c) for c in self.clocks] or [Domain(None)]
        by_clock = {d.clock.name: d for d in domains if d.clock is not None}

        def home(port: Port) -> Domain:
            if len(domains) == 1:
                return domains[0]
            seen = usage.domains.get(port.name, Counter())
            if seen:
                clock, _ = seen.most_common(1)[0]
                if clock in by_clock:
                    return by_clock[clock]
            mine = _tokens(port.name) - _AFFIX_TOKENS
            for d in domains:  # one per clock (more than one domain)
                if d.clock is not None and mine & (_tokens(d.clock.name) - _AFFIX_TOKENS):
                    return d
            return domains[0]

        for r in self.resets:
            home(r).resets.append(r)
        for p in self.data:
            home(p).data.append(p)
        for v, r in self.holds:
            home(v).holds.append((v, r))
        return domains

    def reset(self, active: bool, resets: list[Port] | None = None) -> list[str]:
        """``rst = level;`` lines for ``resets`` (default: every reset)."""
        return [f"    {r.name} = 1'b{int(active != self.low[r.name])};"
                for r in (self.resets if resets is None else resets)]


def _drive(port: Port, usage: SignalUsage) -> Drive:
    tokens = _tokens(port.name)
    if port.unpacked or port.cast:
        return Drive.DATA
    if port.width > 1:
        setting = tokens & SETTING_NAMES or {"clk", "div"} <= tokens
        return Drive.SETTING if setting else Drive.DATA
    if tokens & CLEAR_NAMES or port.name in usage.clears:
        return Drive.RARE_CLEAR
    if tokens & PULSE_NAMES:
        return Drive.RARE_PULSE
    if _HANDSHAKE.search(port.name) or tokens & MOSTLY_HIGH_NAMES:
        return Drive.MOSTLY_HIGH
    return Drive.DATA


def _control_low(name: str, usage: SignalUsage) -> bool:
    """A control's active level: from its constant-only ``if``, else any ``if``, else
    its name (``_n``, ``_ni``, ...)."""
    for counts in (usage.clears.get(name), usage.levels.get(name)):
        if counts and counts["low"] != counts["high"]:
            return counts["low"] > counts["high"]
    return bool(re.search(r"(_n|_ni|_b|_l|_bar)$", name, re.IGNORECASE))
