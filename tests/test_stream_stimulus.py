"""Streams and bus-master ports in the ``random`` policy's testbench: detection from the
port names and the RTL's use, the agents' text, and (with Verilator) coverage that the
per-cycle random style (``random-flat``) cannot reach."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm4cov.policies.agents import protocol_agents
from llm4cov.policies.bus_master import detect_masters
from llm4cov.policies.random_stimulus import random_testbench, register_bus_plan
from llm4cov.policies.register_bus import detect_bus
from llm4cov.policies.stimulus_plan import Stimulus
from llm4cov.policies.streams import detect_streams
from llm4cov.tasks.model import SourceFile, Task
from test_register_bus import _ports

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FIFO = FIXTURES / "stream_fifo" / "stream_fifo.sv"
FRAME = FIXTURES / "stream_frame" / "frame_guard.sv"
MASTERS = FIXTURES / "bus_masters"


def _task(path: Path) -> Task:
    return Task(id="t", rtl_files=[SourceFile(name=path.name, content=path.read_text())],
                dut_module_name=path.stem)


def _streams(spec: str) -> list[tuple]:
    ports = _ports(spec)
    drivable = [p for p in ports if p.direction == "input" and "clk" not in p.name]
    return [(s.direction, s.valid.name, s.ready.name, [p.name for p in s.data],
             s.last.name if s.last else None) for s in detect_streams(ports, drivable)]


@pytest.mark.parametrize("spec, expected", [
    # AXI4-Stream in and out: the data named like the valid, tlast marks the last beat
    ("i:clk:1 i:s_axis_tdata:8 i:s_axis_tvalid:1 o:s_axis_tready:1 i:s_axis_tlast:1 "
     "i:s_axis_tkeep:1 o:m_axis_tdata:8 o:m_axis_tvalid:1 i:m_axis_tready:1 "
     "o:m_axis_tlast:1",
     [("in", "s_axis_tvalid", "s_axis_tready", ["s_axis_tdata", "s_axis_tlast",
                                                "s_axis_tkeep"], "s_axis_tlast"),
      ("out", "m_axis_tvalid", "m_axis_tready", [], None)]),
    # _i/_o swapped; an empty prefix takes data words only (not mode_i)
    ("i:clk_i:1 i:valid_i:1 o:ready_o:1 i:data_i:16 i:mode_i:2 o:valid_o:1 i:ready_i:1 "
     "o:data_o:16",
     [("in", "valid_i", "ready_o", ["data_i"], None),
      ("out", "valid_o", "ready_i", [], None)]),
    # upper case (OpenCores MIC), vld/rdy, req/ack
    ("i:clk:1 i:I_TVALID:1 o:I_TREADY:1 i:I_TDATA:64 i:I_TLAST:1",
     [("in", "I_TVALID", "I_TREADY", ["I_TDATA", "I_TLAST"], "I_TLAST")]),
    ("i:clk:1 i:in_vld:1 o:in_rdy:1 i:in_payload:12",
     [("in", "in_vld", "in_rdy", ["in_payload"], None)]),
    ("i:clk:1 i:cmd_req:1 o:cmd_ack:1 i:cmd_addr:8 o:rsp_req:1 i:rsp_ack:1",
     [("in", "cmd_req", "cmd_ack", ["cmd_addr"], None),
      ("out", "rsp_req", "rsp_ack", [], None)]),
    # no partner: a valid without a ready output is no stream
    ("i:clk:1 i:valid:1 i:x:8 o:y:8 i:freq:4", []),
])
def test_streams_by_port_names(spec, expected):
    assert _streams(spec) == expected


def test_register_bus_channels_are_not_streams():
    """An AXI4-Lite slave's awvalid/awready are channels of its register bus."""
    ports = _ports("i:aclk:1 i:s_axi_awaddr:8 i:s_axi_awvalid:1 o:s_axi_awready:1 "
                   "i:s_axi_wdata:32 i:s_axi_wvalid:1 o:s_axi_wready:1 o:s_axi_bvalid:1 "
                   "i:s_axi_bready:1 i:s_axi_araddr:8 i:s_axi_arvalid:1 o:s_axi_arready:1 "
                   "o:s_axi_rdata:32 o:s_axi_rvalid:1 i:s_axi_rready:1")
    bus = detect_bus(ports)
    assert bus is not None and bus.kind == "axil"
    drivable = [p for p in ports if p.direction == "input"]
    assert detect_streams(ports, drivable, skip=bus.ports()) == []


