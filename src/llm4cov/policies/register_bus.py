"""Register-bus stimulus: recognise a DUT's register interface and its address map, and
write a compact testbench of legal bus transactions (the ``random`` policy's style when a
bus is recognised; ``random-flat`` keeps the per-cycle random loop).

**Bus** (:func:`detect_bus`), from the DUT's ports by name tokens, widths and
directions (``_i``/``_o``/``_in``/``_out`` suffixes and ``wb_``-style prefixes ignored):

- ``apb``: ``psel``, ``penable``, ``pwrite``, ``paddr`` (+ ``pwdata``, ``prdata``,
  ``pready``, ``pstrb``, ``pprot``);
- ``axil`` (AXI4-Lite): ``awaddr``/``awvalid``, ``wdata``/``wvalid``, ``bready``,
  ``araddr``/``arvalid``, ``rready``/``rvalid``/``rdata`` (+ the ready outputs, ``wstrb``);
- ``wishbone``: ``stb`` (+ ``cyc``), ``we``, ``adr``/``addr``, an ``ack`` output (+
  ``dat``/``data`` in and out, ``sel``, ``err``, ``rty``);
- ``csr`` (a memory-like register port): ``we``/``wr``, ``address``/``addr``, write data
  (``write_data``, ``wdata``, ``din``, ...), optional chip select (``cs``, ``sel``,
  ``ce``), read enable and read data. A ``csr`` bus is used only with at least two decoded
  addresses (a plain RAM port decodes none and keeps the random style).

**Address map** (:func:`address_map`), from the RTL (pyslang): parameters and
localparams of the DUT module named like an address (``ADDR_*``, ``*_ADDR``, ``REG_*``,
``*_OFFSET``; not ``*_WIDTH``/``*_BIT``...) with a value that fits the address; numbered
families filled in (``ADDR_KEY0`` .. ``ADDR_KEY7``); every constant the address (or a
port it is connected to, in any module) is compared with (``==``, ``!=``, ``<``,
``<=``, ``>= .. && <= ..`` ranges) or a ``case`` on it labels, a slice ``adr[6:2]``
shifting the value left by its low bit. Roles by name: control (``CTRL``, ``CONTROL``,
``CMD``, ``COMMAND``, ``START``, ``GO``), status (``STATUS``, ``STAT``, ``STS``, ``SR``),
config (``CONFIG``, ``CFG``, ``MODE``, ``KEYLEN``, ``BLOCKLEN``, ``SETUP``), else data.
Control bits from ``CTRL_*_BIT``-style localparams (positions, ascending; bits 0..3 when
none is named), the status bit waited on from ``STATUS_*_BIT`` (a READY/DONE/VALID/IDLE
bit set, or a BUSY bit cleared).

**Testbench** (:func:`bus_testbench`): the random style's header (clocks, ports, DUT),
tasks ``tb_write(addr, data)``/``tb_read(addr, data)`` that obey the protocol (wait for
``ack``/``pready``/``*ready``/``*valid``, at most ``HANDSHAKE`` cycles), then
``iterations`` rounds of: write every non-control address (random data, all ones in
the last round but one and zeros in the last, so every data bit toggles both ways after
random use; a config register's low four bits sweep the round number), pulse each
control bit in ascending order, each followed by a bounded wait (polling the status
register until its ready bit sets, at most ``poll`` reads, else ``settle`` idle cycles),
read every address back, then random transactions (a decoded or a fully random address,
read or write, random data). The reset is pulsed before rounds 2, 6, 10, ... (round 1 of
two), which also frees a core that a random command left waiting forever. Inputs the bus
does not use are driven as the random style drives them (per clock domain, in parallel,
until the transactions end). Iterations: ``ceil(length / 50)`` (at least 2) times one
more per 1,500 RTL lines; the settle wait is ``16 + length / 4`` cycles, the poll bound
``50 + 2 * length`` reads (``length`` doubles with each agent round).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyslang
from pyslang import ast, syntax

from llm4cov.policies.stimulus_plan import Domain, Stimulus, connected_names
from llm4cov.tasks.hdl import Design, Port
from llm4cov.tasks.model import Task

HANDSHAKE = 16
"""Cycles a transaction waits for its acknowledge/ready/valid before it gives up."""
MAX_RANGE = 64
"""Addresses taken from one decoded range (``addr < 8``, ``>= A && <= B``)."""
MAX_REGISTERS = 256
"""Addresses kept in the map (lowest first)."""

_SUFFIX = re.compile(r"(_pad)?(_i|_o|_in|_out|_io)$")


def _norm(name: str) -> str:
    return _SUFFIX.sub("", name.lower())


@dataclass(frozen=True)
class Bus:
    """A register interface of the DUT: its ``kind`` (``csr``, ``wishbone``, ``apb``,
    ``axil``) and its ports by role (``addr``, ``wdata``, ``rdata``, ``we``, ``cs``,
    ``re``, ``cyc``, ``stb``, ``sel``, ``ack``, ``err``, ``rty``, ``psel``, ``penable``,
    ``pready``, ``pstrb``, ``pprot``, ``awaddr``, ``awvalid``, ``awready``, ``wvalid``,
    ``wready``, ``wstrb``, ``bvalid``, ``bready``, ``araddr``, ``arvalid``, ``arready``,
    ``rvalid``, ``rready``, ``awprot``, ``arprot``)."""

    kind: str
    roles: dict[str, Port] = field(default_factory=dict)

    @property
    def addr(self) -> Port:
        return self.roles["addr"]

    def inputs(self) -> set[str]:
        """Names of the DUT inputs the bus drives."""
        return {p.name for p in self.roles.values() if p.direction == "input"}


def _find(ports: list[Port], pattern: str, direction: str, width: int | None = None,
          multi: bool | None = None) -> Port | None:
    rx = re.compile(rf"(^|_)(?:{pattern})$")
    for p in ports:
        if p.direction != direction or p.unpacked or p.cast or not rx.search(_norm(p.name)):
            continue
        if width is not None and p.width != width:
            continue
        if multi is not None and (p.width > 1) != multi:
            continue
        return p
    return None


_Spec = Mapping[str, tuple[str, str, int | None, bool | None]]


def _roles(ports: list[Port], spec: _Spec) -> dict[str, Port]:
    found: dict[str, Port] = {}
    for role, (pattern, direction, width, multi) in spec.items():
        p = _find([q for q in ports if q not in found.values()], pattern, direction, width,
                  multi)
        if p is not None:
            found[role] = p
    return found


_APB: _Spec = {
    "psel": (r"psel(x|\d*)", "input", 1, None), "penable": ("penable", "input", 1, None),
    "we": ("pwrite", "input", 1, None), "addr": ("paddr", "input", None, None),
    "wdata": ("pwdata", "input", None, None), "rdata": ("prdata", "output", None, None),
    "pready": ("pready", "output", 1, None), "pstrb": ("pstrb", "input", None, None),
    "pprot": ("pprot", "input", None, None),
}
_AXIL: _Spec = {
    "awaddr": ("awaddr", "input", None, None), "awvalid": ("awvalid", "input", 1, None),
    "awready": ("awready", "output", 1, None), "wdata": ("wdata", "input", None, None),
    "wstrb": ("wstrb", "input", None, None), "wvalid": ("wvalid", "input", 1, None),
    "wready": ("wready", "output", 1, None), "bvalid": ("bvalid", "output", 1, None),
    "bready": ("bready", "input", 1, None), "araddr": ("araddr", "input", None, None),
    "arvalid": ("arvalid", "input", 1, None), "arready": ("arready", "output", 1, None),
    "rdata": ("rdata", "output", None, None), "rvalid": ("rvalid", "output", 1, None),
    "rready": ("rready", "input", 1, None), "awprot": ("awprot", "input", None, None),
    "arprot": ("arprot", "input", None, None),
}
_WISHBONE: _Spec = {
    "cyc": ("cyc", "input", 1, None), "stb": ("stb", "input", 1, None),
    "we": ("we", "input", 1, None), "addr": ("adr|addr", "input", None, None),
    "wdata": ("dat|data", "input", None, True), "rdata": ("dat|data", "output", None, True),
    "sel": ("sel", "input", None, None), "ack": ("ack", "output", 1, None),
    "err": ("err", "output", 1, None), "rty": ("rty", "output", 1, None),
}
_CSR: _Spec = {
    "cs": (r"cs|cs_?n|chip_?sel(ect)?|sel|ce", "input", 1, None),
    "we": (r"we|we_?n|wen|wr|wr_?en|write_?en(able)?|write", "input", 1, None),
    "re": (r"re|ren|rd|rd_?en|read_?en(able)?|read", "input", 1, None),
    "addr": (r"address|addr|adr", "input", None, None),
    "wdata": (r"write_?data|wdata|wr_?data|data_?in|din|wdat|dat|data", "input", None, True),
    "rdata": (r"read_?data|rdata|rd_?data|data_?out|dout|rdat|dat|data", "output", None,
              True),
}


def detect_bus(ports: list[Port]) -> Bus | None:
    """The DUT's register interface (see the module docstring), or None."""
    apb = _roles(ports, _APB)
    if {"psel", "penable", "we", "addr"} <= apb.keys():
        return Bus("apb", apb)
    axil = _roles(ports, _AXIL)
    if {"awaddr", "awvalid", "wdata", "wvalid", "bready", "araddr", "arvalid", "rready",
            "rvalid"} <= axil.keys():
        axil["addr"] = axil["awaddr"]
        return Bus("axil", axil)
    wb = _roles(ports, _WISHBONE)
    if {"stb", "we", "addr", "ack"} <= wb.keys():
        return Bus("wishbone", wb)
    csr = _roles(ports, _CSR)
    if {"we", "addr", "wdata"} <= csr.keys():
        return Bus("csr", csr)
    return None


