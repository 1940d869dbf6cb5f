"""The register-bus testbench: a compact testbench of legal bus transactions for a bus
and address map that :mod:`llm4cov.policies.register_bus` recognised.

**Testbench** (:func:`bus_testbench`): the random style's header (clocks, ports, DUT),
tasks ``tb_write(addr, data)``/``tb_read(addr, data)`` that obey the protocol (wait for
``ack``/``pready``/``*ready``/``*valid``, at most ``HANDSHAKE`` cycles; an APB or AXI4-Lite
request the DUT leaves unanswered that long ends with a reset pulse of the bus's clock
domain, the only way its protocol lets a requester withdraw it: AMBA APB 3.1, AXI
A3.2.1; without a reset it is withdrawn), then
``iterations`` rounds of: write every non-control address (random data, all ones in the
last round but one and zeros in the last, so every data bit toggles both ways after
random use; a config register's low four bits sweep the round number), pulse each
control bit in ascending order, each followed by a bounded wait (polling the status
register until its ready bit sets, at most ``poll`` reads, else ``settle`` idle cycles),
read every address back, then random transactions (a decoded or a fully random address,
read or write, random data, a random byte-lane strobe where the bus has one). The reset
is pulsed before rounds 2, 6, 10, ... (round 1 of two), which also frees a core that a
random command left waiting forever. Streams and bus-master ports of the DUT get their
protocol agents (:mod:`llm4cov.policies.agents`), started after the reset release; the
inputs neither the bus nor an agent uses are driven as the random style drives them (per
clock domain, in parallel, until the transactions end). Iterations:
``ceil(length / 50)`` (at least 2) times one more per 1,500 RTL lines; the settle wait is ``16 +
min(length, WAIT_LENGTH) / 4`` cycles, the poll bound ``50 + 2 * min(length,
WAIT_LENGTH)`` reads (``length`` doubles with each agent round). Past
:data:`WAIT_LENGTH` a longer ``length`` adds rounds only, so the cycles grow with
``length``, not with its square (``close``'s 20000-cycle rung ran past the simulator's
time limit on every register-bus core: 400 rounds of 5,016-cycle waits; measured, rounds
that grow beat waits that grow: simple_spi 97.87 against 96.98 % merged).
"""

from __future__ import annotations

import re

from llm4cov.policies.agents import Agent
from llm4cov.policies.register_bus import HANDSHAKE, AddressMap, Bus, Register, norm_name
from llm4cov.policies.stimulus_plan import Domain, Stimulus
from llm4cov.tasks.hdl import Port
from llm4cov.tasks.model import Task


def _active(port: Port, on: bool) -> str:
    """``1'b1``/``1'b0`` for the port's active (``on``) or idle level; active low by
    name (``cs_n``, ``we_b``)."""
    low = bool(re.search(r"_(n|b|l|bar)$", norm_name(port.name)))
    return f"1'b{int(on != low)}"