@pytest.mark.parametrize("spec, kind, prefix, inputs", [
    ("i:clk_i:1 o:wbm_cyc_o:1 o:wbm_stb_o:1 o:wbm_we_o:1 o:wbm_adr_o:32 o:wbm_dat_o:32 "
     "i:wbm_dat_i:32 o:wbm_sel_o:4 i:wbm_ack_i:1 i:wbm_err_i:1",
     "wishbone", "wbm_", {"wbm_dat_i", "wbm_ack_i", "wbm_err_i"}),
    ("i:PCLK:1 o:PSEL:1 o:PENABLE:1 o:PWRITE:1 o:PADDR:16 o:PWDATA:32 i:PRDATA:32 "
     "i:PREADY:1 i:PSLVERR:1", "apb", "", {"PRDATA", "PREADY", "PSLVERR"}),
    ("i:aclk:1 o:m_axi_awaddr:32 o:m_axi_awlen:8 o:m_axi_awvalid:1 i:m_axi_awready:1 "
     "o:m_axi_wdata:64 o:m_axi_wlast:1 o:m_axi_wvalid:1 i:m_axi_wready:1 "
     "i:m_axi_bvalid:1 i:m_axi_bresp:2 o:m_axi_bready:1 o:m_axi_araddr:32 "
     "o:m_axi_arvalid:1 i:m_axi_arready:1 i:m_axi_rvalid:1 i:m_axi_rdata:64 "
     "i:m_axi_rlast:1 o:m_axi_rready:1", "axi", "m_axi_",
     {"m_axi_awready", "m_axi_wready", "m_axi_bvalid", "m_axi_bresp", "m_axi_arready",
      "m_axi_rvalid", "m_axi_rdata", "m_axi_rlast"}),
    # a read-only AXI manager (an instruction fetch port)
    ("i:clk:1 o:ibus_araddr:32 o:ibus_arvalid:1 i:ibus_arready:1 i:ibus_rvalid:1 "
     "i:ibus_rdata:32 o:ibus_rready:1", "axi", "ibus_",
     {"ibus_arready", "ibus_rvalid", "ibus_rdata"}),
])
def test_bus_master_ports_by_names(spec, kind, prefix, inputs):
    (m,) = detect_masters(_ports(spec))
    assert (m.kind, m.prefix, m.inputs()) == (kind, prefix, inputs)


def test_slave_and_master_ports_side_by_side():
    """A Wishbone slave port and a Wishbone master port: the register bus is the
    slave's (its read data is wbs_dat_o, not the master's wbm_dat_i)."""
    ports = _ports("i:clk:1 i:wbs_cyc_i:1 i:wbs_stb_i:1 i:wbs_we_i:1 i:wbs_adr_i:8 "
                   "i:wbm_dat_i:32 i:wbs_dat_i:32 o:wbs_dat_o:32 o:wbs_ack_o:1 "
                   "o:wbm_cyc_o:1 o:wbm_stb_o:1 o:wbm_we_o:1 o:wbm_adr_o:32 "
                   "o:wbm_dat_o:32 i:wbm_ack_i:1")
    (m,) = detect_masters(ports)
    assert m.kind == "wishbone" and m.prefix == "wbm_"
    bus = detect_bus([p for p in ports if p.name not in m.ports()])
    assert bus is not None and bus.kind == "wishbone"
    assert (bus.roles["wdata"].name, bus.roles["rdata"].name) == ("wbs_dat_i", "wbs_dat_o")


def _in_order(text: str, *parts: str) -> bool:
    """Whether ``parts`` occur in ``text`` one after the other."""
    at = 0
    for part in parts:
        at = text.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return True


def _block(tb: str, start: str) -> str:
    text = tb[tb.index(start):]
    return text[:text.index("endtask")]


def test_fifo_streams_from_names_and_rtl_use():
    """in_last is named like the valid (in_valid); din is not, but the RTL writes it
    where `push = in_valid && in_ready` holds."""
    task = _task(FIFO)
    s = Stimulus(task, 0)
    (ins, outs) = detect_streams(s.ports, s.data, s.design)
    assert (ins.direction, ins.valid.name, ins.ready.name) == ("in", "in_valid", "in_ready")
    assert [p.name for p in ins.data] == ["in_last", "din"] and ins.last is not None
    assert (outs.direction, outs.valid.name, outs.ready.name) == ("out", "out_valid",
                                                                 "out_ready")
    assert [a.call for a in protocol_agents(s)] == ["tb_in0();", "tb_out1();"]