@dataclass(frozen=True)
class Register:
    """One decoded address: its name (the parameter that names it, else empty) and its
    role (``control``, ``status``, ``config``, ``data``)."""

    addr: int
    name: str = ""
    role: str = "data"


@dataclass
class AddressMap:
    """The decoded addresses (ascending), the control bits pulsed (positions, ascending),
    and the status bit waited on: ``(position, level)``, level 1 for ready/done, 0 for
    busy."""

    registers: list[Register] = field(default_factory=list)
    control_bits: list[int] = field(default_factory=list)
    wait_bit: tuple[int, int] | None = None

    def role(self, role: str) -> list[Register]:
        return [r for r in self.registers if r.role == role]


_ADDR_NAME = re.compile(r"(^|_)(ADDR|ADDRESS|ADR|REG|OFFSET|OFS|OFF)(_|$|\d)", re.I)
_NOT_ADDR = re.compile(r"(^|_)(WIDTH|WIDTHS|BITS?|SIZE|LEN|W|MSB|LSB|DEPTH|NUM|N|COUNT|"
                       r"MASK)(_|$)", re.I)
_ROLES = (("control", {"CTRL", "CONTROL", "CMD", "COMMAND", "START", "GO"}),
          ("status", {"STATUS", "STAT", "STS", "SR"}),
          ("config", {"CONFIG", "CFG", "CONF", "MODE", "KEYLEN", "BLOCKLEN", "SETUP"}))
