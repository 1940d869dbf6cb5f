"""The built-in non-LLM baseline: a clock/reset/handshake-aware random testbench.

From the DUT's ports as the compiler elaborates them (``hdl.task_ports``: the task's
include dirs, macros and parameter overrides; each port declared with its own type,
unpacked dimensions included) it writes a testbench that

- runs every clock input (1 bit, named ``*clk*``/``*clock*``, not a clock enable or
  divider; else the DUT's only edge-triggering input) as a free-running clock;
- holds every reset input (1 bit; a name token ``rst``/``reset`` with at most one
  letter before and ``n``/``b`` after: ``rst_ni``, ``aresetn``, ``nreset``, ``HRESETn``,
  not ``first``) active for two steps, releases it, and pulses it once more two thirds
  of the way through. The active level comes from how the RTL uses the signal
  (``negedge rst`` or ``if (!rst)`` = active low, ``posedge``/``if (rst)`` = active high,
  over every module of the design), else from the lowRISC/PULP/AXI naming conventions
  (``_n``, ``_ni``, ``_b``, ``_l``, ``...resetn``, ``n...``: active low);
- drives the other inputs exhaustively when the design has no clock and at most
  ``exhaustive_bits`` plain input bits, and otherwise with ``length`` random vectors
  (all zeros and all ones first), generated here from ``seed``. Valid/ready inputs
  (``*valid*``, ``*vld*``, ``*ready*``, ``*rdy*``, 1 bit) are high three times in four;
  after a vector that raises an input valid whose ready output (same name with
  ``ready``/``rdy``, ``_i`` -> ``_o``) is low, the vector is held until ready, at most
  ``HOLD_CYCLES`` cycles (AXI-style: valid and data stay stable until accepted);
- applies each vector at the falling clock edge (``#10`` without a clock), then calls
  ``$finish``. Parameter overrides of the task become the testbench's own parameters,
  passed to the DUT.
"""

from __future__ import annotations

import itertools
import random
import re
import time
from collections import Counter
from typing import Any

from pyslang import syntax

from llm4cov.policies.base import Generation, GenerationRequest
from llm4cov.tasks.hdl import Design, Port, task_design
from llm4cov.tasks.model import Task

HOLD_CYCLES = 8
MAX_ELEMENTS = 64
"""Elements of an unpacked-array input driven per vector (the rest keep their value)."""

_CLOCK = re.compile(r"clk|clock", re.IGNORECASE)
_NOT_CLOCK = re.compile(r"(^|_)(en|ena|enable|div|sel|gate|cnt|count|rate|freq)(_|$)", re.I)
_RESET_TOKEN = re.compile(r"[a-z]?(rst|reset)[nb]?", re.IGNORECASE)
_ACTIVE_LOW = re.compile(
    r"(_n|_ni|_n_i|_b|_l|_bar|_neg)$|^n|(rst|reset)[nb](_?i)?$", re.IGNORECASE)
_HANDSHAKE = re.compile(r"valid|vld|ready|rdy", re.IGNORECASE)
_TIMESCALE = re.compile(r"^\s*`timescale\s+[^\n]+", re.MULTILINE)
_ZERO, _ONE = r"(?:1'[bdh]0|'0|0)", r"(?:1'[bdh]1|'1|1)"
_LOW_TEST = re.compile(rf"[!~]\s*(\w+)|(\w+)\s*==\s*{_ZERO}|(\w+)\s*!=\s*{_ONE}")
_HIGH_TEST = re.compile(rf"(\w+)|(\w+)\s*==\s*{_ONE}|(\w+)\s*!=\s*{_ZERO}")


def is_reset_name(name: str) -> bool:
    """Whether ``name`` names a reset by convention (see the module docstring)."""
    return any(_RESET_TOKEN.fullmatch(tok) for tok in name.split("_"))


def _is_clock_name(name: str) -> bool:
    return bool(_CLOCK.search(name)) and not _NOT_CLOCK.search(name)


