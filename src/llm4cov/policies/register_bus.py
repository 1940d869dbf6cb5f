"""Register interfaces: recognise a DUT's register bus and its address map (the
``random`` policy drives such a bus with legal transactions,
:mod:`llm4cov.policies.bus_testbench`; ``random-flat`` keeps the per-cycle random loop).

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

The testbench of legal bus transactions is written by :mod:`llm4cov.policies.bus_testbench`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyslang
from pyslang import ast, syntax

from llm4cov.policies.stimulus_plan import connected_names
from llm4cov.tasks.hdl import Design, Port

HANDSHAKE = 16
"""Cycles a transaction waits for its acknowledge/ready/valid before it gives up."""
MAX_RANGE = 64
"""Addresses taken from one decoded range (``addr < 8``, ``>= A && <= B``)."""
MAX_REGISTERS = 256
"""Addresses kept in the map (lowest first)."""

_SUFFIX = re.compile(r"(_pad)?(_i|_o|_in|_out|_io)$")


def norm_name(name: str) -> str:
    """A port name lower-cased without its direction/pad suffix (``wb_adr_i`` -> ``wb_adr``)."""
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

    def ports(self) -> set[str]:
        """Names of every port of the bus."""
        return {p.name for p in self.roles.values()}


def _find(ports: list[Port], pattern: str, direction: str, width: int | None = None,
          multi: bool | None = None) -> Port | None:
    rx = re.compile(rf"(^|_)(?:{pattern})$")
    for p in ports:
        if p.direction != direction or p.unpacked or p.cast or not rx.search(norm_name(p.name)):
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
