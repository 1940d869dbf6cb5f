"""Register-bus stimulus: bus and address-map recognition, the transaction order of the
generated testbench, and (with Verilator) full line coverage of a small register block."""

from __future__ import annotations

import re

import pytest

from llm4cov.policies import get_policy
from llm4cov.policies.bus_testbench import iterations_for
from llm4cov.policies.random_stimulus import random_testbench, register_bus_plan
from llm4cov.policies.register_bus import Register, detect_bus
from llm4cov.policies.stimulus_plan import Stimulus
from llm4cov.tasks.hdl import Port
from llm4cov.tasks.model import SourceFile, Task

# A small register block: write OPERAND, write CTRL with the init bit, which starts a
# 20-cycle operation (STATUS ready bit low meanwhile), then RESULT = OPERAND + 1.
REGBLK = """\
module regblk (
  input  wire        clk,
  input  wire        reset_n,
  input  wire        cs,
  input  wire        we,
  input  wire [7:0]  address,
  input  wire [31:0] write_data,
  output reg  [31:0] read_data
);
  localparam ADDR_CTRL        = 8'h08;
  localparam CTRL_INIT_BIT    = 0;
  localparam ADDR_STATUS      = 8'h09;
  localparam STATUS_READY_BIT = 0;
  localparam ADDR_OPERAND     = 8'h10;
  localparam ADDR_RESULT      = 8'h20;

  reg [31:0] operand_reg;
  reg [31:0] result_reg;
  reg [4:0]  cnt;
  reg        busy;

  always @(posedge clk or negedge reset_n)
    if (!reset_n) begin
      operand_reg <= 32'h0;
      result_reg  <= 32'h0;
      cnt         <= 5'h0;
      busy        <= 1'b0;
    end else begin
      if (cs && we && address == ADDR_OPERAND)
        operand_reg <= write_data;
      if (cs && we && address == ADDR_CTRL && write_data[CTRL_INIT_BIT] && !busy) begin
        busy <= 1'b1;
        cnt  <= 5'h0;
      end else if (busy) begin
        cnt <= cnt + 5'h1;
        if (cnt == 5'd19) begin
          busy       <= 1'b0;
          result_reg <= operand_reg + 32'h1;
        end
      end
    end

  always @* begin
    read_data = 32'h0;
    if (cs && !we)
      case (address)
        ADDR_STATUS:  read_data = {31'h0, !busy};
        ADDR_OPERAND: read_data = operand_reg;
        ADDR_RESULT:  read_data = result_reg;
        default:      read_data = 32'hdeadbeef;
      endcase
  end
endmodule
"""


def _task(rtl: str = REGBLK, name: str = "regblk") -> Task:
    return Task(id="t", rtl_files=[SourceFile(name=f"{name}.v", content=rtl)],
                dut_module_name=name)


def test_register_block_bus_and_address_map():
    task = _task()
    plan = register_bus_plan(task, Stimulus(task, 0))
    assert plan is not None
    bus, amap = plan
    assert bus.kind == "csr"
    assert {role: p.name for role, p in bus.roles.items()} == {
        "cs": "cs", "we": "we", "addr": "address", "wdata": "write_data",
        "rdata": "read_data"}
    assert amap.registers == [Register(0x08, "ADDR_CTRL", "control"),
                              Register(0x09, "ADDR_STATUS", "status"),
                              Register(0x10, "ADDR_OPERAND", "data"),
                              Register(0x20, "ADDR_RESULT", "data")]
    assert amap.control_bits == [0]
    assert amap.wait_bit == (0, 1)  # STATUS_READY_BIT set


