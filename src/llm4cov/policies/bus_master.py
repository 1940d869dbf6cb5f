"""Bus-master ports of a DUT (the DUT starts the transfers: a DMA, a CPU's data port, a
bridge's downstream side), answered by a testbench memory model in the ``random``
policy (:mod:`llm4cov.policies.agents`).

**Port** (:func:`detect_masters`), grouped by the name prefix before the protocol's
signal names (``wbm_``, ``m_axi_``, ``m_apb_``; names lower-cased, the
``_i``/``_o``/``_in``/``_out`` suffix ignored as in :func:`register_bus.norm_name`):

- ``wishbone``: ``stb`` and ``adr``/``addr`` outputs, an ``ack`` input (+ ``cyc``,
  ``we``, ``sel``, ``dat``/``data`` out, ``dat``/``data`` in, ``err``, ``rty``,
  ``stall``);
- ``apb`` (a requester): ``psel``, ``penable``, ``paddr`` outputs (+ ``pwrite``,
  ``pwdata``, ``pstrb``, ``pprot``; ``pready``, ``prdata``, ``pslverr`` inputs);
- ``axi`` (AXI4 or AXI4-Lite manager): a write side (``awvalid``, ``wvalid`` outputs,
  ``awready``/``wready``/``bvalid`` inputs) or a read side (``arvalid`` output,
  ``arready``/``rvalid`` inputs), with what else is there (``awlen``, ``wlast``,
  ``awid``/``bid``, ``bresp``, ``arlen``, ``rlast``, ``rid``, ``rresp``, ``rdata``).

The testbench side of each is written by :func:`llm4cov.policies.agents.responder`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from llm4cov.policies.register_bus import norm_name
from llm4cov.tasks.hdl import Port

_Spec = Mapping[str, tuple[str, str]]
"""role -> (name pattern after the prefix, the DUT port's direction)."""

_WISHBONE: _Spec = {
    "stb": ("stb", "output"), "cyc": ("cyc", "output"), "we": ("we", "output"),
    "addr": ("adr|addr", "output"), "wdata": ("dat|data", "output"),
    "sel": ("sel", "output"), "ack": ("ack", "input"), "rdata": ("dat|data", "input"),
    "err": ("err", "input"), "rty": ("rty", "input"), "stall": ("stall", "input"),
}
_APB: _Spec = {
    "psel": (r"psel(x|\d*)", "output"), "penable": ("penable", "output"),
    "we": ("pwrite", "output"), "addr": ("paddr", "output"), "wdata": ("pwdata", "output"),
    "pstrb": ("pstrb", "output"), "pprot": ("pprot", "output"),
    "pready": ("pready", "input"), "rdata": ("prdata", "input"),
    "pslverr": ("pslverr", "input"),
}
_AXI_OUT = ("awaddr awvalid awlen awsize awburst awid awprot awcache awlock awqos wdata "
            "wstrb wlast wvalid bready araddr arvalid arlen arsize arburst arid arprot "
            "arcache arlock arqos rready")
_AXI_IN = "awready wready bvalid bresp bid buser arready rvalid rdata rresp rlast rid ruser"
_AXI: _Spec = {**{r: (r, "output") for r in _AXI_OUT.split()},
               **{r: (r, "input") for r in _AXI_IN.split()}}
_SPECS: tuple[tuple[str, str, _Spec], ...] = (
    ("axi", "awvalid|arvalid", _AXI), ("apb", r"psel(?:x|\d*)", _APB),
    ("wishbone", "stb", _WISHBONE))
_REQUIRED = {"wishbone": [{"stb", "addr", "ack"}], "apb": [{"psel", "penable", "addr"}],
             "axi": [{"awvalid", "wvalid", "awready", "wready", "bvalid"},
                     {"arvalid", "arready", "rvalid"}]}


@dataclass(frozen=True)
class MasterPort:
    """A bus-master port of the DUT: its ``kind`` (``wishbone``, ``apb``, ``axi``), the
    name ``prefix`` its signals share, and its ports by role (the protocol's signal
    names; ``addr``, ``wdata``, ``rdata``, ``we`` for the address and data of
    Wishbone and APB)."""

    kind: str
    prefix: str
    roles: dict[str, Port] = field(default_factory=dict)

    def inputs(self) -> set[str]:
        """Names of the DUT inputs the responder drives."""
        return {p.name for p in self.roles.values() if p.direction == "input"}

    def ports(self) -> set[str]:
        return {p.name for p in self.roles.values()}

    @property
    def writes(self) -> bool:
        """AXI: the write channels are there."""
        return {"awvalid", "wvalid", "awready", "wready", "bvalid"} <= self.roles.keys()

    @property
    def reads(self) -> bool:
        """AXI: the read channels are there."""
        return {"arvalid", "arready", "rvalid"} <= self.roles.keys()


def _group(ports: list[Port], prefix: str, spec: _Spec) -> dict[str, Port]:
    roles: dict[str, Port] = {}
    for role, (pattern, direction) in spec.items():
        rx = re.compile(rf"{re.escape(prefix)}(?:{pattern})")
        for p in ports:
            if p.direction == direction and not p.unpacked and not p.cast \
                    and p not in roles.values() and rx.fullmatch(norm_name(p.name)):
                roles[role] = p
                break
    return roles


def detect_masters(ports: list[Port]) -> list[MasterPort]:
    """The DUT's bus-master ports (see the module docstring), each port in one at most."""
    found: list[MasterPort] = []
    used: set[str] = set()
    for kind, anchor, spec in _SPECS:
        rx = re.compile(rf"(.*?)(?:{anchor})")
        for p in ports:
            m = rx.fullmatch(norm_name(p.name))
            if m is None or p.direction != "output" or p.width != 1 or p.name in used:
                continue
            free = [q for q in ports if q.name not in used]
            roles = _group(free, m.group(1), spec)
            for a, b in (("stb", "ack"), ("awvalid", "awready"), ("wvalid", "wready"),
                         ("arvalid", "arready"), ("bvalid", "bready"),
                         ("rvalid", "rready"), ("psel", "pready"), ("penable", "pready")):
                for role in (a, b):  # one-bit handshakes only
                    if role in roles and roles[role].width != 1:
                        del roles[role]
            if any(req <= roles.keys() for req in _REQUIRED[kind]):
                port = MasterPort(kind, m.group(1), roles)
                found.append(port)
                used |= port.ports()
    return found
