"""Protocol agents of the ``random`` policy's testbench: processes that run beside the
main stimulus (the register-bus transactions or the per-cycle loop), one per stream or
bus-master port of the DUT, each a ``task`` forked after the reset release of its clock
domain, on that clock's falling edges.

- **input stream** (``tb_inN``, :mod:`llm4cov.policies.streams`): an idle gap (1-3
  cycles, one in four 8-32), then a burst of 1 to ``MAX_BURST`` transfers (one burst in
  ``LONG_ODDS`` a long one, ``LONG_BURST``): valid raised
  with random data (``last`` on the burst's last beat, ``first`` on its first, byte
  enables all ones but on the last beat), each held until ready (a monitor samples
  valid && ready at the rising edge) however long that takes, as the stream protocols
  ask (AMBA AXI4-Stream 2.2.1: once valid is high it stays until the handshake; a
  withdrawn valid reached paths no legal source can), the burst ending early only when
  a reset of the clock's domain is asserted (the source drops valid in reset);
- **output stream** (``tb_outN``): ready driven in phases of 8-32 cycles: always high,
  random (one in two), mostly low (one in four) or held low (back-pressure);
- **bus-master port** (``tb_wbmN``, ``tb_apbN``, ``tb_axwN``/``tb_axrN``,
  :mod:`llm4cov.policies.bus_master`): a memory of ``MEM_WORDS`` words (random at the
  start, written by the DUT's writes, word ``(address >> log2(bytes per word)) %
  MEM_WORDS``) that answers each request after 0 wait states, one in four after 1-4
  (Wishbone ``ack`` with ``stall`` high meanwhile, APB ``pready``; AXI: ``awready``/
  ``arready`` after 0-2 cycles, ``wready`` low one cycle in four, read beats after
  gaps, ``awlen``/``arlen`` + 1 beats, ``rlast``, ``bid``/``rid`` echo the request's
  id), with an error one response in ``ERROR_ODDS`` (Wishbone ``err``, APB ``pslverr``,
  AXI ``SLVERR``) where the port has the signal. A response's valid (``bvalid``,
  ``rvalid``) is held until its ready, and a write burst's response waits for all of
  its data, however long (AMBA AXI A3.2.1, A3.3.1); a reset of the clock's domain ends
  the transfer (no response in reset), so a DUT that a reset pulse stops mid-transfer
  frees it.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm4cov.policies.bus_master import MasterPort, detect_masters
from llm4cov.policies.stimulus_plan import Drive, Stimulus
from llm4cov.policies.streams import Stream, detect_streams
from llm4cov.tasks.hdl import Port

MAX_BURST = 16
"""Transfers in one burst of an input stream, at most (but a long burst's)."""
LONG_BURST = (MAX_BURST + 1, 256)
"""The length range of a long burst, one in ``LONG_ODDS`` bursts: a frame longer than
a FIFO's depth reaches its oversize and full paths (alexforencich ``axis_fifo``'s
oversize-frame drop at DEPTH=64 is never reached by bursts of 16)."""
LONG_ODDS = 8
MEM_WORDS = 256
"""Words of a bus-master responder's memory."""
ERROR_ODDS = 32
"""A responder answers with an error once in this many responses."""
_RESPONSE = {"aw": "b", "ar": "r"}
"""The response channel of each AXI address channel: write responses on ``b``, read
data on ``r``."""


@dataclass(frozen=True)
class Agent:
    """One protocol agent: the DUT inputs it drives, its clock, its module-level lines
    (monitors, memory, the task) and the statement that starts it."""

    clock: str
    inputs: frozenset[str]
    lines: tuple[str, ...]
    call: str
    what: str = ""
    """The protocol it speaks, in words (``input stream in_valid/in_ready``)."""


def _port_draw(p: Port) -> str:
    """A random value of the port's type (the random style's draw)."""
    from llm4cov.policies.random_stimulus import _draw as draw

    return draw(p)


def _clock(s: Stimulus, names: set[str]) -> str | None:
    for d in s.domains:
        if d.clock is not None and names & {p.name for p in d.data}:
            return d.clock.name
    return s.clocks[0].name if s.clocks else None


def _in_reset(s: Stimulus, clk: str) -> str:
    """True while a reset of ``clk``'s domain is at its active level ("": none)."""
    resets = next((d.resets for d in s.domains if d.clock is not None and d.clock.name == clk),
                  [])
    return " || ".join(f"{r.name} == 1'b{int(not s.low[r.name])}" for r in resets)


def _monitor(hs: str, clk: str, valid: str, ready: str) -> list[str]:
    """A bit that holds ``valid && ready`` as sampled at the last rising edge (the
    handshake a testbench's valid waits for)."""
    return [f"  bit {hs} = 1'b0;", f"  always @(posedge {clk}) {hs} <= {valid} && {ready};"]


def _stream_in(st: Stream, i: int, clk: str, in_reset: str) -> list[str]:
    """``in_reset``: an expression true while a reset of ``clk``'s domain is asserted
    ("" when it has none)."""
    neg = f"@(negedge {clk});"
    hs, v, r = f"tb_hs{i}", st.valid.name, st.ready.name
    beat = [f"{v} = 1'b1;"]
    for p in st.data:
        if p is st.last:
            beat.append(f"{p.name} = tb_i == tb_len - 1;")
        elif p is st.first:
            beat.append(f"{p.name} = tb_i == 0;")
        elif p in st.keep:
            beat.append(f"{p.name} = tb_i == tb_len - 1 ? {_port_draw(p)} : '1;")
        else:
            beat.append(f"{p.name} = {_port_draw(p)};")
    idle = [f"{v} = 1'b0;"] + [f"{m.name} = 1'b0;" for m in (st.last, st.first) if m]
    return [
        *_monitor(hs, clk, v, r),
        f"  task automatic tb_in{i}();  // input stream {v}/{r}: bursts, data held until "
        "ready, idle gaps",
        "    int tb_len;",
        "    forever begin",
        f"      {' '.join(idle)}",
        f"      repeat ($urandom_range(3) == 0 ? $urandom_range(8, 32) : $urandom_range(1, 3)) "
        f"{neg}",
        f"      tb_len = $urandom_range({LONG_ODDS - 1}) == 0 ? "
        f"$urandom_range({LONG_BURST[0]}, {LONG_BURST[1]}) : $urandom_range(1, {MAX_BURST});",
        "      for (int tb_i = 0; tb_i < tb_len; tb_i++) begin",
        f"        {' '.join(beat)}",
        f"        {neg}",
        f"        while (!{hs}{f' && !({in_reset})' if in_reset else ''}) {neg}",
        f"        if (!{hs}) break;",
        "      end",
        "    end",
        "  endtask"]


def _stream_out(st: Stream, i: int, clk: str) -> list[str]:
    r = st.ready.name
    return [
        f"  task automatic tb_out{i}();  // output stream {st.valid.name}/{r}: ready high, "
        "random, mostly low or low",
        "    int tb_mode;",
        "    forever begin",
        "      tb_mode = $urandom_range(3);",
        "      repeat ($urandom_range(8, 32)) begin",
        f"        {r} = tb_mode == 0 || (tb_mode == 1 && $urandom_range(1) == 1) || "
        "(tb_mode == 2 && $urandom_range(3) == 0);",
        f"        @(negedge {clk});",
        "      end",
        "    end",
        "  endtask"]


class _Responder:
    """The SystemVerilog of one bus-master port's memory model."""

    def __init__(self, m: MasterPort, i: int, clk: str, in_reset: str = ""):
        self.m, self.i, self.r = m, i, m.roles
        self.neg = f"@(negedge {clk});"
        self.clk = clk
        self.in_reset = in_reset
        data = self.r.get("rdata") or self.r.get("wdata")
        self.dw = data.width if data is not None else 32
        self.mem = f"tb_mem{i}"
        self.shift = max(0, (self.dw // 8).bit_length() - 1) if self.dw % 8 == 0 else 0

    def name(self, role: str) -> str:
        return self.r[role].name

    def until(self, done: str) -> str:
        """Wait (falling edges) until ``done`` or a reset of the domain."""
        rst = f" && !({self.in_reset})" if self.in_reset else ""
        return f"while (!({done}){rst}) {self.neg}"

    def or_reset(self, cond: str) -> str:
        return f"{cond} || {self.in_reset}" if self.in_reset else cond

    def has(self, *roles: str) -> bool:
        return all(r in self.r for r in roles)

    def word(self, addr: str) -> str:
        """The memory word of an address expression."""
        bits = (MEM_WORDS - 1).bit_length()
        shifted = f"{addr} >> {self.shift}" if self.shift else addr
        return f"{self.mem}[{bits}'({shifted})]"

    def set(self, role: str, value: str) -> str:
        return f"{self.name(role)} = {value};" if role in self.r else ""

    def error(self, role: str, value: str) -> str:
        p = self.r.get(role)
        if p is None:
            return ""
        return f"{p.name} = $urandom_range({ERROR_ODDS - 1}) == 0 ? {p.width}'({value}) : '0;"

    def header(self, what: str) -> list[str]:
        return [f"  logic [{self.dw - 1}:0] {self.mem} [{MEM_WORDS}];",
                f"  // {what}: a memory of {MEM_WORDS} words, wait states, rare errors"]

    def fill(self) -> str:
        value = _port_draw(Port(self.mem, "input", self.dw))
        return f"    foreach ({self.mem}[tb_j]) {self.mem}[tb_j] = {value};"

    def waits(self, on: bool = True) -> list[str]:
        """Statements that count a request's wait states (0, one in four 1-4); Wishbone
        ``stall`` high meanwhile."""
        stall = f" {self.set('stall', chr(39) + '1')}" if "stall" in self.r else ""
        return ["      if (tb_w < 0) tb_w = $urandom_range(3) == 0 ? $urandom_range(1, 4) : 0;",
                f"      if (tb_w > 0) begin tb_w--;{stall} continue; end",
                "      tb_w = -1;"] if on else []

    def wishbone(self) -> tuple[list[str], str]:
        stb = self.name("stb")
        req = f"{self.name('cyc')} && {stb}" if self.has("cyc") else stb
        addr = self.name("addr")
        clear = " ".join(x for x in (self.set("ack", "1'b0"), self.set("err", "1'b0"),
                                     self.set("rty", "1'b0"), self.set("stall", "1'b0")) if x)
        body = [f"  task automatic tb_wbm{self.i}();",
                "    int tb_w = -1;", self.fill(), "    forever begin", f"      {self.neg}",
                f"      {clear}",
                f"      if (!({req})) begin tb_w = -1; continue; end", *self.waits()]
        if self.has("we", "wdata"):
            body.append(f"      if ({self.name('we')}) {self.word(addr)} = "
                        f"{self.name('wdata')};")
        if self.has("rdata"):
            body.append(f"      {self.name('rdata')} = {self.word(addr)};")
        if self.has("err"):
            body.append(f"      if ($urandom_range({ERROR_ODDS - 1}) == 0) "
                        f"{self.name('err')} = 1'b1; else {self.name('ack')} = 1'b1;")
        else:
            body.append(f"      {self.name('ack')} = 1'b1;")
        body += ["    end", "  endtask"]
        what = f"Wishbone master port {self.m.prefix or stb}"
        return [*self.header(what), *body], f"tb_wbm{self.i}();"

    def apb(self) -> tuple[list[str], str]:
        psel, addr = self.name("psel"), self.name("addr")
        clear = " ".join(x for x in (self.set("pready", "1'b0"), self.set("pslverr", "1'b0"))
                         if x)
        body = [f"  task automatic tb_apb{self.i}();", "    int tb_w = -1;", self.fill(),
                "    forever begin", f"      {self.neg}"]
        if clear:
            body.append(f"      {clear}")
        if self.has("rdata"):
            body.append(f"      if ({psel}) {self.name('rdata')} = {self.word(addr)};")
        body.append(f"      if (!({psel} && {self.name('penable')})) begin tb_w = -1; "
                    "continue; end")
        body += self.waits(self.has("pready"))
        if self.has("we", "wdata"):
            body.append(f"      if ({self.name('we')}) {self.word(addr)} = "
                        f"{self.name('wdata')};")
        done = " ".join(x for x in (self.set("pready", "1'b1"), self.error("pslverr", "1"))
                        if x)
        if done:
            body.append(f"      {done}")
        body += ["    end", "  endtask"]
        return [*self.header(f"APB requester port {self.m.prefix or psel}"), *body], \
            f"tb_apb{self.i}();"

    def _word(self) -> str:
        bits = (MEM_WORDS - 1).bit_length()
        return f"{self.mem}[{bits}'(tb_a + tb_b)]"

    def _axi_burst(self, ch: str, fill: bool) -> tuple[str, list[str]]:
        """The task of address channel ``ch`` (``aw``: ``tb_axw<i>``, ``ar``:
        ``tb_axr<i>``) up to its beat loop (beat ``tb_b`` of ``tb_n``): the response
        channel's handshake monitor (when the port has its ready), the task's head and
        the memory fill, then one address accepted after 0-2 cycles. Returns the
        monitor's bit and the lines."""
        resp = _RESPONSE[ch]
        hs, ready, rid = f"tb_hs{resp}{self.i}", resp + "ready", resp + "id"
        monitor = _monitor(hs, self.clk, self.name(resp + "valid"), self.name(ready)) \
            if ready in self.r else []
        start = f"tb_a = int'({self.name(ch + 'addr')} >> {self.shift});" \
            if self.has(ch + "addr") else "tb_a = 0;"
        count = f"tb_n = int'({self.name(ch + 'len')});" if self.has(ch + "len") else "tb_n = 0;"
        echo = (f" {self.name(rid)} = {self.r[rid].width}'({self.name(ch + 'id')});"
                if self.has(rid, ch + "id") else "")
        return hs, [*monitor, f"  task automatic tb_ax{ch[1]}{self.i}();", "    int tb_a, tb_n;",
                    *([self.fill()] if fill else []), "    forever begin",
                    f"      {self.neg}", f"      if (!{self.name(ch + 'valid')}) continue;",
                    f"      repeat ($urandom_range(2)) {self.neg}",
                    f"      {self.name(ch + 'ready')} = 1'b1; {start} {count}{echo}",
                    f"      {self.neg}", f"      {self.name(ch + 'ready')} = 1'b0;",
                    "      for (int tb_b = 0; tb_b <= tb_n; tb_b++) begin"]

    def axi_write(self, fill: bool) -> list[str]:
        hs, lines = self._axi_burst("aw", fill)
        wv = self.name("wvalid")
        store = f" {self._word()} = {self.name('wdata')};" if self.has("wdata") else ""
        lines += [f"        {self.until(f'{wv} && $urandom_range(3) != 0')}",
                  f"        if ({self.or_reset(f'!{wv}')}) break;",
                  f"        {self.name('wready')} = 1'b1;{store}",
                  f"        {self.neg}",
                  f"        {self.name('wready')} = 1'b0;",
                  "      end",
                  *([f"      if ({self.in_reset}) continue;"] if self.in_reset else []),
                  f"      {self.name('bvalid')} = 1'b1; {self.error('bresp', '2')}".rstrip(),
                  f"      {self.neg}"]
        if self.has("bready"):
            lines.append(f"      {self.until(hs)}")
        lines += [f"      {self.name('bvalid')} = 1'b0;", "    end", "  endtask"]
        return lines

    def axi_read(self, fill: bool) -> list[str]:
        hs, lines = self._axi_burst("ar", fill)
        rv = self.name("rvalid")
        beat = " ".join(x for x in (
            f"{rv} = 1'b1;", self.set("rdata", self._word()), self.set("rlast", "tb_b == tb_n"),
            self.error("rresp", "2")) if x)
        lines += [f"        repeat ($urandom_range(3) == 0 ? $urandom_range(1, 3) : 0) "
                  f"{self.neg}",
                  f"        {beat}",
                  f"        {self.neg}"]
        if self.has("rready"):
            lines.append(f"        {self.until(hs)}")
        lines.append(f"        {rv} = 1'b0; {self.set('rlast', chr(39) + '0')}".rstrip())
        if self.has("rready"):
            lines.append(f"        if (!{hs}) break;")
        lines += ["      end", "    end", "  endtask"]
        return lines

    def axi(self) -> tuple[list[str], list[str]]:
        lines = self.header(f"AXI manager port {self.m.prefix or 'axi'}")
        calls = []
        if self.m.writes:
            lines += self.axi_write(fill=True)
            calls.append(f"tb_axw{self.i}();")
        if self.m.reads:
            lines += self.axi_read(fill=not self.m.writes)
            calls.append(f"tb_axr{self.i}();")
        return lines, calls


def responder(m: MasterPort, i: int, clk: str, in_reset: str = "") -> Agent:
    """The memory model that answers the bus-master port ``m`` (see the module
    docstring); ``in_reset``: true while a reset of ``clk``'s domain is asserted."""
    w = _Responder(m, i, clk, in_reset)
    if m.kind == "wishbone":
        lines, call = w.wishbone()
        calls = [call]
    elif m.kind == "apb":
        lines, call = w.apb()
        calls = [call]
    else:
        lines, calls = w.axi()
    return Agent(clk, frozenset(m.inputs()), tuple(lines), " ".join(calls),
                 f"{m.kind} master port" + (f" {m.prefix}*" if m.prefix else ""))


def protocol_agents(s: Stimulus, skip: set[str] | None = None) -> list[Agent]:
    """The agents of the DUT's bus-master ports and streams (ports in ``skip``, a
    register bus's, left out), masters first; none without a clock."""
    if not s.clocks:
        return []
    skip = set(skip or ())
    agents: list[Agent] = []
    masters = [m for m in detect_masters(s.ports) if not m.ports() & skip]
    for m in masters:
        clk = _clock(s, m.inputs())
        if clk is not None:
            agents.append(responder(m, len(agents), clk, _in_reset(s, clk)))
        skip |= m.ports()
    plain = {name for name, drive in s.drives.items() if drive is Drive.DATA}
    for st in detect_streams(s.ports, s.data, s.design, skip, plain):
        clk = _clock(s, st.inputs())
        if clk is None:
            continue
        i = len(agents)
        lines = _stream_in(st, i, clk, _in_reset(s, clk)) if st.direction == "in" \
            else _stream_out(st, i, clk)
        call = f"tb_in{i}();" if st.direction == "in" else f"tb_out{i}();"
        agents.append(Agent(clk, frozenset(st.inputs()), tuple(lines), call,
                            f"{st.direction}put stream {st.valid.name}/{st.ready.name}"))
    return agents


def master_ports(s: Stimulus) -> set[str]:
    """Names of the ports of the DUT's bus-master ports (no register bus among them)."""
    return {n for m in detect_masters(s.ports) for n in m.ports()}


def fork(agents: list[Agent], pad: str) -> list[str]:
    """The statement that starts ``agents`` (none: no line)."""
    if not agents:
        return []
    return [f"{pad}fork {' '.join(a.call for a in agents)} join_none"]