class _Writer:
    """The SystemVerilog of one bus's tasks (``tb_write``, ``tb_read``)."""

    def __init__(self, bus: Bus, clock: str, reset: tuple[list[str], list[str]] = ([], [])):
        """``reset``: the statements that assert and release the bus domain's resets."""
        self.bus = bus
        self.r = bus.roles
        self.pos = f"@(posedge {clock});"
        self.neg = f"@(negedge {clock});"
        self.reset = reset

    def _abort(self, pending: str) -> str:
        """A reset pulse when ``pending`` (a request still unanswered) holds: the
        requester's valid (``psel``, ``awvalid``, ...) may drop only in reset, so it
        drops there, a falling edge after the reset is asserted; the reset is released
        a cycle later, on a falling edge (clear of the rising edge the DUT samples)."""
        on, off = self.reset
        if not on:
            return ""
        return (f"if ({pending}) begin {self.neg} {' '.join(on)} {' '.join(self.idle())} "
                f"{self.pos} {self.neg} {' '.join(off)} end")

    def _set(self, role: str, value: str) -> str:
        p = self.r.get(role)
        return f"{p.name} = {value};" if p is not None else ""

    def _on(self, role: str, on: bool = True) -> str:
        p = self.r.get(role)
        return f"{p.name} = {_active(p, on)};" if p is not None else ""

    def idle(self) -> list[str]:
        """Statements that leave the bus idle."""
        parts = [self._on(r, False) for r in ("cs", "we", "re", "cyc", "stb", "psel",
                                               "penable", "awvalid", "wvalid", "arvalid")]
        parts += [self._set(r, "'1") for r in ("sel", "pstrb", "wstrb", "bready", "rready")]
        parts += [self._set(r, "'0") for r in ("pprot", "awprot", "arprot")]
        return [p for p in parts if p]

    def _lag(self, role: str, after: bool) -> list[str]:
        """AXI4-Lite response back-pressure: with a lag n > 0 (:data:`LAG`, drawn in the
        random transactions) the ``role`` ready is low from the request on
        (``after=False``) and raised n cycles after the request's handshakes
        (``after=True``); with 0 it stays high, as in the register sweep."""
        p = self.r.get(role)
        if p is None:
            return []
        if not after:
            return [f"if ({LAG} != 0) {p.name} = 1'b0;"]
        return [f"if ({LAG} != 0) begin repeat ({LAG}) {self.pos} {p.name} = 1'b1; end"]

    def _accepted(self) -> list[str]:
        """After a lagged response: the clock edge that accepts it, before the next
        request may lower the ready again."""
        return [f"if ({LAG} != 0) {self.pos}"]

    def _wait(self, cond: str) -> str:
        return (f"for (int k = 0; k < {HANDSHAKE} && !({cond}); k++) {self.pos}")

    def tasks(self, aw: int, dw: int, rw: int) -> list[str]:
        kind, r = self.bus.kind, self.r
        a_decl = f"input logic [{aw - 1}:0] a" if aw > 1 else "input logic a"
        d_decl = f"input logic [{dw - 1}:0] d" if dw > 1 else "input logic d"
        q_decl = f"output logic [{rw - 1}:0] q" if rw > 1 else "output logic q"
        rdata = r.get("rdata")
        sample = f"q = {rdata.name};" if rdata is not None else "q = '0;"
        idle = " ".join(self.idle())
        addr = r["addr"].name
        wdata = self._set("wdata", "d")
        if kind == "csr":
            write = [f"{self._on('cs')} {self._on('we')} {self._on('re', False)} "
                     f"{addr} = a; {wdata}", self.neg, idle]
            read = [f"{self._on('cs')} {self._on('we', False)} {self._on('re')} {addr} = a;",
                    self.pos, sample, self.neg, idle]
        elif kind == "wishbone":
            ack = " || ".join(r[x].name for x in ("ack", "err", "rty") if x in r)
            start = f"{self._on('cyc')} {self._on('stb')} {self._set('sel', STROBE)}"
            write = [f"{start} {self._on('we')} {addr} = a; {wdata}", self.pos,
                     self._wait(ack), self.neg, idle, self.neg]
            read = [f"{start} {self._on('we', False)} {addr} = a;", self.pos,
                    self._wait(ack), sample, self.neg, idle, self.neg]
        elif kind == "apb":
            ready = r["pready"].name if "pready" in r else "1'b1"
            start = f"{self._on('psel')} {self._on('penable', False)} {addr} = a;"
            write = [f"{start} {self._on('we')} {wdata} {self._set('pstrb', STROBE)}", self.neg,
                     self._on("penable"), self.pos, self._wait(ready),
                     self._abort(f"!({ready})"), self.neg, idle]
            read = [f"{start} {self._on('we', False)}", self.neg,
                    self._on("penable"), self.pos, self._wait(ready), sample,
                    self._abort(f"!({ready})"), self.neg, idle]
        else:  # axil
            ar = r["araddr"].name
            aw_ok = r["awready"].name if "awready" in r else "1'b1"
            w_ok = r["wready"].name if "wready" in r else "1'b1"
            ar_ok = r["arready"].name if "arready" in r else "1'b1"
            bvalid = r["bvalid"].name if "bvalid" in r else "1'b1"
            aws, ws = r["awvalid"].name, r["wvalid"].name
            write = ["logic ta, tw;",
                     f"{addr} = a; {wdata} {aws} = 1'b1; {ws} = 1'b1; "
                     f"{self._set('bready', chr(39) + '1')} {self._set('wstrb', STROBE)}",
                     *self._lag("bready", after=False),
                     f"for (int k = 0; k < {HANDSHAKE} && ({aws} || {ws}); k++) begin",
                     f"  {self.pos} ta = {aw_ok}; tw = {w_ok};",
                     f"  {self.neg} if (ta) {aws} = 1'b0; if (tw) {ws} = 1'b0;",
                     "end", self._abort(f"{aws} || {ws}"), f"{aws} = 1'b0; {ws} = 1'b0;",
                     *self._lag("bready", after=True),
                     self._wait(bvalid), *self._accepted(), self.neg]
            read = ["logic tr;", f"{ar} = a; {r['arvalid'].name} = 1'b1; "
                    f"{r['rready'].name} = 1'b1;", *self._lag("rready", after=False),
                    f"for (int k = 0; k < {HANDSHAKE}; k++) begin",
                    f"  {self.pos} tr = {ar_ok};", f"  {self.neg} if (tr) break;", "end",
                    self._abort("!tr"), f"{r['arvalid'].name} = 1'b0;",
                    *self._lag("rready", after=True),
                    f"for (int k = 0; k < {HANDSHAKE} && !{r['rvalid'].name}; k++) {self.pos}",
                    sample, *self._accepted(), self.neg]
        lines = [f"  task automatic tb_write({a_decl}, {d_decl});"]
        lines += [f"    {s}" for s in write if s.strip()]
        lines += ["  endtask", f"  task automatic tb_read({a_decl}, {q_decl});"]
        lines += [f"    {s}" for s in read if s.strip()]
        lines.append("  endtask")
        return lines


