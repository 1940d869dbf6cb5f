"""The built-in non-LLM baseline: a clock/reset/handshake-aware random testbench.

The ports are classified by ``stimulus_plan.py`` (clocks, resets and their polarity,
controls, clock domains). A DUT with a recognised register interface (a chip-select/
write-enable/address/data port with a decoded address map, Wishbone, APB, AXI4-Lite)
gets legal bus transactions in the ``compact`` style (``register_bus.py``: writes to
every decoded address, control bits pulsed in order, bounded waits on the status, reads
back, random transactions); valid/ready streams and bus-master ports get protocol
agents beside either (``agents.py``: legal stream transfers, a memory that answers the
master); ``bus=False`` (the ``random-flat`` policy) keeps the per-cycle loop below
everywhere. Two styles write the plan:

- ``compact`` (the default): the stimulus is a seeded loop, so the answer's length does
  not grow with the number of cycles (a testbench a model can learn to write):
  ``$urandom`` seeded once with ``$urandom(SEED)``, sized casts (``8'($urandom)``,
  wider ports from concatenated draws, package types cast), unpacked inputs driven by
  ``foreach``, controls by ``$urandom_range`` (a clear once in 32 cycles, a start pulse
  once in 16, valid/enable three in four), every clock domain in its own ``fork``
  branch on its own clock's falling edge with its resets released at its own time;
- ``vectors``: one literal line per stimulus vector (the style before the compact one,
  kept for comparison; controls are random data, one domain).

Both run every clock as a free-running clock, hold the resets active for two steps,
release them and pulse them once more two thirds of the way through; drive the other
inputs exhaustively when the design has no clock and at most ``exhaustive_bits`` plain
input bits, and otherwise for ``length`` cycles (all zeros and all ones first); hold a
vector that raises a valid whose ready output (same name with ``ready``/``rdy``,
``_i`` -> ``_o``) is low until ready, at most ``HOLD_CYCLES`` cycles (AXI-style); apply
each vector at the falling clock edge (``#10`` without a clock), then call ``$finish``.
Parameter overrides of the task become the testbench's own parameters.
"""

from __future__ import annotations

import itertools
import re
import time
from typing import Any, Literal

from llm4cov.policies.agents import Agent, fork, master_ports, protocol_agents
from llm4cov.policies.base import Generation, GenerationRequest
from llm4cov.policies.bus_testbench import bus_testbench, usable
from llm4cov.policies.register_bus import AddressMap, Bus, address_map, detect_bus
from llm4cov.policies.stimulus_plan import (
    _HANDSHAKE,
    SETTING_HOLD,
    Domain,
    Drive,
    Stimulus,
    drivable,
)
from llm4cov.tasks.hdl import Port
from llm4cov.tasks.model import Task

Style = Literal["compact", "vectors"]
"""How the built-in testbench writes its stimulus (see the module docstring)."""
HOLD_CYCLES = 8
MAX_ELEMENTS = 64
"""Elements of an unpacked-array input driven per vector in the ``vectors`` style."""
_TIMESCALE = re.compile(r"^\s*`timescale\s+[^\n]+", re.MULTILINE)


def _literal(port: Port, value: int) -> str:
    text = f"{port.width}'h{value:x}"
    return f"{port.type_text}'({text})" if port.cast else text


def _value(s: Stimulus, port: Port, fill: int | None) -> int:
    if fill is not None:
        return 0 if fill == 0 else (1 << port.width) - 1
    if port.width == 1 and _HANDSHAKE.search(port.name):
        return int(s.rng.random() < 0.75)
    return s.rng.getrandbits(port.width)


def _vector(s: Stimulus, fill: int | None = None) -> str:
    """One literal stimulus vector (``vectors`` style): every data input assigned."""
    parts = []
    for p in s.data:
        if not p.unpacked:
            parts.append(f"{p.name} = {_literal(p, _value(s, p, fill))};")
            continue
        ranges = [range(a, b - 1, -1) if a >= b else range(a, b + 1) for a, b in p.unpacked]
        for index in itertools.islice(itertools.product(*ranges), MAX_ELEMENTS):
            where = "".join(f"[{i}]" for i in index)
            parts.append(f"{p.name}{where} = {_literal(p, _value(s, p, fill))};")
    return " ".join(parts)