def test_register_block_transaction_order():
    tb = random_testbench(_task(), seed=3)
    # every non-control address written, every address read back
    assert "tb_waddr [3] = '{8'h9, 8'h10, 8'h20}" in tb
    assert "tb_addr [4] = '{8'h8, 8'h9, 8'h10, 8'h20}" in tb
    # the wait polls STATUS until its ready bit is set, bounded
    wait = tb[tb.index("task automatic tb_wait"):]
    wait = wait[:wait.index("endtask")]
    assert "tb_read(8'h9, q);" in wait and "if (q[0] == 1'b1) break;" in wait
    assert re.search(r"for \(int k = 0; k < \d+; k\+\+\)", wait)
    # writes, then the control pulse, then the wait, then the reads, then random traffic
    body = tb[tb.index("initial begin"):]
    order = [body.index(s) for s in ("tb_write(tb_waddr[j], tb_d);",
                                     "tb_write(8'h8, 32'h1);", "tb_wait();",
                                     "tb_read(tb_addr[j], tb_q);", "$urandom_range(1)",
                                     "$finish;")]
    assert order == sorted(order)
    # the csr protocol: chip select and write enable for one clock per write
    write = tb[tb.index("task automatic tb_write"):]
    write = write[:write.index("endtask")]
    assert "cs = 1'b1; we = 1'b1;" in write and "cs = 1'b0; we = 1'b0;" in write
    assert tb == random_testbench(_task(), seed=3)
    assert tb != random_testbench(_task(), seed=4)


def test_rounds_escalate_and_flat_style_is_selectable():
    task = _task()
    short = random_testbench(task, seed=0, length=200)
    long = random_testbench(task, seed=0, length=800)
    assert "it < 4;" in short and "it < 16;" in long
    flat = random_testbench(task, seed=0, bus=False)
    assert "tb_write" not in flat and "$urandom" in flat
    assert get_policy("random-flat").name == "random-flat"


@pytest.mark.parametrize(("length", "rounds", "poll"), [
    (200, 4, 450), (1000, 20, 2050), (5000, 100, 2050), (20000, 400, 2050)])
def test_past_a_thousand_cycles_only_the_rounds_grow(length, rounds, poll):
    """Rounds ``ceil(length / 50)``, poll bound ``50 + 2 min(length, 1000)`` reads, so
    20000 cycles no longer ran 400 rounds of polls up to 40,050 reads or blind waits of
    5,016 cycles (past the simulator's limit on every register-bus core)."""
    tb = random_testbench(_task(), seed=0, length=length)
    assert f"it < {rounds};" in tb and f"k < {poll};" in tb
    assert iterations_for(_task(), length) == rounds


def test_a_ram_port_keeps_the_random_style():
    ram = """module ram(input wire clk, input wire we, input wire [3:0] addr,
      input wire [7:0] din, output reg [7:0] dout);
      reg [7:0] mem [0:15];
      always @(posedge clk) begin if (we) mem[addr] <= din; dout <= mem[addr]; end
    endmodule
    """
    task = _task(ram, "ram")
    assert register_bus_plan(task, Stimulus(task, 0)) is None
    assert "tb_write" not in random_testbench(task, seed=0)


def _ports(spec: str) -> list[Port]:
    ports = []
    for item in spec.split():
        direction, name, width = item.split(":")
        ports.append(Port(name, {"i": "input", "o": "output"}[direction], int(width)))
    return ports


@pytest.mark.parametrize("spec, kind", [
    ("i:clk_i:1 i:rst_i:1 i:wb_cyc_i:1 i:wb_stb_i:1 i:wb_we_i:1 i:wb_adr_i:32 "
     "i:wb_dat_i:32 o:wb_dat_o:32 i:wb_sel_i:4 o:wb_ack_o:1", "wishbone"),
    ("i:PCLK:1 i:PRESETn:1 i:PSEL:1 i:PENABLE:1 i:PWRITE:1 i:PADDR:12 i:PWDATA:32 "
     "o:PRDATA:32 o:PREADY:1", "apb"),
    ("i:aclk:1 i:aresetn:1 i:s_axi_awaddr:8 i:s_axi_awvalid:1 o:s_axi_awready:1 "
     "i:s_axi_wdata:32 i:s_axi_wstrb:4 i:s_axi_wvalid:1 o:s_axi_wready:1 "
     "o:s_axi_bvalid:1 i:s_axi_bready:1 o:s_axi_bresp:2 i:s_axi_araddr:8 "
     "i:s_axi_arvalid:1 o:s_axi_arready:1 o:s_axi_rdata:32 o:s_axi_rvalid:1 "
     "i:s_axi_rready:1", "axil"),
    ("i:clk:1 i:cs:1 i:we:1 i:address:8 i:write_data:32 o:read_data:32", "csr"),
    ("i:clk:1 i:valid_i:1 o:ready_o:1 i:data_i:8", None),
])
def test_bus_kinds_by_port_names(spec, kind):
    bus = detect_bus(_ports(spec))
    assert (bus.kind if bus else None) == kind