#: The testbench's byte-lane strobe (AXI4-Lite ``wstrb``, APB ``pstrb`` on writes,
#: Wishbone ``sel`` on every cycle) and AXI4-Lite response lag (cycles a response's ready
#: is held low): all ones and 0 in the register sweep, random in the random
#: transactions (partial writes and reads, a slave that must hold its response).
STROBE = "tb_strb"
LAG = "tb_lag"
STROBE_ROLE = {"axil": "wstrb", "apb": "pstrb", "wishbone": "sel"}
"""The bus role that carries the byte-lane strobe, per bus kind."""


def _strobe(bus: Bus) -> Port | None:
    role = STROBE_ROLE.get(bus.kind)
    return bus.roles.get(role) if role is not None else None


def _knob_lines(bus: Bus) -> list[str]:
    """Declarations of the strobe (where the bus has one) and, on AXI4-Lite, the lag."""
    strobe = _strobe(bus)
    lines = [f"  logic [{strobe.width - 1}:0] {STROBE} = '1;"] if strobe is not None else []
    if bus.kind == "axil":
        if strobe is None:
            lines.append(f"  logic [0:0] {STROBE} = '1;")
        lines.append(f"  int {LAG} = 0;")
    return lines


def _random_knobs(bus: Bus, before: bool) -> list[str]:
    """Statements that draw (``before`` a random transaction) or restore (after the
    random transactions) the byte-lane strobe, and on AXI4-Lite the response lag and
    protection bits; none for a bus without any."""
    axil = bus.kind == "axil"
    if not axil and _strobe(bus) is None:
        return []
    if not before:
        return [f"      {LAG} = 0;"] * axil + [f"      {STROBE} = '1;"]
    r = bus.roles
    return [f"        {LAG} = $urandom_range(3);"] * axil + [f"        {STROBE} = $urandom;"] \
        + [f"        {r[x].name} = $urandom;" for x in ("awprot", "arprot") if x in r]