def signal_usage(design: Design) -> tuple[dict[str, Counter], dict[str, Counter]]:
    """How the RTL uses each identifier: ``(edges, levels)``, where ``edges[name]``
    counts ``posedge``/``negedge`` events on it and ``levels[name]`` counts ``low``/
    ``high`` tests of it as a whole ``if`` condition (``if (!x)`` is a ``low`` test)."""
    edges: dict[str, Counter] = {}
    levels: dict[str, Counter] = {}

    def visit(node: object) -> bool:
        kind = getattr(node, "kind", None)
        if kind == syntax.SyntaxKind.SignalEventExpression:
            edge = node.edge.valueText
            if edge in ("posedge", "negedge"):
                edges.setdefault(str(node.expr).strip(), Counter())[edge] += 1
        elif kind == syntax.SyntaxKind.ConditionalStatement:
            text = " ".join(str(node.predicate).split())
            for level, pattern in (("low", _LOW_TEST), ("high", _HIGH_TEST)):
                match = pattern.fullmatch(text)
                if match:
                    name = next(g for g in match.groups() if g)
                    levels.setdefault(name, Counter())[level] += 1
                    break
        return True

    design.tree.root.visit(visit)
    return edges, levels


def reset_active_low(name: str, edges: dict[str, Counter], levels: dict[str, Counter]) -> bool:
    """The reset's polarity: from its edge events, else its ``if`` tests, else its name."""
    edge = edges.get(name, Counter())
    if edge["negedge"] != edge["posedge"]:
        return edge["negedge"] > edge["posedge"]
    level = levels.get(name, Counter())
    if level["low"] != level["high"]:
        return level["low"] > level["high"]
    return bool(_ACTIVE_LOW.search(name))


def _ready_partner(valid: Port, outputs: dict[str, Port]) -> Port | None:
    for src, dst in (("valid", "ready"), ("VALID", "READY"), ("vld", "rdy"), ("VLD", "RDY")):
        if src in valid.name:
            base = valid.name.replace(src, dst)
            for name in (base, re.sub(r"_i$", "_o", base), re.sub(r"_in$", "_out", base)):
                if name in outputs and outputs[name].width == 1 and not outputs[name].unpacked:
                    return outputs[name]
    return None


def _literal(port: Port, value: int) -> str:
    text = f"{port.width}'h{value:x}"
    return f"{port.type_text}'({text})" if port.cast else text


def _drivable(port: Port) -> bool:
    return port.cast or port.type_text.startswith("logic")


class Stimulus:
    """The pieces of one testbench (ports classified, the random source)."""

    def __init__(self, task: Task, seed: int):
        design = task_design(task)
        self.ports = design.ports(task.dut_module_name, task.parameters)
        edges, levels = signal_usage(design)
        inputs = [p for p in self.ports if p.direction == "input"]
        scalar = [p for p in inputs if p.width == 1 and not p.unpacked and not p.cast]
        self.clocks = [p for p in scalar if _is_clock_name(p.name)]
        self.resets = [p for p in scalar if p not in self.clocks and is_reset_name(p.name)]
        if not self.clocks:
            edged = [p for p in scalar if p not in self.resets and p.name in edges]
            self.clocks = edged[:1]
        self.low = {r.name: reset_active_low(r.name, edges, levels) for r in self.resets}
        self.data = [p for p in inputs
                     if p not in self.clocks and p not in self.resets and _drivable(p)]
        outputs = {p.name: p for p in self.ports if p.direction == "output"}
        self.holds = [(v, r) for v in self.data if v.width == 1 and not v.unpacked
                      and (r := _ready_partner(v, outputs)) is not None]
        self.rng = random.Random(seed)

    def reset(self, active: bool) -> list[str]:
        return [f"    {r.name} = 1'b{int(active != self.low[r.name])};" for r in self.resets]

    def value(self, port: Port, fill: int | None) -> int:
        if fill is not None:
            return 0 if fill == 0 else (1 << port.width) - 1
        if port.width == 1 and _HANDSHAKE.search(port.name):
            return int(self.rng.random() < 0.75)
        return self.rng.getrandbits(port.width)

    def vector(self, fill: int | None = None) -> str:
        parts = []
        for p in self.data:
            if not p.unpacked:
                parts.append(f"{p.name} = {_literal(p, self.value(p, fill))};")
                continue
            ranges = [range(a, b - 1, -1) if a >= b else range(a, b + 1) for a, b in p.unpacked]
            for index in itertools.islice(itertools.product(*ranges), MAX_ELEMENTS):
                where = "".join(f"[{i}]" for i in index)
                parts.append(f"{p.name}{where} = {_literal(p, self.value(p, fill))};")
        return " ".join(parts)