def _header(task: Task, s: Stimulus) -> list[str]:
    """`timescale, the module, one variable per port, the DUT instance and the clocks."""
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
        elif p.direction == "input" and drivable(p):
            zero = f"{p.type_text}'(0)" if p.cast else "'0"
            init = f"'{{default: {zero}}}" if p.unpacked else zero
            lines.append(f"  {p.declaration()} = {init};")
        else:
            lines.append(f"  {p.declaration()};")
    for iface in s.interfaces:  # an interface port's instance, joined to its members'
        lines.append(f"  {iface.instantiation()}")
    for p in s.ports:
        if p.via:
            lines.append(f"  assign {p.via} = {p.name};" if p.direction == "input"
                         else f"  assign {p.name} = {p.via};")
    overrides = ", ".join(f".{k}({k})" for k in task.parameters)
    conns = ",\n".join([f"    .{p.name}({p.name})" for p in s.ports if not p.via]
                       + [f"    .{f.name}({f.instance})" for f in s.interfaces])
    inst = f"{task.dut_module_name} #({overrides})" if overrides else task.dut_module_name
    lines.append(f"  {inst} {task.dut_instance_name} (\n{conns}\n  );")
    for i, clk in enumerate(s.clocks):
        lines.append(f"  always #{5 + 2 * i} {clk.name} = ~{clk.name};")
    return lines


def _exhaustive(s: Stimulus, exhaustive_bits: int) -> list[str] | None:
    """The exhaustive loop of a combinational design with few plain input bits."""
    plain = all(not p.cast and not p.unpacked for p in s.data)
    bits = sum(p.width for p in s.data)
    if not s.data or s.clocks or not plain or bits > exhaustive_bits:
        return None
    target = "{" + ", ".join(p.name for p in s.data) + "}"
    return [f"    for (int i = 0; i < {1 << bits}; i++) begin",
            f"      {target} = {bits}'(i);",
            "      #10;",
            "    end",
            f"    {target} = '0; #10;"]


def _vectors_body(s: Stimulus, length: int, exhaustive_bits: int) -> list[str]:
    step = Domain(s.clocks[0] if s.clocks else None).step()
    body: list[str] = [*s.reset(True), f"    repeat (2) {step}", *s.reset(False)]
    loop = _exhaustive(s, exhaustive_bits)
    if loop is not None:
        body += loop
    elif s.data:
        count = max(2, length)
        pulse_at = (2 * count) // 3
        hold = " ".join(
            f"for (int k = 0; k < {HOLD_CYCLES} && {v.name} && !{r.name}; k++) {step}"
            for v, r in s.holds) if s.clocks else ""
        for n in range(count):
            if s.resets and n == pulse_at:
                body += [*s.reset(True), f"    {step}", *s.reset(False)]
            vector = _vector(s, fill=n if n < 2 else None)
            body.append(f"    {vector} {step}" + (f" {hold}" if hold else ""))
    else:
        body.append(f"    repeat ({length}) {step}")
    return body