def test_the_protocols_spoken_are_named_for_the_user():
    """``close`` prints them: a user sees which bus or stream was recognised."""
    from llm4cov.policies.random_stimulus import recognised_protocols

    assert recognised_protocols(_task(FIFO)) == ["input stream in_valid/in_ready",
                                                 "output stream out_valid/out_ready"]


def test_fifo_testbench_drives_legal_transfers():
    tb = random_testbench(_task(FIFO), seed=0)
    feed = _block(tb, "task automatic tb_in0")
    # idle gap, then a burst: valid with its data, held until the monitor saw the
    # handshake at a rising edge or the reset is asserted (AXI4-Stream 2.2.1: a valid
    # is never withdrawn), in_last on the burst's last beat
    assert _in_order(feed, "in_valid = 1'b0; in_last = 1'b0;", "repeat ($urandom_range(3) == 0",
                     "tb_len = $urandom_range(7) == 0 ? $urandom_range(17, 256) : "
                     "$urandom_range(1, 16);",
                     "in_valid = 1'b1; in_last = tb_i == tb_len - 1; din = 8'($urandom);",
                     "while (!tb_hs0 && !(rst_n == 1'b0)) @(negedge clk);",
                     "if (!tb_hs0) break;")
    assert "always @(posedge clk) tb_hs0 <= in_valid && in_ready;" in tb
    drain = _block(tb, "task automatic tb_out1")
    assert "out_ready = tb_mode == 0 || (tb_mode == 1" in drain
    # the agents start after the reset release; the reset is pulsed once more
    body = tb[tb.index("initial begin"):]
    assert _in_order(body, "rst_n = 1'b0;", "rst_n = 1'b1;",
                     "fork tb_in0(); tb_out1(); join_none", "rst_n = 1'b0;", "$finish;")
    flat = random_testbench(_task(FIFO), seed=0, bus=False)
    assert "tb_in0" not in flat and "in_valid = ($urandom_range(3) != 0);" in flat


def test_wishbone_master_gets_a_memory_responder():
    task = _task(MASTERS / "wb_copy.v")
    tb = random_testbench(task, seed=0)
    resp = _block(tb, "task automatic tb_wbm0")
    assert _in_order(resp, "foreach (tb_mem0[tb_j]) tb_mem0[tb_j] = $urandom;",
                     "@(negedge clk_i);", "wbm_ack_i = 1'b0; wbm_err_i = 1'b0;",
                     "if (!(wbm_cyc_o && wbm_stb_o)) begin tb_w = -1; continue; end",
                     "if (tb_w > 0) begin tb_w--; continue; end",
                     "if (wbm_we_o) tb_mem0[8'(wbm_adr_o >> 2)] = wbm_dat_o;",
                     "wbm_dat_i = tb_mem0[8'(wbm_adr_o >> 2)];",
                     "if ($urandom_range(31) == 0) wbm_err_i = 1'b1; else wbm_ack_i = 1'b1;")
    # the other inputs stay random, beside the responder
    assert "src_i = $urandom;" in tb and "wbm_dat_i = $urandom" not in tb
    assert "fork tb_wbm0(); join_none" in tb


def test_an_axi_responder_holds_each_response_until_its_handshake():
    """AMBA AXI A3.2.1: a valid, once high, stays until its ready; a write response
    comes after the burst's last data beat (A3.3.1). Only a reset of the domain ends a
    transfer, with no response in reset (a responder that gave up after 256 cycles had
    withdrawn ``bvalid``/``rvalid`` and answered writes whose data never came)."""
    tb = random_testbench(_task(MASTERS / "axi_memtest.sv"), seed=0)
    write, read = _block(tb, "task automatic tb_axw0"), _block(tb, "task automatic tb_axr0")
    assert _in_order(write, "for (int tb_b = 0; tb_b <= tb_n; tb_b++) begin",
                     "while (!(m_axi_wvalid && $urandom_range(3) != 0) && "
                     "!(aresetn == 1'b0)) @(negedge aclk);",
                     "if (!m_axi_wvalid || aresetn == 1'b0) break;",
                     "if (aresetn == 1'b0) continue;", "m_axi_bvalid = 1'b1;",
                     "while (!(tb_hsb0) && !(aresetn == 1'b0)) @(negedge aclk);",
                     "m_axi_bvalid = 1'b0;")
    assert _in_order(read, "m_axi_rvalid = 1'b1;",
                     "while (!(tb_hsr0) && !(aresetn == 1'b0)) @(negedge aclk);",
                     "m_axi_rvalid = 1'b0;", "if (!tb_hsr0) break;")
    assert "tb_k" not in write + read