def random_testbench(
    task: Task, seed: int = 0, length: int = 200, exhaustive_bits: int = 10
) -> str:
    """A stimulus testbench for ``task``'s DUT (see the module docstring for the recipe).

    Raises:
        ValueError: the DUT module is not declared in the task's RTL, or has an
            interface port.
    """
    s = Stimulus(task, seed)
    lines: list[str] = []
    ts = next((m.group(0).strip() for f in task.rtl_files if (m := _TIMESCALE.search(f.content))),
              None)
    if ts:
        lines.append(ts)
    params = ", ".join(f"parameter {k} = {v}" for k, v in task.parameters.items())
    lines.append(f"module tb #({params});" if params else "module tb;")
    for p in s.ports:
        if p.direction == "inout":
            lines.append(f"  wire{' signed' if p.signed else ''}"
                         f"{f' [{p.width - 1}:0]' if p.width > 1 else ''} {p.name};")
        elif p.direction == "input" and _drivable(p):
            zero = f"{p.type_text}'(0)" if p.cast else "'0"
            init = f"'{{default: {zero}}}" if p.unpacked else zero
            lines.append(f"  {p.declaration()} = {init};")
        else:
            lines.append(f"  {p.declaration()};")
    overrides = ", ".join(f".{k}({k})" for k in task.parameters)
    conns = ",\n".join(f"    .{p.name}({p.name})" for p in s.ports)
    inst = f"{task.dut_module_name} #({overrides})" if overrides else task.dut_module_name
    lines.append(f"  {inst} {task.dut_instance_name} (\n{conns}\n  );")
    for i, clk in enumerate(s.clocks):
        lines.append(f"  always #{5 + 2 * i} {clk.name} = ~{clk.name};")

    step = f"@(negedge {s.clocks[0].name});" if s.clocks else "#10;"
    plain = all(not p.cast and not p.unpacked for p in s.data)
    bits = sum(p.width for p in s.data)
    body: list[str] = [*s.reset(True), f"    repeat (2) {step}", *s.reset(False)]
    if s.data and not s.clocks and plain and bits <= exhaustive_bits:
        target = "{" + ", ".join(p.name for p in s.data) + "}"
        body.append(f"    for (int i = 0; i < {1 << bits}; i++) begin")
        body.append(f"      {target} = {bits}'(i);")
        body.append(f"      {step}")
        body.append("    end")
        body.append(f"    {target} = '0; {step}")
    elif s.data:
        count = max(2, length)
        pulse_at = (2 * count) // 3
        hold = " ".join(
            f"for (int k = 0; k < {HOLD_CYCLES} && {v.name} && !{r.name}; k++) {step}"
            for v, r in s.holds) if s.clocks else ""
        for n in range(count):
            if s.resets and n == pulse_at:
                body += [*s.reset(True), f"    {step}", *s.reset(False)]
            vector = s.vector(fill=n if n < 2 else None)
            body.append(f"    {vector} {step}" + (f" {hold}" if hold else ""))
    else:
        body.append(f"    repeat ({length}) {step}")
    body.append(f"    repeat (2) {step}")
    body.append("    $finish;")
    lines += ["  initial begin", *body, "  end", "endmodule", ""]
    return "\n".join(lines)


class RandomStimulusPolicy:
    """The ``random`` policy: needs no model server; each request gets a new seed.

    ``length`` is the number of random vectors (clock cycles of stimulus). The seed is
    ``request.seed`` (or ``params.seed``, or 0), so samples differ and runs are
    reproducible.
    """

    name = "random"

    def __init__(self, length: int = 200, exhaustive_bits: int = 10) -> None:
        self.length = length
        self.exhaustive_bits = exhaustive_bits

    def generate(self, request: GenerationRequest) -> Generation:
        start = time.monotonic()
        seed = request.seed if request.seed is not None else (request.params.seed or 0)
        try:
            tb = random_testbench(request.task, seed, self.length, self.exhaustive_bits)
        except ValueError as exc:
            return Generation(text=f"random policy: {exc}", model=self.name,
                              latency_s=time.monotonic() - start)
        return Generation(
            text=f"```systemverilog\n{tb}```\n",
            model=self.name,
            latency_s=time.monotonic() - start,
        )

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "length": self.length,
                "exhaustive_bits": self.exhaustive_bits}