def _draw(port: Port) -> str:
    """A uniformly random value of the port's type (one element of an array)."""
    words = -(-port.width // 32)
    raw = "$urandom" if words == 1 else "{" + ", ".join(["$urandom"] * words) + "}"
    value = raw if port.width == 32 else f"{port.width}'({raw})"
    return f"{port.type_text}'({value})" if port.cast else value


def _control(s: Stimulus, port: Port) -> str:
    drive = s.drives[port.name]
    if drive is Drive.MOSTLY_HIGH:
        return "($urandom_range(3) != 0)"
    odds = 32 if drive is Drive.RARE_CLEAR else 16
    return f"($urandom_range({odds - 1}) {'!=' if s.active_low[port.name] else '=='} 0)"


def _setting(port: Port) -> str:
    """A setting's hold-and-redraw (:attr:`Drive.SETTING`): a new value when it still
    holds a fill vector (all zeros or all ones) or once in ``SETTING_HOLD`` cycles;
    the value is 1-4 half of the time, else uniformly random."""
    w, name = port.width, port.name
    return (f"if ({name} == '0 || {name} == '1 || $urandom_range({SETTING_HOLD - 1}) == 0) "
            f"{name} = $urandom_range(1) ? {w}'($urandom_range(1, 4)) : {_draw(port)};")


def _assign(s: Stimulus, port: Port, index: list[str]) -> str:
    if s.drives[port.name] is Drive.SETTING:
        return _setting(port) if s.hold else f"{port.name} = {_draw(port)};"
    if s.drives[port.name] is not Drive.DATA:
        return f"{port.name} = {_control(s, port)};"
    if not port.unpacked:
        return f"{port.name} = {_draw(port)};"
    names = index[:len(port.unpacked)]
    where = "".join(f"[{i}]" for i in names)
    return f"foreach ({port.name}[{', '.join(names)}]) {port.name}{where} = {_draw(port)};"


def _free(base: str, taken: set[str]) -> str:
    name, n = base, 0
    while name in taken:
        n += 1
        name = f"{base}{n}"
    return name


def _fill(ports: list[Port], ones: bool) -> str:
    value = "'1" if ones else "'0"
    parts = []
    for p in ports:
        v = f"{p.type_text}'({p.width}'({value}))" if p.cast else value
        parts.append(f"{p.name} = '{{default: {v}}};" if p.unpacked else f"{p.name} = {v};")
    return " ".join(parts)


def _domain_block(s: Stimulus, d: Domain, order: int, length: int, taken: set[str],
                  pad: str, agents: list[Agent] | None = None) -> list[str]:
    """The stimulus of one clock domain (``compact`` style), indented by ``pad``; the
    ``agents`` of its clock start after its reset release and drive their own inputs."""
    step = d.step()
    n = _free("n", taken)
    k = _free("k", taken | {n})
    index = [_free(f"i{j}", taken | {n, k}) for j in range(4)]
    mine = [a for a in agents or [] if d.clock is not None and a.clock == d.clock.name]
    driven = {name for a in agents or [] for name in a.inputs}
    data = [p for p in d.data if p.name not in driven]
    body = [f"{pad}repeat ({2 + 3 * order}) {step}",
            *(f"{pad}{line.strip()}" for line in s.reset(False, d.resets)),
            *fork(mine, pad)]
    if not data and mine and d.resets:  # the agents drive every input: a reset pulse
        at = max(1, (2 * length) // 3)
        return [*body, f"{pad}repeat ({at}) {step}",
                *(f"{pad}{line.strip()}" for line in s.reset(True, d.resets)), f"{pad}{step}",
                *(f"{pad}{line.strip()}" for line in s.reset(False, d.resets)),
                f"{pad}repeat ({max(1, length - at - 1)}) {step}"]
    if not data:
        return [*body, f"{pad}repeat ({length}) {step}"]
    hold = " ".join(f"for (int {k} = 0; {k} < {HOLD_CYCLES} && {v.name} && !{r.name}; "
                    f"{k}++) {step}" for v, r in d.holds if v in data) if d.clock else ""
    body += [f"{pad}{_fill(data, False)} {step}", f"{pad}{_fill(data, True)} {step}"]
    cycles = max(1, length - 2)  # after the two fill vectors
    body.append(f"{pad}for (int {n} = 0; {n} < {cycles}; {n}++) begin")
    if d.resets:
        body.append(f"{pad}  if ({n} == {min(cycles - 1, max(0, (2 * length) // 3 - 2))}) begin")
        body += [f"{pad}    {line.strip()}" for line in s.reset(True, d.resets)]
        body.append(f"{pad}    {step}")
        body += [f"{pad}    {line.strip()}" for line in s.reset(False, d.resets)]
        body.append(f"{pad}  end")
    body += [f"{pad}  {_assign(s, p, index)}" for p in data]
    body.append(f"{pad}  {step}")
    if hold:
        body.append(f"{pad}  {hold}")
    body.append(f"{pad}end")
    return body


def _compact_body(s: Stimulus, seed: int, length: int, exhaustive_bits: int,
                  agents: list[Agent] | None = None) -> list[str]:
    loop = _exhaustive(s, exhaustive_bits)
    if loop is not None:
        return [*s.reset(True), "    repeat (2) #10;", *s.reset(False), *loop]
    taken = {p.name for p in s.ports}
    body = [f"    void'($urandom({seed}));", *s.reset(True)]
    if len(s.domains) == 1:
        return body + _domain_block(s, s.domains[0], 0, length, taken, "    ", agents)
    body.append("    fork")
    for order, d in enumerate(s.domains):
        body += ["      begin", *_domain_block(s, d, order, length, taken, "        ", agents),
                 "      end"]
    body.append("    join")
    return body


def register_bus_plan(task: Task, s: Stimulus) -> tuple[Bus, AddressMap] | None:
    """The DUT's register bus and address map when the bus style applies to it
    (``register_bus.usable``), else None; a bus-master port's signals are not part of
    it (``agents.master_ports``)."""
    masters = master_ports(s)
    bus = detect_bus([p for p in s.ports if p.name not in masters])
    if bus is None or not s.clocks:
        return None
    amap = address_map(s.design, task.dut_module_name, bus, task.parameters)
    return (bus, amap) if usable(bus, amap) else None


def random_testbench(
    task: Task, seed: int = 0, length: int = 200, exhaustive_bits: int = 10,
    style: Style = "compact", bus: bool = True,
) -> str:
    """A stimulus testbench for ``task``'s DUT in ``style`` (see the module docstring for
    the recipe); ``length`` is the number of stimulus cycles (per clock domain). With
    ``bus`` (the default) and the ``compact`` style, a DUT with a recognised register
    interface gets legal bus transactions instead (``register_bus.py``; ``length`` sets
    their number), and its streams and bus-master ports their protocol agents
    (``agents.py``), with or without a register bus; ``bus=False`` keeps the per-cycle
    random loop (``random-flat``).

    Raises:
        ValueError: the DUT module is not declared in the task's RTL, or has an
            interface port, or ``style`` is unknown.
    """
    if style not in ("compact", "vectors"):
        raise ValueError(f"unknown testbench style {style!r} (compact, vectors)")
    s = Stimulus(task, seed)
    lines = _header(task, s)
    plan = register_bus_plan(task, s) if bus and style == "compact" else None
    agents = protocol_agents(s, set(plan[0].ports()) if plan else set()) \
        if bus and style == "compact" else []
    if plan is not None:
        return bus_testbench(task, s, *plan, seed=seed, length=length, header=lines,
                             agents=agents)
    for a in agents:
        lines += a.lines
    body = (_compact_body(s, seed, length, exhaustive_bits, agents) if style == "compact"
            else _vectors_body(s, length, exhaustive_bits))
    last = Domain(s.clocks[0] if s.clocks else None).step()
    body += [f"    repeat (2) {last}", "    $finish;"]
    lines += ["  initial begin", *body, "  end", "endmodule", ""]
    return "\n".join(lines)


def recognised_protocols(task: Task) -> list[str]:
    """The protocols the compact random testbench speaks to ``task``'s DUT, in words
    (``apb register bus (paddr)``, ``input stream in_valid/in_ready``, ``wishbone master
    port wbm_*``); empty: per-cycle random inputs only.

    Raises:
        ValueError: as :func:`random_testbench`.
    """
    s = Stimulus(task, 0)
    plan = register_bus_plan(task, s)
    found = [f"{plan[0].kind} register bus ({plan[0].addr.name})"] if plan else []
    return found + [a.what for a in protocol_agents(s, set(plan[0].ports()) if plan else set())]


ROUND_SEED_STRIDE = 7919
"""Round r of one sample draws with seed ``seed + r * ROUND_SEED_STRIDE`` (a prime)."""


class RandomStimulusPolicy:
    """The ``random`` policy (``random-vectors`` for the ``vectors`` style,
    ``random-flat`` for the ``compact`` style without register-bus transactions): needs
    no model server.

    ``length`` is the number of stimulus cycles of the first round. The seed is
    ``request.seed`` (or ``params.seed``, or 0), so samples differ and runs are
    reproducible. A later round of the agent (``request.state.round`` = r > 0) draws a
    new stimulus: seed ``seed + r * ROUND_SEED_STRIDE`` and ``length * 2**r`` cycles, so
    rounds 2-3 are not a repeat of round 1.
    """

    def __init__(self, length: int = 200, exhaustive_bits: int = 10,
                 style: Style = "compact", bus: bool = True) -> None:
        self.length = length
        self.exhaustive_bits = exhaustive_bits
        self.style = style
        self.bus = bus
        self.name = ("random" if bus else "random-flat") if style == "compact" \
            else f"random-{style}"

    def testbench(self, request: GenerationRequest) -> str:
        """The testbench this policy answers ``request`` with (see the class docstring).

        Raises:
            ValueError: the DUT cannot be driven (see :func:`random_testbench`).
        """
        seed = request.seed if request.seed is not None else (request.params.seed or 0)
        r = request.state.round
        return random_testbench(request.task, seed + r * ROUND_SEED_STRIDE,
                                self.length * 2 ** r, self.exhaustive_bits, self.style,
                                self.bus)

    def generate(self, request: GenerationRequest) -> Generation:
        start = time.monotonic()
        try:
            tb = self.testbench(request)
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
                "exhaustive_bits": self.exhaustive_bits, "style": self.style,
                "bus": self.bus}