_BIT_PARAM = re.compile(r"^(\w+?)_(\w+)_BIT$", re.I)
_LITERAL = re.compile(r"(?:(\d+)\s*)?'\s*[sS]?([bBoOdDhH])\s*([0-9a-fA-F_xXzZ?]+)|(\d[\d_]*)")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_PARAM_DECL = re.compile(
    r"\b(?:localparam|parameter)\b[^;=]*?\b(\w+)\s*=\s*([^,;]+)")


def _role(name: str) -> str:
    tokens = set(re.split(r"_+", name.upper()))
    for role, names in _ROLES:
        if tokens & names:
            return role
    return "data"


def _literal(text: str, params: dict[str, int]) -> int | None:
    text = " ".join(_COMMENT.sub(" ", text).split())
    if text in params:
        return params[text]
    m = _LITERAL.fullmatch(text)
    if not m:
        return None
    if m.group(4) is not None:
        return int(m.group(4).replace("_", ""))
    digits = m.group(3).replace("_", "")
    if re.search(r"[xXzZ?]", digits):
        return None
    base = {"b": 2, "o": 8, "d": 10, "h": 16}[m.group(2).lower()]
    try:
        return int(digits, base)
    except ValueError:
        return None


def _elaborated_params(design: Design, module: str, parameters: dict[str, str]
                       ) -> dict[str, int]:
    options = ast.CompilationOptions()
    options.topModules = {module}
    options.paramOverrides = [f"{k}={v}" for k, v in parameters.items()]
    comp = ast.Compilation(pyslang.Bag([options]))
    comp.addSyntaxTree(design.tree)
    found: dict[str, int] = {}
    for top in comp.getRoot().topInstances:
        if top.name != module:
            continue
        for p in top.body.parameters:
            try:
                value = getattr(p, "value", None)
                if value is not None and not value.hasUnknown():
                    found[p.name] = int(value.value)
            except (TypeError, ValueError, AttributeError):
                continue
    return found