def test_wishbone_waits_for_ack():
    rtl = """module wbreg(input wire clk_i, input wire rst_i, input wire cyc_i,
      input wire stb_i, input wire we_i, input wire [1:0] adr_i, input wire [7:0] dat_i,
      output reg [7:0] dat_o, output reg ack_o);
      reg [7:0] r0, r1;
      always @(posedge clk_i) begin
        ack_o <= cyc_i & stb_i & !ack_o;
        if (cyc_i & stb_i & we_i & ack_o) case (adr_i) 2'b00: r0 <= dat_i; 2'b01: r1 <= dat_i;
          default: ; endcase
        dat_o <= adr_i == 2'b00 ? r0 : r1;
      end
    endmodule
    """
    task = _task(rtl, "wbreg")
    tb = random_testbench(task, seed=0)
    write = tb[tb.index("task automatic tb_write"):]
    write = write[:write.index("endtask")]
    assert "cyc_i = 1'b1; stb_i = 1'b1;" in write
    assert "for (int k = 0; k < 16 && !(ack_o); k++) @(posedge clk_i);" in write
    assert "tb_addr [2] = '{2'h0, 2'h1}" in tb


@pytest.mark.requires_verilator
def test_register_block_reaches_every_line(evaluator):
    task = _task()
    obs = evaluator.evaluate(task, random_testbench(task, seed=0))
    assert obs.status.value == "success", obs.log
    line = obs.coverage.metrics["line"]
    assert line.covered == line.total > 0


def test_reset_polarity_through_submodule_ports():
    """A top reset named without a polarity that only reaches submodules (``.rst(rst_i)``)
    takes the polarity of their uses (``negedge rst``), as in OpenCores' ac97."""
    rtl = """module sub(input wire clk, input wire rst, output reg q);
      always @(posedge clk or negedge rst) if (!rst) q <= 1'b0; else q <= ~q;
    endmodule
    module top(input wire clk_i, input wire rst_i, output wire q);
      sub u0(.clk(clk_i), .rst(rst_i), .q(q));
    endmodule
    """
    task = _task(rtl, "top")
    assert Stimulus(task, 0).low == {"rst_i": True}


APB_SLAVE = """\
module apbreg (
  input  wire        PCLK,
  input  wire        PRESETn,
  input  wire        PSEL,
  input  wire        PENABLE,
  input  wire        PWRITE,
  input  wire [7:0]  PADDR,
  input  wire [31:0] PWDATA,
  output reg  [31:0] PRDATA,
  output reg         PREADY
);
  reg [31:0] r0, r1;
  reg        wait_state;
  always @(posedge PCLK or negedge PRESETn)
    if (!PRESETn) begin
      r0 <= 32'h0; r1 <= 32'h0; PREADY <= 1'b0; wait_state <= 1'b0;
    end else begin
      PREADY <= 1'b0;
      if (PSEL && PENABLE && !PREADY) begin
        wait_state <= !wait_state;
        if (wait_state) begin
          PREADY <= 1'b1;
          if (PWRITE)
            case (PADDR)
              8'h00: r0 <= PWDATA;
              8'h04: r1 <= PWDATA;
              default: ;
            endcase
        end
      end
    end
  always @* begin
    case (PADDR)
      8'h00: PRDATA = r0;
      8'h04: PRDATA = r1;
      default: PRDATA = 32'h0;
    endcase
  end
endmodule
"""