def test_register_slave_master_and_stream_at_once():
    """copy_engine: an APB slave (bus transactions), a Wishbone master (responder) and
    an output stream (ready driven) in one testbench; the agents start with the
    transactions, after the reset release."""
    task = _task(MASTERS / "copy_engine.v")
    s = Stimulus(task, 0)
    plan = register_bus_plan(task, s)
    assert plan is not None and plan[0].kind == "apb"
    assert [a.call for a in protocol_agents(s, plan[0].ports())] == ["tb_wbm0();",
                                                                    "tb_out1();"]
    tb = random_testbench(task, seed=0)
    body = tb[tb.index("initial begin"):]
    assert _in_order(body, "rst_n = 1'b1;", "    fork", "      tb_wbm0();",
                     "      tb_out1();", "    join_none", "tb_write(tb_waddr[j], tb_d);",
                     "$finish;")
    assert "m_ack_i = $urandom" not in tb and "out_ready = ($urandom" not in tb


def _missed(obs, path: Path, source: str) -> list[str]:
    """The structural misses (lines, branches, expressions) of the RTL statement that
    starts with ``source`` in ``path``: on its line, or naming its ``if`` (an ``else``
    branch is reported on the ``else`` line)."""
    lines = path.read_text().splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.strip().startswith(source))
    return [u.detail for u in obs.uncovered if u.kind != "toggle"
            and (u.line == line or f"{path.name}:{line} " in u.detail)]


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_fifo_fills_and_stalls_only_with_stream_transfers(evaluator):
    """Hand count: `full` needs 16 more transfers in than out; `timeout` 15 cycles in a
    row of out_valid against a low out_ready. The random style's out_ready is low one
    cycle in four, independently (4**-15 a try), and its in/out transfers are equally
    likely, so the count only drifts; the output-stream agent holds ready low for 8-32
    cycles at a time while the input stream keeps bursting."""
    task = _task(FIFO)
    new = evaluator.evaluate(task, random_testbench(task, seed=0))
    flat = evaluator.evaluate(task, random_testbench(task, seed=0, bus=False))
    assert new.status.value == flat.status.value == "success", new.log + flat.log
    assert _missed(new, FIFO, "if (full && in_valid)") == []
    assert _missed(new, FIFO, "else if (waited == 4'd14)") == []
    assert _missed(flat, FIFO, "else if (waited == 4'd14)")


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_long_bursts_reach_an_oversize_frame(evaluator):
    """One burst in eight is 17-256 beats long: a frame of more than 64 beats reaches
    frame_guard's oversize branch, which bursts of at most 16 beats (before) never
    reach; 2,000 cycles hold about 15 long bursts at seed 0."""
    task = _task(FRAME)
    obs = evaluator.evaluate(task, random_testbench(task, seed=0, length=2000))
    assert obs.status.value == "success", obs.log
    assert _missed(obs, FRAME, "else if (beats == 7'd64)") == []
    assert not [u for u in obs.uncovered if u.kind == "toggle" and u.typed.signal == "oversize"]


@pytest.mark.requires_verilator
@pytest.mark.parametrize("name, check, branch", [
    ("wb_copy.v", "if (wbm_dat_i == word)", "then branch"),
    ("apb_memtest.v", "if (PRDATA == PWDATA)", "then branch"),
    ("axi_memtest.sv", "if (mismatch || m_axi_rdata != base", "else branch"),
])
@pytest.mark.heavy
def test_masters_read_back_what_they_wrote(evaluator, name, check, branch):
    """Each master writes a word (an AXI burst of four) and reads it back: the pass
    branch needs a memory behind the port; random read data matches once in 2**32."""
    path = MASTERS / name
    task = _task(path)
    obs = evaluator.evaluate(task, random_testbench(task, seed=0))
    assert obs.status.value == "success", obs.log
    assert not [d for d in _missed(obs, path, check) if branch in d]
    if name == "wb_copy.v":
        flat = evaluator.evaluate(task, random_testbench(task, seed=0, bus=False))
        assert [d for d in _missed(flat, path, check) if branch in d]


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_slave_master_and_stream_simulate_together(evaluator):
    path = MASTERS / "copy_engine.v"
    task = _task(path)
    obs = evaluator.evaluate(task, random_testbench(task, seed=0))
    assert obs.status.value == "success", obs.log
    # the master's read was answered and the word left on the stream
    assert _missed(obs, path, "if (m_cyc_o && m_ack_i)") == []
    assert _missed(obs, path, "if (out_valid && out_ready)") == []