def _text_params(design: Design) -> dict[str, int]:
    """``localparam``/``parameter`` names with a literal value, over every module."""
    found: dict[str, int] = {}
    for m in _PARAM_DECL.finditer(_COMMENT.sub(" ", str(design.tree.root))):
        value = _literal(m.group(2), {})
        if value is not None:
            found.setdefault(m.group(1), value)
    return found


def _aliases(design: Design, name: str) -> set[str]:
    """``name`` and the ports of submodules it is connected to (by name), transitively."""
    return connected_names(str(design.tree.root), name)


def _operand(text: str, aliases: set[str]) -> int | None:
    """The shift of an address operand (``addr`` 0, ``addr[6:2]`` 2, ``addr[12]`` 12)."""
    text = "".join(_COMMENT.sub(" ", text).split()).strip("()")
    m = re.fullmatch(r"(\w+)(?:\[(\d+)(?::(\d+))?\])?", text)
    if not m or m.group(1) not in aliases:
        return None
    if m.group(2) is None:
        return 0
    return int(m.group(3) if m.group(3) is not None else m.group(2))


def _decoded(design: Design, aliases: set[str], params: dict[str, int]) -> set[int]:
    """Every address constant the RTL compares an alias of the address with."""
    found: set[int] = set()

    def compare(node) -> tuple[str, int, int] | None:
        if not isinstance(node, syntax.BinaryExpressionSyntax):
            return None
        op = node.operatorToken.valueText
        left, right = str(node.left), str(node.right)
        for a, b, flip in ((left, right, False), (right, left, True)):
            shift = _operand(a, aliases)
            value = _literal(b, params) if shift is not None else None
            if shift is not None and value is not None:
                if flip:
                    op = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
                return op, value, shift
        return None

    def visit(node: object) -> bool:
        if isinstance(node, syntax.CaseStatementSyntax):
            shift = _operand(str(node.expr), aliases)
            if shift is not None:
                for item in node.items:
                    for e in getattr(item, "expressions", []) or []:
                        value = _literal(str(e), params)
                        if value is not None:
                            found.add(value << shift)
        elif isinstance(node, syntax.BinaryExpressionSyntax):
            op = node.operatorToken.valueText
            if op == "&&":
                lo, hi = compare(node.left), compare(node.right)
                if lo and hi and lo[0] in (">=", ">") and hi[0] in ("<=", "<") \
                        and lo[2] == hi[2]:
                    start = lo[1] + (lo[0] == ">")
                    stop = hi[1] + (hi[0] == "<=")
                    found.update(v << lo[2] for v in range(start, min(stop, start + MAX_RANGE)))
            cmp = compare(node)
            if cmp is not None:
                kind, value, shift = cmp
                if kind in ("==", "!=", "===", "!==", ">=", "<="):
                    found.add(value << shift)
                elif kind == "<":
                    found.update(v << shift for v in range(0, min(value, MAX_RANGE)))
        return True

    design.tree.root.visit(visit)
    return found


def _families(named: dict[str, int]) -> dict[str, int]:
    """``X0`` .. ``XN`` pairs filled with the names and addresses between them."""
    filled: dict[str, int] = {}
    for name, value in named.items():
        m = re.fullmatch(r"(.*?)(\d+)", name)
        if not m or int(m.group(2)) != 0:
            continue
        stem = m.group(1)
        last = max((int(n[len(stem):]) for n in named
                    if n.startswith(stem) and n[len(stem):].isdigit()), default=0)
        if last <= 0 or last > MAX_RANGE:
            continue
        step, rest = divmod(named[f"{stem}{last}"] - value, last)
        if step <= 0 or rest:
            continue
        for i in range(1, last):
            filled.setdefault(f"{stem}{i}", value + i * step)
    return filled