AXIL_SLAVE = """\
module axilreg (
  input  wire        aclk,
  input  wire        aresetn,
  input  wire [3:0]  s_axi_awaddr,
  input  wire        s_axi_awvalid,
  output reg         s_axi_awready,
  input  wire [31:0] s_axi_wdata,
  input  wire [3:0]  s_axi_wstrb,
  input  wire        s_axi_wvalid,
  output reg         s_axi_wready,
  output reg         s_axi_bvalid,
  input  wire        s_axi_bready,
  output wire [1:0]  s_axi_bresp,
  input  wire [3:0]  s_axi_araddr,
  input  wire        s_axi_arvalid,
  output reg         s_axi_arready,
  output reg  [31:0] s_axi_rdata,
  output reg         s_axi_rvalid,
  input  wire        s_axi_rready
);
  reg [31:0] r0, r1;
  assign s_axi_bresp = 2'b00;
  always @(posedge aclk)
    if (!aresetn) begin
      s_axi_awready <= 1'b0; s_axi_wready <= 1'b0; s_axi_bvalid <= 1'b0;
      s_axi_arready <= 1'b0; s_axi_rvalid <= 1'b0; r0 <= 32'h0; r1 <= 32'h0;
      s_axi_rdata <= 32'h0;
    end else begin
      s_axi_awready <= s_axi_awvalid && s_axi_wvalid && !s_axi_awready && !s_axi_bvalid;
      s_axi_wready  <= s_axi_awvalid && s_axi_wvalid && !s_axi_wready && !s_axi_bvalid;
      if (s_axi_awready && s_axi_wready) begin
        s_axi_bvalid <= 1'b1;
        case (s_axi_awaddr)
          4'h0: r0 <= s_axi_wdata;
          4'h4: r1 <= s_axi_wdata;
          default: ;
        endcase
      end else if (s_axi_bvalid && s_axi_bready)
        s_axi_bvalid <= 1'b0;
      s_axi_arready <= s_axi_arvalid && !s_axi_arready && !s_axi_rvalid;
      if (s_axi_arready) begin
        s_axi_rvalid <= 1'b1;
        s_axi_rdata  <= s_axi_araddr == 4'h0 ? r0 : s_axi_araddr == 4'h4 ? r1 : 32'h0;
      end else if (s_axi_rvalid && s_axi_rready)
        s_axi_rvalid <= 1'b0;
    end
endmodule
"""


@pytest.mark.requires_verilator
@pytest.mark.parametrize("rtl, name, kind", [(APB_SLAVE, "apbreg", "apb"),
                                             (AXIL_SLAVE, "axilreg", "axil")])
def test_protocol_buses_reach_every_line(evaluator, rtl, name, kind):
    """An APB completer with a wait state and an AXI4-Lite slave: the transactions obey
    the handshakes (every register written and read, so every line runs)."""
    task = _task(rtl, name)
    plan = register_bus_plan(task, Stimulus(task, 0))
    assert plan is not None and plan[0].kind == kind
    obs = evaluator.evaluate(task, random_testbench(task, seed=0))
    assert obs.status.value == "success", obs.log
    line = obs.coverage.metrics["line"]
    assert line.covered == line.total > 0, obs.uncovered


@pytest.mark.requires_verilator
def test_axil_random_transactions_use_partial_strobes_and_hold_the_responses(evaluator):
    """The random transactions draw the write strobe and a 0-3 cycle lag of the response
    readies (the register sweep keeps all ones and no lag): the slave must hold
    ``bvalid``/``rvalid`` (the ``valid && ready`` terms false with ready low) and every
    input toggles both ways. Left: ``s_axi_bresp``, tied to 0 (2 bits x 2 directions).
    Before, the strobes and readies stayed high (97.34 %, 6 items left)."""
    task = _task(AXIL_SLAVE, "axilreg")
    tb = random_testbench(task, seed=0)
    sweep, rand = tb.split("repeat (8) begin")[0], tb.split("repeat (8) begin")[1]
    assert "tb_lag = $urandom_range(3);" in rand and "tb_lag = $urandom_range" not in sweep
    obs = evaluator.evaluate(task, tb)
    expr, toggle = obs.coverage.metrics["expr"], obs.coverage.metrics["toggle"]
    assert expr.covered == expr.total
    assert toggle.total - toggle.covered == 4
    assert [u.typed.signal for u in obs.uncovered] == ["s_axi_bresp"]


def _lanes(strobe: str, data: str, indent: str) -> str:
    """Four byte-lane writes of ``r0``, each under its strobe bit."""
    return "".join(f"{indent}if ({strobe}[{i}]) r0[{8 * i + 7}:{8 * i}] <= "
                   f"{data}[{8 * i + 7}:{8 * i}];\n" for i in range(4))