def _hex(width: int, value: int) -> str:
    return f"{width}'h{value:x}"


def _other_drivers(s: Stimulus, bus: Bus, done: str, agents: list[Agent]) -> list[str]:
    """Fork branches that drive the inputs neither the bus nor an agent uses, as the
    random style does, on their own domain's edges, until ``done``; the agents start
    in the same fork."""
    from llm4cov.policies.random_stimulus import HOLD_CYCLES, _assign, _free

    taken = {p.name for p in s.ports} | {done}
    index = [_free(f"i{j}", taken) for j in range(4)]
    k = _free("k", taken)
    branches: list[str] = []
    skip = bus.inputs() | {name for a in agents for name in a.inputs}
    for d in s.domains:
        data = [p for p in d.data if p.name not in skip]
        if not data:
            continue
        step = d.step()
        holds = [(v, r) for v, r in d.holds if v in data]
        lines = ["      begin", f"        while (!{done}) begin"]
        lines += [f"          {_assign(s, p, index)}" for p in data]
        lines.append(f"          {step}")
        for v, r in holds:
            lines.append(f"          for (int {k} = 0; {k} < {HOLD_CYCLES} && {v.name} && "
                         f"!{r.name}; {k}++) {step}")
        lines += ["        end", "      end"]
        branches += lines
    branches += [f"      {a.call}" for a in agents]
    return ["    fork", *branches, "    join_none"] if branches else []


def _bus_clock(s: Stimulus, bus: Bus) -> Domain:
    for d in s.domains:
        if bus.addr in d.data:
            return d
    return s.domains[0]


#: The stimulus length past which the settle wait and the poll bound stop growing.
WAIT_LENGTH = 1000