def address_map(design: Design, module: str, bus: Bus,
                parameters: dict[str, str] | None = None) -> AddressMap:
    """The address map of ``module`` behind ``bus`` (see the module docstring)."""
    width = bus.addr.width
    limit = 1 << min(width, 64)
    top = _elaborated_params(design, module, parameters or {})
    params = {**_text_params(design), **top}
    named = {n: v for n, v in top.items()
             if _ADDR_NAME.search(n) and not _NOT_ADDR.search(n) and 0 <= v < limit}
    named.update({n: v for n, v in _families(named).items() if v < limit})
    aliases = _aliases(design, bus.addr.name)
    decoded = {v for v in _decoded(design, aliases, params) if 0 <= v < limit}
    names: dict[int, str] = {}
    for n, v in sorted(named.items(), key=lambda kv: (kv[1], len(kv[0]))):
        names.setdefault(v, n)
    addrs = sorted(decoded | set(names))[:MAX_REGISTERS]
    registers = [Register(a, names.get(a, ""), _role(names.get(a, ""))) for a in addrs]
    amap = AddressMap(registers)
    controls = amap.role("control")
    if controls:
        stems = {re.sub(r"^(ADDR|REG)_|_(ADDR|REG|OFFSET)$", "", r.name, flags=re.I).upper()
                 for r in controls}
        stems |= {"CTRL", "CONTROL", "CMD"}
        bits = {v for n, v in top.items()
                if (m := _BIT_PARAM.match(n)) and m.group(1).upper() in stems
                and 0 <= v < (bus.roles["wdata"].width if "wdata" in bus.roles else 32)}
        amap.control_bits = sorted(bits) or [0, 1, 2, 3]
    statuses = amap.role("status")
    if statuses:
        stems = {re.sub(r"^(ADDR|REG)_|_(ADDR|REG|OFFSET)$", "", r.name, flags=re.I).upper()
                 for r in statuses} | {"STATUS", "STAT", "STS"}
        status_bits = [(n.upper(), v) for n, v in top.items()
                       if (m := _BIT_PARAM.match(n)) and m.group(1).upper() in stems]
        for word, level in (("READY", 1), ("DONE", 1), ("IDLE", 1), ("VALID", 1),
                            ("BUSY", 0)):
            hit = next((v for n, v in status_bits if word in n), None)
            if hit is not None:
                amap.wait_bit = (hit, level)
                break
    return amap


# ----------------------------------------------------------------------------- testbench


def _active(port: Port, on: bool) -> str:
    """``1'b1``/``1'b0`` for the port's active (``on``) or idle level; active low by
    name (``cs_n``, ``we_b``)."""
    low = bool(re.search(r"_(n|b|l|bar)$", _norm(port.name)))
    return f"1'b{int(on != low)}"