APB_STROBED = """\
module apbstrb (
  input  wire        PCLK, PRESETn, PSEL, PENABLE, PWRITE,
  input  wire [3:0]  PADDR,
  input  wire [31:0] PWDATA,
  input  wire [3:0]  PSTRB,
  output wire [31:0] PRDATA,
  output wire        PREADY
);
  reg [31:0] r0;
  assign PREADY = 1'b1;
  assign PRDATA = r0;
  always @(posedge PCLK or negedge PRESETn)
    if (!PRESETn) r0 <= 32'h0;
    else if (PSEL && PENABLE && PWRITE) begin
{apb_lanes}    end
endmodule
""".replace("{apb_lanes}", _lanes("PSTRB", "PWDATA", "      "))

WB_SELECTED = """\
module wbsel (input wire clk_i, rst_i, cyc_i, stb_i, we_i, input wire [3:0] adr_i, sel_i,
              input wire [31:0] dat_i, output reg [31:0] dat_o, output reg ack_o);
  reg [31:0] r0;
  always @(posedge clk_i)
    if (rst_i) begin r0 <= 32'h0; ack_o <= 1'b0; dat_o <= 32'h0; end
    else begin
      ack_o <= cyc_i && stb_i && !ack_o;
      dat_o <= {sel_i[3] ? r0[31:24] : 8'h0, sel_i[2] ? r0[23:16] : 8'h0,
                sel_i[1] ? r0[15:8] : 8'h0, sel_i[0] ? r0[7:0] : 8'h0};
      if (cyc_i && stb_i && we_i && !ack_o) begin
{wb_lanes}      end
    end
endmodule
""".replace("{wb_lanes}", _lanes("sel_i", "dat_i", "        "))


@pytest.mark.requires_verilator
@pytest.mark.parametrize("rtl, name, strobe", [(APB_STROBED, "apbstrb", "PSTRB"),
                                               (WB_SELECTED, "wbsel", "sel_i")])
def test_apb_and_wishbone_random_transactions_draw_the_byte_lanes(evaluator, rtl, name,
                                                                  strobe):
    """APB ``pstrb`` (on writes) and Wishbone ``sel`` (every cycle) are all ones in the
    register sweep and random in the random transactions, as AXI4-Lite's ``wstrb``: the
    four byte-lane ``if``s of each slave take their false branch too. Hand count: with
    the lanes all ones (before), those 4 false branches were the only branch points
    missed."""
    task = _task(rtl, name)
    tb = random_testbench(task, seed=0)
    sweep, rand = tb.split("repeat (8) begin")
    assert "tb_strb = $urandom;" in rand and "tb_strb = $urandom" not in sweep
    assert f"{strobe} = tb_strb;" in tb and "logic [3:0] tb_strb = '1;" in tb
    obs = evaluator.evaluate(task, tb)
    assert obs.status.value == "success", obs.log
    branch = obs.coverage.metrics["branch"]
    assert branch.covered == branch.total > 0, obs.uncovered
    assert not [u for u in obs.uncovered if u.kind == "toggle" and u.typed.signal == strobe]


@pytest.mark.parametrize("rtl, name, aborts", [
    (APB_SLAVE, "apbreg", ["if (!(PREADY)) begin @(negedge PCLK); PRESETn = 1'b0; "
                           "PWRITE = 1'b0; PSEL = 1'b0; PENABLE = 1'b0; @(posedge PCLK); "
                           "@(negedge PCLK); PRESETn = 1'b1; end"] * 2),
    (AXIL_SLAVE, "axilreg", ["if (s_axi_awvalid || s_axi_wvalid) begin @(negedge aclk); "
                             "aresetn = 1'b0;", "if (!tr) begin @(negedge aclk); aresetn = 1'b0;"]),
])
def test_an_unanswered_request_is_withdrawn_only_in_reset(rtl, name, aborts):
    """AMBA APB 3.1 and AXI A3.2.1: a requester keeps ``psel``/``penable`` or its valid
    until the completer answers. A request unanswered for ``HANDSHAKE`` cycles (the
    sequence must go on) ends with a reset pulse of the bus's domain, valid dropped in
    reset (before: dropped outright, a transfer no legal requester makes)."""
    tb = random_testbench(_task(rtl, name), seed=0)
    tasks = tb[tb.index("task automatic tb_write"):tb.index("task automatic tb_wait")]
    at = 0
    for abort in aborts:
        at = tasks.index(abort, at) + 1