def iterations_for(task: Task, length: int) -> int:
    """Rounds of transactions for ``length`` stimulus cycles (200 -> 4) and the core's
    size (one more multiple per 1,500 RTL lines)."""
    lines = sum(f.content.count("\n") for f in task.rtl_files)
    return max(2, -(-length // 50)) * (1 + lines // 1500)


def usable(bus: Bus | None, amap: AddressMap | None) -> bool:
    """Whether the bus style applies: a protocol bus, or a ``csr`` port with at least
    two decoded addresses (a RAM port decodes none)."""
    if bus is None or amap is None:
        return False
    return bus.kind != "csr" or len(amap.registers) >= 2


def bus_testbench(task: Task, s: Stimulus, bus: Bus, amap: AddressMap, seed: int,
                  length: int, header: list[str], agents: list[Agent] | None = None) -> str:
    """The register-bus testbench (see the module docstring); ``header`` is the random
    style's module header (ports, DUT, clocks), ``length`` the stimulus cycles
    (iterations, the settle wait and the poll bound grow with it); ``agents`` (streams,
    bus-master responders, :mod:`llm4cov.policies.agents`) start after the reset
    release, beside the transactions."""
    agents = agents or []
    d = _bus_clock(s, bus)
    if d.clock is None:
        raise ValueError("a register bus needs a clock")
    clock = d.clock.name
    neg = f"@(negedge {clock});"
    reset = ([x.strip() for x in s.reset(True, d.resets)],
             [x.strip() for x in s.reset(False, d.resets)])
    w = _Writer(bus, clock, reset)
    aw = bus.addr.width
    dw = bus.roles["wdata"].width if "wdata" in bus.roles else 32
    rw = bus.roles["rdata"].width if "rdata" in bus.roles else dw
    iters = iterations_for(task, length)
    settle = 16 + min(length, WAIT_LENGTH) // 4
    poll = 50 + min(length, WAIT_LENGTH) * 2
    regs = amap.registers or [Register(0)]
    writes = [r for r in regs if r.role != "control"] or regs
    done = "tb_done"
    lines = list(header)
    for a in agents:
        lines += a.lines
    lines.append(f"  bit {done} = 1'b0;")
    lines.append(f"  logic [{aw - 1}:0] tb_addr [{len(regs)}] = "
                 f"'{{{', '.join(_hex(aw, r.addr) for r in regs)}}};")
    lines.append(f"  logic [{aw - 1}:0] tb_waddr [{len(writes)}] = "
                 f"'{{{', '.join(_hex(aw, r.addr) for r in writes)}}};")
    lines.append(f"  bit tb_cfg [{len(writes)}] = "
                 f"'{{{', '.join('1' if r.role == 'config' else '0' for r in writes)}}};")
    lines.append(f"  logic [{dw - 1}:0] tb_d;")
    lines.append(f"  logic [{rw - 1}:0] tb_q;")
    lines.append(f"  logic [{aw - 1}:0] tb_a;")
    lines += _knob_lines(bus)
    lines += w.tasks(aw, dw, rw)
    status = amap.role("status")
    lines.append("  task automatic tb_wait();")
    if status and amap.wait_bit is not None:
        bit, level = amap.wait_bit
        lines += [f"    logic [{rw - 1}:0] q;", f"    repeat (4) {neg}",
                  f"    for (int k = 0; k < {poll}; k++) begin",
                  f"      tb_read({_hex(aw, status[0].addr)}, q);",
                  f"      if (q[{bit}] == 1'b{level}) break;", "    end"]
    else:
        lines.append(f"    repeat ({settle}) {neg}")
    lines.append("  endtask")
    draw = f"{dw}'({{{', '.join(['$urandom'] * -(-dw // 32))}}})" if dw != 32 else "$urandom"
    adraw = f"{aw}'({{{', '.join(['$urandom'] * -(-aw // 32))}}})" if aw != 32 else "$urandom"
    body = [f"    void'($urandom({seed}));", *s.reset(True),
            *(f"    {x}" for x in w.idle()), f"    repeat (2) {neg}", *s.reset(False),
            *_other_drivers(s, bus, done, agents), f"    repeat (2) {neg}",
            f"    for (int it = 0; it < {iters}; it++) begin"]
    if s.resets:
        when = "it % 4 == 2" if iters > 2 else "it == 1"
        body += [f"      if ({when}) begin",
                 *(f"    {x}" for x in s.reset(True)), f"        {neg}",
                 *(f"    {x}" for x in s.reset(False)), f"        {neg}", "      end"]
    body += [f"      for (int j = 0; j < {len(writes)}; j++) begin",
             f"        tb_d = it == {iters - 2} ? '1 : it == {iters - 1} ? '0 : {draw};"]
    if dw >= 4:
        body.append("        if (tb_cfg[j]) tb_d[3:0] = 4'(it);")
    body += ["        tb_write(tb_waddr[j], tb_d);", "      end"]
    controls = amap.role("control")
    for reg in controls:
        for bit in amap.control_bits:
            if bit < dw:
                body += [f"      tb_write({_hex(aw, reg.addr)}, {_hex(dw, 1 << bit)});",
                         "      tb_wait();"]
    if not controls:
        body.append("      tb_wait();")
    body += [f"      for (int j = 0; j < {len(regs)}; j++) tb_read(tb_addr[j], tb_q);",
             f"      repeat ({max(8, len(regs))}) begin",
             f"        tb_a = $urandom_range(1) == 1 ? tb_addr[$urandom_range({len(regs) - 1})] "
             f": {adraw};", *_random_knobs(bus, before=True),
             f"        if ($urandom_range(1) == 1) tb_write(tb_a, {draw}); "
             f"else tb_read(tb_a, tb_q);",
             "      end", *_random_knobs(bus, before=False), "    end",
             f"    {done} = 1'b1;", f"    repeat (2) {neg}",
             "    $finish;"]
    lines += ["  initial begin", *body, "  end", "endmodule", ""]
    return "\n".join(lines)