class _Writer:
    """The SystemVerilog of one bus's tasks (``tb_write``, ``tb_read``)."""

    def __init__(self, bus: Bus, clock: str):
        self.bus = bus
        self.r = bus.roles
        self.pos = f"@(posedge {clock});"
        self.neg = f"@(negedge {clock});"

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
            start = f"{self._on('cyc')} {self._on('stb')} {self._set('sel', chr(39) + '1')}"
            write = [f"{start} {self._on('we')} {addr} = a; {wdata}", self.pos,
                     self._wait(ack), self.neg, idle, self.neg]
            read = [f"{start} {self._on('we', False)} {addr} = a;", self.pos,
                    self._wait(ack), sample, self.neg, idle, self.neg]
        elif kind == "apb":
            ready = r["pready"].name if "pready" in r else "1'b1"
            start = f"{self._on('psel')} {self._on('penable', False)} {addr} = a;"
            write = [f"{start} {self._on('we')} {wdata}", self.neg,
                     self._on("penable"), self.pos, self._wait(ready), self.neg, idle]
            read = [f"{start} {self._on('we', False)}", self.neg,
                    self._on("penable"), self.pos, self._wait(ready), sample, self.neg, idle]
        else:  # axil
            ar = r["araddr"].name
            aw_ok = r["awready"].name if "awready" in r else "1'b1"
            w_ok = r["wready"].name if "wready" in r else "1'b1"
            ar_ok = r["arready"].name if "arready" in r else "1'b1"
            bvalid = r["bvalid"].name if "bvalid" in r else "1'b1"
            aws, ws = r["awvalid"].name, r["wvalid"].name
            write = ["logic ta, tw;",
                     f"{addr} = a; {wdata} {aws} = 1'b1; {ws} = 1'b1; "
                     f"{self._set('bready', chr(39) + '1')}",
                     f"for (int k = 0; k < {HANDSHAKE} && ({aws} || {ws}); k++) begin",
                     f"  {self.pos} ta = {aw_ok}; tw = {w_ok};",
                     f"  {self.neg} if (ta) {aws} = 1'b0; if (tw) {ws} = 1'b0;",
                     "end", f"{aws} = 1'b0; {ws} = 1'b0;",
                     self._wait(bvalid), self.neg]
            read = ["logic tr;", f"{ar} = a; {r['arvalid'].name} = 1'b1; "
                    f"{r['rready'].name} = 1'b1;",
                    f"for (int k = 0; k < {HANDSHAKE}; k++) begin",
                    f"  {self.pos} tr = {ar_ok};", f"  {self.neg} if (tr) break;", "end",
                    f"{r['arvalid'].name} = 1'b0;",
                    f"for (int k = 0; k < {HANDSHAKE} && !{r['rvalid'].name}; k++) {self.pos}",
                    sample, self.neg]
        lines = [f"  task automatic tb_write({a_decl}, {d_decl});"]
        lines += [f"    {s}" for s in write if s.strip()]
        lines += ["  endtask", f"  task automatic tb_read({a_decl}, {q_decl});"]
        lines += [f"    {s}" for s in read if s.strip()]
        lines.append("  endtask")
        return lines


def _hex(width: int, value: int) -> str:
    return f"{width}'h{value:x}"


def _other_drivers(s: Stimulus, bus: Bus, done: str) -> list[str]:
    """Fork branches that drive the inputs the bus does not use, as the random style
    does, on their own domain's edges, until ``done``."""
    from llm4cov.policies.random_stimulus import HOLD_CYCLES, _assign, _free

    taken = {p.name for p in s.ports} | {done}
    index = [_free(f"i{j}", taken) for j in range(4)]
    k = _free("k", taken)
    branches: list[str] = []
    for d in s.domains:
        data = [p for p in d.data if p.name not in bus.inputs()]
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
    return ["    fork", *branches, "    join_none"] if branches else []


def _bus_clock(s: Stimulus, bus: Bus) -> Domain:
    for d in s.domains:
        if bus.addr in d.data:
            return d
    return s.domains[0]


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
                  length: int, header: list[str]) -> str:
    """The register-bus testbench (see the module docstring); ``header`` is the random
    style's module header (ports, DUT, clocks), ``length`` the stimulus cycles
    (iterations, the settle wait and the poll bound grow with it)."""
    d = _bus_clock(s, bus)
    if d.clock is None:
        raise ValueError("a register bus needs a clock")
    clock = d.clock.name
    neg = f"@(negedge {clock});"
    w = _Writer(bus, clock)
    aw = bus.addr.width
    dw = bus.roles["wdata"].width if "wdata" in bus.roles else 32
    rw = bus.roles["rdata"].width if "rdata" in bus.roles else dw
    iters = iterations_for(task, length)
    settle = 16 + length // 4
    poll = 50 + length * 2
    regs = amap.registers or [Register(0)]
    writes = [r for r in regs if r.role != "control"] or regs
    done = "tb_done"
    lines = list(header)
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
            *_other_drivers(s, bus, done), f"    repeat (2) {neg}",
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
             f": {adraw};",
             f"        if ($urandom_range(1) == 1) tb_write(tb_a, {draw}); "
             f"else tb_read(tb_a, tb_q);",
             "      end", "    end", f"    {done} = 1'b1;", f"    repeat (2) {neg}",
             "    $finish;"]
    lines += ["  initial begin", *body, "  end", "endmodule", ""]
    return "\n".join(lines)
