"""Forged scores through names, subroutines, binds and merged counters (a red team's
six findings of 2026-12-07, each fixed as a kind): a testbench whose instances read as
the DUT's (an escaped name holding `.`), that sets the evaluator's per-instance
parameter, that outnumbers the per-instance bounds so the DUT's counters merge with its
own, that binds a wrapper of an RTL module into the DUT, that writes a DUT name through
a subroutine's output argument, or that writes a bound module's input port."""

from __future__ import annotations

import pytest

from llm4cov.sim.analysis.structure import plan_testbench
from llm4cov.sim.model.coverage import DesignModules, Point, dut_absent, merged_outside
from llm4cov.sim.model.observation import Status
from llm4cov.sim.safety import isolation
from llm4cov.sim.safety.drivers import Elaboration, driver_reasons
from llm4cov.sim.safety.static_check import inspect_testbench
from llm4cov.sim.safety.stimulus_only import check
from llm4cov.tasks.model import SourceFile, Task
from support import default_preprocessor

#: A DUT with a submodule whose branches need values the top's input cannot give.
HARD = """module hard(input logic clk, input logic [7:0] a, output logic s);
  logic [2:0] st;
  always_ff @(posedge clk) begin
    if (a == 8'hA5) st <= 3'd1;
    else if (a == 8'h5A) st <= 3'd2;
    else st <= 3'd0;
  end
  assign s = ^st;
endmodule
module hdut(input logic clk, input logic [7:0] a, output logic z);
  hard u_hard(.clk(clk), .a({a[7:4], 4'h0}), .s(z));
endmodule
"""
TASK = Task(id="probe/hdut", rtl_files=[SourceFile(name="hdut.sv", content=HARD)],
            dut_module_name="hdut", dut_instance_name="dut")
HEAD = """module tb;
  logic clk = 0; logic [7:0] a = 0, q; logic z;
  hdut dut(.clk(clk), .a(a), .z(z));
"""
TAIL = """  always #5 clk = ~clk;
  initial begin repeat (20) @(negedge clk) a = a + 8'h10; $finish; end
endmodule
"""


def stimulus_reasons(body: str, after: str = "", rtl: str = HARD) -> list[str]:
    """:func:`check`'s reasons for HEAD + body + TAIL + after (body from line 4 on)."""
    tb = HEAD + body + TAIL + after
    return check(tb, "tb.sv", rtl, {"hard", "hdut"}, "hdut", "tb.dut", {})


# -- subroutine arguments ---------------------------------------------------------------


def test_a_dut_name_passed_to_a_writing_argument_is_a_write_into_the_dut():
    """IEEE 1800 13.5: the actual of an output/inout/ref formal is written; a formal
    without a direction takes the one before it (``b``: inout); ``const ref`` and
    ``input`` only read. Built-in methods: ``first`` writes its ref index (7.9.4),
    ``get`` its ref message (15.4.4), ``randomize`` what it lists (18.12)."""
    body = """  task automatic poke(output logic [7:0] x, input logic [7:0] v); x = v; endtask
  function automatic void bump(ref logic [7:0] r, const ref logic [7:0] c); r = c; endfunction
  task automatic both(inout logic [7:0] a1, b1); endtask
  int aa[int]; mailbox #(logic [7:0]) mb = new;
  initial begin
    poke(dut.u_hard.st, 8'h3C);
    poke(.v(8'h1), .x(dut.u_hard.st));
    bump(dut.u_hard.st, dut.u_hard.st);
    both(q, dut.u_hard.st);
    poke(q, dut.u_hard.st);
    void'(aa.first(dut.u_hard.st));
    mb.get(dut.u_hard.st);
    void'(std::randomize(dut.u_hard.st));
  end
"""
    assert stimulus_reasons(body) == [
        "tb.sv:9: the output argument `x` of `poke` `dut.u_hard.st` writes into the DUT",
        "tb.sv:10: the output argument `x` of `poke` `dut.u_hard.st` writes into the DUT",
        "tb.sv:11: the ref argument `r` of `bump` `dut.u_hard.st` writes into the DUT",
        "tb.sv:12: the inout argument `b1` of `both` `dut.u_hard.st` writes into the DUT",
        "tb.sv:14: the ref argument of the built-in method `first` `dut.u_hard.st` writes "
        "into the DUT",
        "tb.sv:15: the ref argument of the built-in method `get` `dut.u_hard.st` writes "
        "into the DUT",
        "tb.sv:16: the variable `randomize` sets `dut.u_hard.st` writes into the DUT",
    ]


def test_an_rtl_package_function_with_an_output_argument_writes_what_it_is_given():
    rtl = "package p;\n  function automatic void getv(output logic [2:0] o); o = 3'd1; " \
          "endfunction\nendpackage\n" + HARD
    body = "  logic [2:0] mine;\n  initial begin p::getv(dut.u_hard.st); p::getv(mine); end\n"
    assert stimulus_reasons(body, rtl=rtl) == [
        "tb.sv:5: the output argument `o` of `getv` `dut.u_hard.st` writes into the DUT"]


# -- input ports and binds ---------------------------------------------------------------

CHECKERS = """module chk(input logic clk, input var logic [2:0] st);
  initial st = 3'd1;
endmodule
module wrap(input logic clk);
  hard h(.clk(clk), .a(8'hA5), .s());
endmodule
module mid(input logic clk);
  wrap w(.clk(clk));
endmodule
module shell(input logic clk);
endmodule
module watch(input logic clk, input logic [2:0] st);
  always @(posedge clk) if (st == 3'd2) $display("two");
endmodule
"""


def test_a_write_to_an_input_port_is_refused_in_every_testbench_module():
    """Bound into the DUT, ``chk``'s input ``st`` is the DUT's own register (Verilator
    merges them once ``lint_off ASSIGNIN`` waives its error): 54.71 -> 81.14 % on the red
    team's lock design. A module that only reads its inputs stays allowed."""
    body = "  bind hard chk c(.clk(clk), .st(st));\n  bind hard watch w(.clk(clk), .st(st));\n"
    assert stimulus_reasons(body, CHECKERS) == [
        "tb.sv:10: the assignment to `st` writes an input port of `chk` (an input is "
        "driven from outside; bound into the DUT, it is the DUT's own signal)"]


def test_an_rtl_instance_in_a_module_inside_the_dut_is_refused_at_any_depth():
    """``mid`` holds ``wrap`` holds ``hard``: bound into the DUT, ``tb.dut.m.w.h`` would
    count as the DUT's (42.11 -> 62.09 % on the red team's design with one level). A
    module bound into a bound module lies in the DUT too (``wrap`` again, through
    ``shell``): the one RTL instantiation is named once; a bound module without RTL
    stays allowed, and so does ``wrap`` used outside the DUT."""
    body = ("  bind hdut mid m(.clk(clk));\n  bind hdut shell s(.clk(clk));\n"
            "  bind shell wrap w2(.clk(clk));\n")
    reason = ("tb.sv:{}: `wrap` lies in the DUT (bound into it, or instantiated there) and "
              "instantiates the RTL module `hard` (whose points would count as the DUT's)")
    checkers = CHECKERS.replace("initial st = 3'd1;", "")
    assert stimulus_reasons(body, checkers) == [reason.format(14)]
    assert stimulus_reasons("  wrap outside(.clk(clk));\n", checkers) == []


def test_a_testbench_model_the_rtl_instantiates_lies_in_the_dut():
    """The RTL leaves ``ram_model`` out (a vendor memory); the testbench's model of it is
    instantiated inside the DUT, so an RTL instance in it would count as the DUT's, and
    a write to one of its ports, by a path from the testbench, is a write into the
    DUT."""
    rtl = HARD.replace("hard u_hard(", "ram_model u_ram(.clk(clk));\n  hard u_hard(")
    model = ("module ram_model(input logic clk);\n  hard h(.clk(clk), .a(8'hA5), .s());\n"
             "endmodule\n")
    assert stimulus_reasons("", model, rtl=rtl) == [
        "tb.sv:8: `ram_model` lies in the DUT (bound into it, or instantiated there) and "
        "instantiates the RTL module `hard` (whose points would count as the DUT's)"]
    body = "  bind hard watch w(.clk(clk), .st(st));\n  initial w.st = 3'd2;\n"
    assert stimulus_reasons(body, CHECKERS.replace("initial st = 3'd1;", "")) == [
        "tb.sv:5: the assignment to `w.st` writes into the DUT"]


def test_constructor_and_error_string_arguments_are_writes_too():
    body = """  class C; function new(ref logic [2:0] r); r = 3'd1; endfunction endclass
  C c; integer fd; string msg;
  initial begin c = new(dut.u_hard.st); void'($ferror(fd, dut.u_hard.st)); end
"""
    assert stimulus_reasons(body) == [
        "tb.sv:6: the ref argument `r` of `new` `dut.u_hard.st` writes into the DUT",
        "tb.sv:6: the $ferror output `dut.u_hard.st` writes into the DUT"]


# -- names the coverage records read as paths ------------------------------------------------


@pytest.mark.requires_verilator
@pytest.mark.parametrize(("line", "reason"), [
    ("  for (genvar i = 0; i < 2; i++) begin : \\dut.shadow \n"
     "    hard c(.clk(clk), .a(8'hA5), .s()); end\n",
     "tb.sv:4: the escaped name `dut.shadow` holds `.` or `*`, which coverage records read "
     "as an instance path"),
    ("  hard \\dut.u_hardX (.clk(clk), .a(8'hA5), .s());\n",
     "tb.sv:4: the escaped name `dut.u_hardX` holds `.` or `*`, which coverage records "
     "read as an instance path"),
    ("  `define MK hard #(.LLM4COV_INST(64'd1)) extra(.clk(clk), .a(a), .s());\n  `MK\n",
     "tb.sv:5: the name `LLM4COV_INST` is reserved for the evaluator"),
    ("  // Verilator lint_off ASSIGNIN\n",
     "tb.sv:4: `lint_off` of ASSIGNIN is not allowed (it waives an error on writes the "
     "check relies on)"),
    ("  /*verilator lint_off*/\n",
     "tb.sv:4: `lint_off` of every warning is not allowed (it waives an error on writes "
     "the check relies on)"),
])
def test_names_and_waivers_the_check_refuses_in_the_testbench(line, reason):
    tb = HEAD + line + TAIL
    got = inspect_testbench(tb, "tb.sv", TASK, preprocessor=default_preprocessor(TASK)).reasons
    assert got == [reason]


@pytest.mark.requires_verilator
def test_harmless_waivers_and_plain_escaped_names_stay_allowed():
    tb = HEAD + "  /* verilator lint_off WIDTH */\n  logic \\my$sig ;\n" + TAIL
    assert inspect_testbench(tb, "tb.sv", TASK,
                             preprocessor=default_preprocessor(TASK)).reasons == []


# -- merged counters ---------------------------------------------------------------------


def _point(hier: str, module: str) -> Point:
    return Point(metric="line", file="hdut.sv", line=4, col=0, comment="", hier=hier,
                 count=1, module=module)


def test_a_dut_module_merged_above_the_dut_is_found():
    """Verilator names a merged counter set by its instances' common prefix: ``tb.*``
    holds the DUT's ``hard`` and the testbench's; ``tb.dut.*`` only the DUT's; a module
    outside the DUT's tree (``ref``) may merge anywhere."""
    modules = DesignModules(frozenset({"hard", "hdut", "ref"}), frozenset({"tb"}),
                            frozenset({"hard", "hdut"}))
    points = [_point("tb.*", "hard"), _point("tb.dut.*", "hard__Lz1"), _point("tb.*", "ref"),
              _point("tb.dut", "hdut"), _point("t*", "hdut")]
    assert merged_outside(points, "tb.dut", modules) == ["t* (hdut)", "tb.* (hard)"]


@pytest.mark.requires_verilator
@pytest.mark.skipif(not isolation.available(), reason="bubblewrap cannot run here")
@pytest.mark.heavy
def test_testbench_copies_past_the_per_instance_bound_are_rejected_after_the_run(evaluator):
    """300 idle testbench copies of ``hard`` pass the per-instance bound (256 copies):
    Verilator merged the DUT's ``u_hard`` into ``tb.*`` and its points left the
    denominator (42.11 -> 97.22 % on the red team's design)."""
    body = "  for (genvar i = 0; i < 300; i++) begin : g\n" \
           "    hard c(.clk(clk), .a(8'h0), .s()); end\n"
    obs = evaluator.evaluate(TASK, HEAD + body + TAIL)
    assert obs.status is Status.REJECTED and obs.coverage is None
    assert "tb.* (hard)" in obs.log and "per-instance coverage skipped" in obs.notes[0]


@pytest.mark.requires_verilator
def test_a_config_block_that_rebinds_a_dut_instance_is_refused():
    """IEEE 1800 33.4: ``instance tb.dut.u_hard use easy`` would make the DUT's
    submodule the testbench's own module (its points then leave the DUT's count); the
    pinned Verilator ignores it, the check does not rely on that."""
    config = "config cfg;\n  design tb;\n  instance tb.dut.u_hard use easy;\nendconfig\n"
    got = inspect_testbench(HEAD + TAIL + config, "tb.sv", TASK,
                            preprocessor=default_preprocessor(TASK)).reasons
    assert got == ["tb.sv:7: `config` is not allowed (it chooses which module an instance "
                   "of the design is)"]


def test_a_testbench_that_declares_an_rtl_module_again_is_found():
    """Verilator compiled the testbench's trivial ``hard`` in place of the DUT's
    submodule (7 line points became 1: 75 % for a stimulus worth 42 %)."""
    trivial = ("module hard(input logic clk, input logic [7:0] a, output logic s);\n"
               "  assign s = 1'b0;\nendmodule\n")
    tb = SourceFile(name="tb.sv", content=trivial + HEAD + TAIL)
    assert plan_testbench(TASK.rtl_files, tb, "hdut", "dut").redeclared == ("hard",)
    honest = SourceFile(name="tb.sv", content=HEAD + TAIL)
    assert plan_testbench(TASK.rtl_files, honest, "hdut", "dut").redeclared == ()
    # a package the RTL declares (its parameters choose the DUT's generate branches)
    rtl = [SourceFile(name="p.sv", content="package cfg_pkg;\n  localparam int MODE = 1;\n"
                                          "endpackage\n"), *TASK.rtl_files]
    again = SourceFile(name="tb.sv", content="package cfg_pkg;\n  localparam int MODE = 0;\n"
                                             "endpackage\n" + HEAD + TAIL)
    assert plan_testbench(rtl, again, "hdut", "dut").redeclared == ("cfg_pkg",)


@pytest.mark.requires_verilator
@pytest.mark.skipif(not isolation.available(), reason="bubblewrap cannot run here")
def test_the_evaluator_rejects_a_redeclared_rtl_module(evaluator):
    trivial = ("module hard(input logic clk, input logic [7:0] a, output logic s);\n"
               "  assign s = 1'b0;\nendmodule\n")
    obs = evaluator.evaluate(TASK, trivial + HEAD + TAIL)
    assert obs.status is Status.REJECTED and obs.coverage is None
    assert "tb.sv: the testbench declares `hard`, a name of the RTL's" in obs.log


# -- a second red team's bypasses (2026-12-07), each fixed as a kind ---------------------


def test_a_name_used_inside_the_dut_resolves_in_its_scope():
    """A bound checker's ``u_hard.a`` is ``tb.dut.u_hard.a`` (upward resolution, IEEE
    1800 23.8): forced, 42.11 -> 87.50 %; a ``defparam`` from there pruned the DUT's
    generate branch. A hierarchical name through the checker's own instance stays
    allowed."""
    after = ("module chk(input logic clk);\n  logic [7:0] mine;\n  sub s();\n"
             "  initial begin force u_hard.a = 8'hA5; s.v = 1; end\n"
             "  defparam u_hard.MODE = 0;\n  initial void'(u_hard.poke(1));\nendmodule\n"
             "module sub; logic v; endmodule\n")
    assert stimulus_reasons("  bind hdut chk c(.clk(clk));\n", after) == [
        "tb.sv:11: `force` of `u_hard.a` writes into the DUT (`chk` lies in the DUT: the "
        "name resolves in its scope)",
        "tb.sv:12: `defparam u_hard.MODE` changes a DUT parameter (the task sets the DUT's "
        "parameters)",
        "tb.sv:13: the call of `u_hard.poke` runs a subroutine of the DUT (it may write the "
        "DUT's state)",
    ]


def test_an_interface_bound_into_the_dut_is_checked_like_a_module():
    """``interface drv_if(output logic [7:0] o)`` bound with ``.o(ha)`` drove the DUT's
    net (40.67 -> 87.50 %); so does a module's output connected as ``.ha`` (the name
    itself, IEEE 1800 23.3.2.3)."""
    after = ("interface drv_if(output logic [7:0] o);\n  initial o = 8'hA5;\nendinterface\n"
             "module drv(output logic [7:0] ha);\nendmodule\n")
    body = "  bind hdut drv_if u_drv(.o(a));\n  bind hdut drv u_d2(.ha);\n"
    assert stimulus_reasons(body, after) == [
        "tb.sv:4: the output port `o` of `drv_if`, bound into the DUT, drives a DUT name",
        "tb.sv:5: the output port `ha` of `drv`, bound into the DUT, drives a DUT name"]


def test_an_assignment_pattern_target_writes_every_name_in_it():
    body = ("  typedef struct packed { logic [2:0] s; logic [7:0] t; } pr_t;\n"
            "  initial pr_t'{dut.u_hard.st, q} = 11'h700;\n")
    assert stimulus_reasons(body) == [
        "tb.sv:5: the assignment to `dut.u_hard.st` writes into the DUT"]


def test_a_testbench_module_named_like_a_copy_verilator_makes_is_found():
    """Verilator names a parameter-specialized copy ``hard__Lz2``; a testbench module of
    that name made the copy's points read as the testbench's (62.24 -> 86.46 %)."""
    tb = SourceFile(name="tb.sv", content="module hard__Lz2;\nendmodule\n" + HEAD + TAIL)
    assert plan_testbench(TASK.rtl_files, tb, "hdut", "dut").redeclared == ("hard__Lz2",)


# -- a third red team's bypasses (2026-12-07) ---------------------------------------------


def test_a_checker_bound_into_the_dut_is_a_unit_inside_it():
    """``checker chk ... force u_hard.a`` bound into the DUT: 42.11 -> 87.50 %."""
    after = "checker chk(input logic clk);\n  initial force u_hard.a = 8'hA5;\nendchecker\n"
    assert stimulus_reasons("  bind hdut chk c(.clk(clk));\n", after) == [
        "tb.sv:9: `force` of `u_hard.a` writes into the DUT (`chk` lies in the DUT: the "
        "name resolves in its scope)"]


def test_a_decoy_instance_of_the_same_name_hides_nothing():
    """An instance named like a DUT one inside a generate block (never elaborated, or
    not visible at module scope) made the name read as the decoy's: both the testbench
    top's ``dut`` and a bound checker's ``u_hard`` (42.11 -> 87.50 % each). Every type
    a name has counts, and an RTL instance name from a unit in the DUT is the DUT's."""
    after = ("module dummy; logic [7:0] a; endmodule\nmodule chk(input logic clk);\n"
             "  if (0) begin : g dummy u_hard(); end\n  initial force u_hard.a = 8'h5A;\n"
             "endmodule\n")
    body = ("  if (0) begin : g dummy dut(); end\n  initial force dut.u_hard.a = 8'hA5;\n"
            "  bind hdut chk c(.clk(clk));\n  initial force g.dut.u_hard.a = 8'hA5;\n")
    assert stimulus_reasons(body, after) == [
        "tb.sv:5: `force` of `dut.u_hard.a` writes into the DUT",
        "tb.sv:7: `force` of `g.dut.u_hard.a` writes into the DUT",
        "tb.sv:14: `force` of `u_hard.a` writes into the DUT (`chk` lies in the DUT: the "
        "name resolves in its scope)"]


# -- a fourth red team's bypasses (2026-12-07): the collapsed output port ------------------

CNT = SourceFile(name="cnt.sv", content="module cnt(input logic clk, output logic [3:0] q);\n"
                                       "endmodule\n")


def test_a_variable_an_rtl_output_drives_is_found_as_a_port_and_through_a_wrapper():
    """Verilator collapses a DUT output with the variable it drives, level by level: a
    testbench top's own ``output logic q`` port (61.53 -> 95.83 %) or a wrapper's
    output passed up to the top (71.25 -> 95.83 %) wrote the DUT's counter. Connecting
    the wrapper's output to the top's variable is the drive itself, not a write."""
    port = ("module tb(output logic [3:0] q);\n  logic clk = 0;\n  cnt dut(.clk(clk), .q(q));\n"
            "  initial q = 4'd9;\nendmodule\n")
    wrapped = ("module wrap(input logic clk, output logic [3:0] q);\n  cnt dut(.clk(clk), .q(q));\n"
               "endmodule\nmodule tb;\n  logic clk = 0; logic [3:0] q;\n"
               "  wrap w(.clk(clk), .q(q));\n  initial q = 4'd9;\nendmodule\n")
    for tb, line in ((port, 4), (wrapped, 7)):
        assert check(tb, "tb.sv", CNT.content, {"cnt"}, "cnt", "tb.dut", {}) == [
            f"tb.sv:{line}: the assignment to `q` writes into the DUT (a DUT port "
            "drives it)"]
    honest = wrapped.replace("  initial q = 4'd9;\n", "")
    assert check(honest, "tb.sv", CNT.content, {"cnt"}, "cnt", "tb.w.dut", {}) == []


# -- a fifth red team (2026-12-07): writes the syntax does not name, read on the elaboration

#: A counter whose output only its own clock moves, a package variable and an interface
#: member the DUT reads (each a branch no input reaches).
DRIVEN = """package cfg_pkg;
  logic [31:0] key = 32'd0;
endpackage
interface bus_if;
  logic [31:0] wdata; logic [31:0] rdata;
  modport slave(input wdata, output rdata);
endinterface
module dd(input logic clk, bus_if.slave b, output logic [3:0] q, output logic hit);
  always_ff @(posedge clk) q <= q + 4'd1;
  always_ff @(posedge clk) b.rdata <= b.wdata & 32'hFF;
  assign hit = cfg_pkg::key == 32'hDEADBEEF || b.rdata == 32'hCAFEF00D || q == 4'd9;
endmodule
"""
DD_HEAD = """module tb;
  logic clk = 0; logic [3:0] q; logic hit;
  bus_if bi();
  dd dut(.clk(clk), .b(bi.slave), .q(q), .hit(hit));
"""


def driven_reasons(body: str, before: str = "") -> list[str]:
    """:func:`check`'s reasons for ``before`` + DD_HEAD + body + ``endmodule``."""
    tb = before + DD_HEAD + body + "endmodule\n"
    return check(tb, "tb.sv", DRIVEN, {"dd"}, "dd", "tb.dut", {})


def test_the_honest_testbench_of_the_driven_design_passes():
    """Driving the interface's input member, reading everything, and a zero initial
    value on a variable a DUT output drives (the value every variable starts at) are
    no writes."""
    body = "  logic [3:0] z = '0;\n  initial begin bi.wdata = 32'h1; $display(q, bi.rdata, " \
           "cfg_pkg::key); end\n"
    assert driven_reasons(body) == []
    assert check(DD_HEAD.replace("logic [3:0] q;", "logic [3:0] q = 4'd0;") + "endmodule\n",
                 "tb.sv", DRIVEN, {"dd"}, "dd", "tb.dut", {}) == []


@pytest.mark.parametrize("body, before, reason", [
    # a clocking block's output drive of the variable the DUT's q drives (72.64 -> 95.83 %)
    ("  clocking cb @(posedge clk); output q; endclocking\n  initial cb.q <= 4'd9;\n", "",
     "tb.sv:5: the testbench drives `tb.q`, a variable the DUT drives (a clocking block's "
     "output): it writes into the DUT"),
    # the variable passed to a testbench module's ref port, written there (72.64 -> 95.83 %)
    ("  poker pk(.p(q));\n", "module poker(ref logic [3:0] p);\n  initial p = 4'd9;\n"
     "endmodule\n",
     "tb.sv:2: the assignment to `p` writes into the DUT (a DUT port drives it)"),
    # ... or to a testbench module's output port (a second driver Verilator merges)
    ("  poker pk(.p(q));\n", "module poker(output logic [3:0] p);\n  initial p = 4'd9;\n"
     "endmodule\n",
     "tb.sv:2: the assignment to `p` writes into the DUT (a DUT port drives it)"),
    # an interface member the DUT drives through its modport (72.22 -> 95.83 %)
    ("  initial bi.rdata = 32'hCAFEF00D;\n", "",
     "tb.sv:5: the testbench drives `tb.bi.rdata`, a variable the DUT drives (a procedural "
     "assignment): it writes into the DUT"),
    # a package variable the DUT reads (86.07 -> 99.29 %)
    ("  initial cfg_pkg::key = 32'hDEADBEEF;\n", "",
     "tb.sv:5: the testbench drives `cfg_pkg::key`, a variable of the DUT (a procedural "
     "assignment): it writes into the DUT"),
])
def test_a_write_of_a_variable_the_dut_drives_is_found_on_the_elaboration(body, before,
                                                                         reason):
    """Each form the syntax did not name as a write when the red team found it (the
    syntax now follows a driven name into a testbench module's ports too); slang's
    driver analysis has every driver of the variable, whatever its form (IEEE 1800
    6.5), and finds those as well."""
    assert driven_reasons(body, before) == [reason]
    tb = before + DD_HEAD + body + "endmodule\n"
    assert driver_reasons(Elaboration.of(DRIVEN, tb, "tb.sv", "tb"), "tb.sv", "dd",
                          "tb.dut")


def test_a_nonzero_initial_value_of_a_dut_driven_variable_is_a_write():
    tb = DD_HEAD.replace("logic [3:0] q;", "logic [3:0] q = 4'd9;") + "endmodule\n"
    assert check(tb, "tb.sv", DRIVEN, {"dd"}, "dd", "tb.dut", {}) == [
        "tb.sv:2: the testbench drives `tb.q`, a variable the DUT drives (its declaration's "
        "initial value): it writes into the DUT"]


def test_a_force_of_a_net_a_dut_output_drives_is_a_write():
    """IEEE 1800 10.6.2: a net may be forced; Verilator collapses it with the DUT's
    variable (72.64 -> 95.83 %). A continuous assignment to it stays a resolved second
    driver (a bidirectional bus), as before."""
    wired = DD_HEAD.replace("logic [3:0] q;", "wire [3:0] q;")
    assert check(wired + "  initial force q = 4'd9;\nendmodule\n", "tb.sv", DRIVEN, {"dd"},
                 "dd", "tb.dut", {}) == [
        "tb.sv:5: `force` of `q` writes into the DUT (a DUT port drives it)"]


SLICED = DD_HEAD.replace("logic [3:0] q;", "DECL").replace(".q(q)", ".q(PART)")


@pytest.mark.parametrize("decl, body, reason", [
    # the other bits of a vector a DUT output drives in part (IEEE 1800 6.5): no write
    ("logic [7:0] obs;", "initial obs[7:4] = 4'hA;", None),
    ("wire [7:0] obs;", "assign obs[7:4] = 4'hA;", None),
    ("logic [3:0] obs [2];", "initial obs[1] = 4'hA;", None),
    # a bit the DUT drives: a write into it, procedural or continuous
    ("logic [7:0] obs;", "initial obs[2] = 1'b1;",
     "tb.sv:5: the testbench drives `tb.obs`, a variable the DUT drives (a procedural "
     "assignment): it writes into the DUT"),
    ("wire [7:0] obs;", "assign obs[4:3] = 2'b11;",
     "tb.sv:5: the testbench drives `tb.obs`, a net the DUT drives (a continuous "
     "assignment): it writes into the DUT"),
    ("logic [3:0] obs [2];", "initial obs[0][1] = 1'b1;",
     "tb.sv:5: the testbench drives `tb.obs`, a variable the DUT drives (a procedural "
     "assignment): it writes into the DUT"),
    # an index the elaboration cannot bound covers every bit
    ("logic [7:0] obs; int i = 7;", "initial obs[i] = 1'b1;",
     "tb.sv:5: the testbench drives `tb.obs`, a variable the DUT drives (a procedural "
     "assignment): it writes into the DUT"),
    # slang records no driver for a force: the syntax refuses a force of any part
    ("wire [7:0] obs;", "initial force obs[7:4] = 4'hA;",
     "tb.sv:5: `force` of `obs` writes into the DUT (a DUT port drives it)"),
])
def test_a_vector_a_dut_output_drives_in_part_may_have_its_other_bits_written(decl, body,
                                                                              reason):
    """A DUT output connected to a part select (``.q(obs[3:0])``, ``.q(obs[0])`` of an
    unpacked array): the testbench's
    writes of the other bits are its own (a red team's false positive: the honest
    testbench scores 71.25 % with and without the check); slang's driver ranges tell
    the bits apart."""
    part = "obs[0]" if "obs [2]" in decl else "obs[3:0]"
    tb = SLICED.replace("DECL", decl).replace("PART", part) + f"  {body}\nendmodule\n"
    assert check(tb, "tb.sv", DRIVEN, {"dd"}, "dd", "tb.dut", {}) == (
        [reason] if reason else [])


def test_a_generate_block_named_like_the_dut_instance_is_not_the_dut():
    """The DUT in a dead ``if (0)`` block, a live block named ``dut`` holding an easy
    submodule: Verilator measured ``tb.dut.u_hard`` as the whole DUT (76.97 -> 100 %)."""
    tb = ("module tb;\n  logic clk = 0; logic [7:0] a = 0; logic z;\n"
          "  if (0) begin : g hdut dut(.clk(clk), .a(a), .z(z)); end\n"
          "  if (1) begin : dut hard u_hard(.clk(clk), .a(a), .s(z)); end\nendmodule\n")
    assert check(tb, "tb.sv", HARD, {"hard", "hdut"}, "hdut", "tb.dut", {}) == [
        "tb.sv: `tb.dut`, where the DUT is measured, is not an instance of `hdut` but a "
        "generate block: its coverage would not be the DUT's"]


def test_a_run_without_a_point_of_the_dut_module_is_not_the_dut():
    modules = DesignModules(frozenset({"hard", "hdut"}), frozenset({"tb"}),
                            frozenset({"hard", "hdut"}))
    assert dut_absent([_point("tb.dut.u_hard", "hard")], "tb.dut", modules, "hdut")
    assert not dut_absent([_point("tb.dut.u_hard", "hard"), _point("tb.dut", "hdut")],
                          "tb.dut", modules, "hdut")
    assert not dut_absent([_point("tb.x", "hard")], "tb.dut", modules, "hdut")


def test_a_type_parameter_override_is_a_parameter_change():
    """``tp #(.T(logic [3:0]))`` narrowed the DUT's 32-bit compares (83.06 -> 100 %); the
    same type spelled through a typedef is no change."""
    rtl = ("module tp #(parameter type T = logic [31:0]) "
           "(input logic clk, output logic y);\n  T acc;\n  assign y = acc == T'(5);\n"
           "endmodule\n")
    tb = ("typedef logic [31:0] word_t;\nmodule tb;\n  logic clk = 0, y;\n"
          "  tp #(.T({})) dut(.clk(clk), .y(y));\nendmodule\n")
    assert check(tb.format("logic [3:0]"), "tb.sv", rtl, {"tp"}, "tp", "tb.dut", {}) == [
        "tb.sv: the DUT `tb.dut` is elaborated with parameters other than the task's: "
        "T = type logic[3:0] (the task's: type logic[31:0]); instantiate it with the "
        "task's parameters"]
    assert check(tb.format("word_t"), "tb.sv", rtl, {"tp"}, "tp", "tb.dut", {}) == []


ROM = """module rom(input logic clk, input logic [3:0] addr, output logic [7:0] y);
  logic [31:0] mem [0:15];
  initial $readmemh("rom.hex", mem);
  always_ff @(posedge clk) y <= mem[addr] == 32'hDEADBEEF ? 8'hAA : mem[addr][7:0];
endmodule
"""


@pytest.mark.requires_verilator
@pytest.mark.skipif(not isolation.available(), reason="bubblewrap cannot run here")
def test_the_testbench_cannot_write_a_file_the_dut_reads(evaluator):
    """The run's sources are read-only: a testbench that wrote ``rom.hex`` before the
    DUT's ``$readmemh`` of it fed the DUT's memory (64.62 -> 100 %); now its
    ``$fopen`` gets no file and the DUT reads none, so ``y`` never takes 8'hAA (the
    ``?:`` arm stays unreached)."""
    task = Task(id="probe/rom", rtl_files=[SourceFile(name="rom.sv", content=ROM)],
                dut_module_name="rom", dut_instance_name="dut")
    tb = """module tb;
  logic clk = 0; logic [3:0] addr = 0; logic [7:0] y; int fd;
  initial begin
    fd = $fopen("rom.hex", "w");
    for (int i = 0; i < 16; i++) $fdisplay(fd, "deadbeef");
    $fclose(fd);
    $display("fd=%0d", fd);
  end
  rom dut(.clk(clk), .addr(addr), .y(y));
  always #5 clk = ~clk;
  initial begin repeat (20) begin @(negedge clk); addr = addr + 1; end $finish; end
endmodule
"""
    obs = evaluator.evaluate(task, tb)
    assert obs.status is Status.SUCCESS, obs.log
    assert "fd=0" in obs.log
    assert [u.detail for u in obs.uncovered if u.kind == "branch"] == [
        "true arm of the ?: on `mem[addr] == 32'hDEADBEEF` at rom.sv:4 never taken"]


# -- a sixth red team (2026-12-07): where the elaboration and Verilator's build differed


@pytest.mark.parametrize("tb, reason", [
    # a compilation-unit variable of the RTL, written by its plain name (one unit, as
    # Verilator reads the files: 79.77 -> 92.61 %)
    ("module tb;\n  logic clk = 0; logic [3:0] q; logic hit;\n  bus_if bi();\n"
     "  dd dut(.clk(clk), .b(bi.slave), .q(q), .hit(hit));\n  initial cu_key = 1;\n"
     "endmodule\n",
     "tb.sv:5: the testbench drives `cu_key`, a variable of the DUT (a procedural "
     "assignment): it writes into the DUT"),
    # a testbench that instantiates itself in a dead branch was never elaborated
    ("module tb #(parameter N = 0);\n  logic clk = 0; logic [3:0] q; logic hit;\n"
     "  bus_if bi();\n  dd dut(.clk(clk), .b(bi.slave), .q(q), .hit(hit));\n"
     "  if (N > 0) begin : g tb #(N - 1) t(); end\n"
     "  clocking cb @(posedge clk); output q; endclocking\n  initial cb.q <= 4'd9;\n"
     "endmodule\n",
     "tb.sv:6: the testbench drives `tb.q`, a variable the DUT drives (a clocking "
     "block's output): it writes into the DUT"),
    # a clocking block's drive of a net the DUT drives (51.04 -> 95.14 %)
    ("module tb;\n  logic clk = 0; wire [3:0] q; logic hit;\n  bus_if bi();\n"
     "  dd dut(.clk(clk), .b(bi.slave), .q(q), .hit(hit));\n"
     "  clocking cb @(posedge clk); output q; endclocking\n  initial cb.q <= 4'd9;\n"
     "endmodule\n",
     "tb.sv:5: the testbench drives `tb.q`, a net the DUT drives (a clocking block's "
     "output): it writes into the DUT"),
])
def test_the_elaboration_is_verilators_unit_top_and_nets(tb, reason):
    rtl = "logic [31:0] cu_key = 0;\n" + DRIVEN.replace("cfg_pkg::key ==", "cu_key ==")
    assert check(tb, "tb.sv", rtl, {"dd"}, "dd", "tb.dut", {}) == [reason]


def test_a_second_rtl_instance_beside_the_dut_is_a_foreign_driver():
    """The testbench's own copy of the DUT's submodule drives the variable the DUT's
    output drives: Verilator merges the two drivers (55.73 -> 97.70 %)."""
    body = "  hard u_f(.clk(clk), .a(8'hA5), .s(z));\n"
    assert stimulus_reasons(body) == [
        "tb.sv:4: the testbench drives `tb.z`, a variable the DUT drives (an output port "
        "of `tb.u_f`): it writes into the DUT"]


def test_a_testbench_past_the_elaborations_limits_is_not_checked_so_rejected():
    """slang elaborates 128 instances deep; Verilator compiles a chain of 130 distinct
    modules, whose bottom wrote the DUT's variable through ``ref`` ports."""
    chain = "".join(f"module m{i}(ref logic [3:0] p);\n  m{i + 1} n(.p(p));\nendmodule\n"
                    for i in range(130)) + "module m130(ref logic [3:0] p);\nendmodule\n"
    tb = DD_HEAD + "  m0 c(.p(q));\nendmodule\n" + chain
    reasons = check(tb, "tb.sv", DRIVEN, {"dd"}, "dd", "tb.dut", {})
    assert reasons and all(r.endswith(
        "module instantiation exceeded maximum depth of 128; the design past it is not "
        "elaborated, so what the testbench writes there cannot be checked") for r in reasons)


def test_an_idle_clocking_output_and_an_unknown_initial_value_are_no_writes():
    """A reusable interface's slave-side clocking block declares ``output`` of what the
    DUT drives but drives nothing through it (slang records a driver at the
    declaration); ``= 'x`` is the value the run starts the variable at."""
    tb = DD_HEAD.replace("logic [3:0] q;", "logic [3:0] q = 'x;") + (
        "  clocking idle_cb @(posedge clk); output q; endclocking\n"
        "  clocking cb @(posedge clk); input q; endclocking\n"
        "  initial begin @(cb); $display(cb.q); end\nendmodule\n")
    assert check(tb, "tb.sv", DRIVEN, {"dd"}, "dd", "tb.dut", {}) == []


# -- a seventh red team (2026-12-07): nets a DUT output drives, and forces through ports

NETOUT = """module no(input logic clk, output wire [31:0] accw, output logic hit);
  logic [31:0] acc_q = 0;
  always_ff @(posedge clk) acc_q <= acc_q + 1;
  assign accw = acc_q;
  assign hit = accw == 32'hDEADBEEF;
endmodule
module bi(inout wire [3:0] bus, output logic seen);
  assign seen = bus == 4'hA;
endmodule
"""
NO_HEAD = ("module tb;\n  logic clk = 0, hit; wire [31:0] accw; logic [31:0] drv = 0;\n"
           "  no dut(.clk(clk), .accw(accw), .hit(hit));\n")


@pytest.mark.parametrize("body, before, reason", [
    # Verilator merges the net with the DUT's and the testbench's assign wins, whatever
    # its strength (44.14 -> 74.66 %)
    ("  assign (weak0, weak1) accw = drv;\n", "",
     "tb.sv:4: the testbench drives `tb.accw`, a net the DUT drives (a continuous "
     "assignment): it writes into the DUT"),
    # a force through a testbench module's port on the net (44.14 -> 68.58 %)
    ("  helper h(.w(accw));\n",
     "module helper(output wire [31:0] w);\n  initial force w = 32'hDEADBEEF;\nendmodule\n",
     "tb.sv:2: `force` of `w` writes into the DUT (a DUT port drives it)"),
])
def test_a_net_a_dut_output_drives_takes_no_testbench_driver(body, before, reason):
    tb = before + NO_HEAD + body + "endmodule\n"
    assert check(tb, "tb.sv", NETOUT, {"no", "bi"}, "no", "tb.dut", {}) == [reason]


def test_the_testbench_side_of_an_inout_bus_stays_a_driver_of_its_own():
    """A bidirectional bus: the DUT drives it through an ``inout``, the testbench drives
    it too (the bus resolves both), with a pull-up."""
    tb = ("module tb;\n  wire [3:0] bus; logic seen; logic [3:0] d = 4'hA;\n"
          "  bi dut(.bus(bus), .seen(seen));\n  assign bus = d;\n  pullup (bus[0]);\n"
          "endmodule\n")
    assert check(tb, "tb.sv", NETOUT, {"no", "bi"}, "bi", "tb.dut", {}) == []


# -- an eighth red team (2026-12-07): alias, net declaration assignments, virtual handles


@pytest.mark.parametrize("body, reason", [
    # one net under two names: the testbench's driver of the alias won (44.14 -> 74.66 %)
    ("  wire [31:0] busw;\n  alias busw = accw;\n  assign busw = drv;\n",
     "tb.sv:5: the `alias` of `accw` writes into the DUT (a DUT port drives it)"),
])
def test_an_alias_of_a_net_a_dut_output_drives_is_a_write(body, reason):
    tb = NO_HEAD + body + "endmodule\n"
    assert check(tb, "tb.sv", NETOUT, {"no", "bi"}, "no", "tb.dut", {}) == [reason]


def test_a_net_declaration_assignment_is_a_driver_not_an_initial_value():
    """IEEE 1800 6.7.1: ``wire [31:0] accw = 0;`` drives the net for ever (it held a DUT
    output at zero: 81.11 -> 92.22 %); a variable's ``= 0`` is its start value."""
    tb = NO_HEAD.replace("wire [31:0] accw;", "wire [31:0] accw = 0;") + "endmodule\n"
    assert check(tb, "tb.sv", NETOUT, {"no", "bi"}, "no", "tb.dut", {}) == [
        "tb.sv:2: the testbench drives `tb.accw`, a net the DUT drives (its declaration's "
        "initial value): it writes into the DUT"]


def test_a_pullup_on_an_open_drain_output_is_a_board_model():
    rtl = ("module od(input logic irq, output wire irq_n);\n"
           "  assign irq_n = irq ? 1'b0 : 1'bz;\nendmodule\n")
    tb = ("module tb;\n  logic irq = 0; wire irq_n;\n  od dut(.irq(irq), .irq_n(irq_n));\n"
          "  pullup (irq_n);\n  initial begin #1 irq = 1; #1 irq = 0; end\nendmodule\n")
    assert check(tb, "tb.sv", rtl, {"od"}, "od", "tb.dut", {}) == []


def test_a_write_through_a_virtual_interface_is_judged_by_its_type():
    """A handle to the testbench's own interface instance, which the DUT drives through
    its modport: ``vif.rdata = ...`` (or ``++``, a ``$sscanf`` output, a nested
    interface's member) landed in the DUT's register (78.33 -> 100 %). The handle's
    target is not known before the run, so a write of any form to a member the DUT
    drives in an interface is refused; one to a member the DUT reads is stimulus."""
    body = ("  virtual bus_if vif;\n  initial begin vif = bi; vif.wdata = 32'h1; "
            "vif.rdata = 32'hCAFEF00D; vif.rdata++; void'($sscanf(\"9\", \"%h\", vif.rdata));"
            " end\n")
    assert driven_reasons(body) == [
        "tb.sv:6: the assignment to `vif.rdata` writes into the DUT",
        "tb.sv:6: the increment of `vif.rdata` writes into the DUT",
        "tb.sv:6: the $sscanf output `vif.rdata` writes into the DUT"]
    honest = body.split(" vif.rdata = ")[0] + " end\n"
    assert driven_reasons(honest) == []


# -- a twelfth red team (2026-12-07): writes slang lists no driver for, parameter values
# -- the two tools evaluate differently, and two false positives

UNIT_HEAD = DD_HEAD.replace("logic [3:0] q;", "").replace(".q(q)", ".q(qu)")


@pytest.mark.parametrize("before, body, reason", [
    # $random's seed is written through a reference (65.17 -> 99.64 % on an accumulator)
    ("logic [3:0] qu;\n", "  int s;\n  initial s = $random(qu);\n",
     "tb.sv:7: the $random output `qu` writes into the DUT (a variable of the DUT, or one "
     "a DUT output drives)"),
    # an assignment in a cover's action block
    ("logic [3:0] qu;\n", "  c1: cover property (@(posedge clk) 1'b1) qu = 4'd9;\n",
     "tb.sv:6: the assignment to `qu` writes into the DUT (a variable of the DUT, or one a "
     "DUT output drives)"),
    # the force of an implicit net a DUT output drives (48.33 -> 86.67 % on a checker)
    ("", "  initial force qu = 4'd9;\n",
     "tb.sv:5: the `force` of `tb.qu` writes into the DUT (a variable of the DUT, or one a "
     "DUT output drives)"),
    # the force of the DUT's own package variable
    ("logic [3:0] qu;\n", "  initial force cfg_pkg::key = 32'hDEADBEEF;\n",
     "tb.sv:6: the `force` of `cfg_pkg::key` writes into the DUT (a variable of the DUT, or "
     "one a DUT output drives)"),
])
def test_writes_the_driver_analysis_does_not_list_are_found_on_the_ast(before, body, reason):
    """slang lists no driver for a force, an action block's assignment or a system
    task's output argument; the elaborated AST has each, whatever the name's form."""
    assert check(before + UNIT_HEAD + body + "endmodule\n", "tb.sv", DRIVEN, {"dd"}, "dd",
                 "tb.dut", {}) == [reason]


PM = "module pm #(parameter int P = 0) (input logic clk, output logic q);\n" \
     "  if (P == 0) begin : g0 assign q = clk; end else begin : g1 assign q = 1'b0; end\n" \
     "endmodule\n"


@pytest.mark.parametrize("value, what", [
    ("f()", "a function call"), ("'x", "an x or z value"), ("4'b00x1", "an x or z value"),
    ("W", "a division"), ("V[1]", "a select"), ("$clog2(1)", None), ("0", None),
    ("8 / D", None),  # a division by a nonzero constant (CLK_FREQ / BAUD_RATE) is plain
])
def test_a_dut_parameter_value_the_tools_may_evaluate_differently_is_refused(value, what):
    """pyslang read ``f()`` returning ``c ? 2 : 1`` on an unset ``c`` as 0 (the task's
    value), Verilator as 1 (84.49 -> 97.37 %): only a plain value is compared."""
    tb = ("module tb;\n  function automatic int f(); logic c; return c ? 2 : 1; endfunction\n"
          "  localparam int W = 1 / 0;\n  localparam logic [1:0] V = 2'b00;\n"
          "  localparam int D = 16;\n"
          f"  logic clk = 0; logic q;\n  pm #(.P({value})) dut(.clk(clk), .q(q));\n"
          "endmodule\n")
    reasons = check(tb, "tb.sv", PM, {"pm"}, "pm", "tb.dut", {})
    assert reasons == ([] if what is None else [
        f"tb.sv:7: the value of the parameter `P` of `pm` is computed with {what}, which "
        "Verilator and the check may evaluate differently: give it as a plain constant"])
    wrapped = tb.replace(f"pm #(.P({value})) dut(.clk(clk), .q(q));",
                         f"wrap #(.P({value})) w(.clk(clk));").replace(
        "module tb;", "module wrap #(parameter int P = 0) (input logic clk);\n  logic q;\n"
                      "  pm #(.P(P)) dut(.clk(clk), .q(q));\nendmodule\nmodule tb;")
    assert bool(check(wrapped, "tb.sv", PM, {"pm"}, "pm", "tb.w.dut", {})) == (what is not None)


def test_a_class_field_named_like_a_dut_driven_interface_member_is_no_write():
    """``t.rdata = vif.rdata`` copies into a transaction: the name reaches no interface
    (a false positive of the virtual-interface rule); ``vif.rdata = ...`` still writes."""
    body = ("  class txn; logic [31:0] rdata; endclass\n  virtual bus_if vif;\n"
            "  initial begin txn t = new; vif = bi; t.rdata = vif.rdata; end\n")
    assert driven_reasons(body) == []
    assert driven_reasons(body.replace("t.rdata = vif.rdata", "vif.rdata = 1")) != []


def test_a_bound_unit_writes_its_own_struct_not_the_dut():
    """``stats.n++`` in a module bound into the DUT names its own variable (a false
    positive of the upward-name rule); an upward name into the DUT is still refused."""
    bound = ("module st(input logic clk);\n  struct { int n; } stats;\n"
             "  always @(posedge clk) stats.n++;\nendmodule\nbind dd st u_st(.clk(clk));\n")
    assert driven_reasons("", bound) == []
    assert driven_reasons("", bound.replace("stats.n++", "q.n++")) != []


# -- a thirteenth red team (2026-12-07): more write forms, 4-state constants, two false
# -- positives

@pytest.mark.parametrize("body", [
    "  initial begin #(q-- & 1); end\n",  # in a timing control: no driver listed
    "  c1: cover property (@(posedge clk) 1'b1) q--;\n",
    "  c1: cover property (@(posedge clk) 1'b1) {>>{q}} = 4'd9;\n",
    "  clocking cb @(posedge clk); output q; endclocking\n"
    "  c1: cover property (@(posedge clk) 1'b1) cb.q <= 4'd9;\n",
])
def test_every_write_form_outside_a_plain_statement_is_judged_by_its_name(body):
    """Increments, streaming targets and clocking drives in action blocks and timing
    controls (65.17 -> 85.72-99.64 %): slang lists no driver there."""
    assert driven_reasons(body)


def test_an_initial_value_computed_by_a_function_is_a_write():
    """slang's 4-state value of an x-merging function had no known 1 ("unset"), Verilator's
    was 32'hC000_0000 (65.17 -> 80.65 %): only a literal start value is no write."""
    tb = DD_HEAD.replace("logic [3:0] q;", "function automatic logic [3:0] f(); logic c; "
                         "return c ? 4'd9 : 4'd8; endfunction\n  logic [3:0] q = f();")
    assert check(tb + "endmodule\n", "tb.sv", DRIVEN, {"dd"}, "dd", "tb.dut", {})


def test_a_class_driver_of_an_rtl_interface_input_is_no_write():
    """``vif.wdata = ...`` from a class method drives the DUT's input member: the
    interface copy the handle names is no RTL package variable (a false positive)."""
    body = ("  class drv; virtual bus_if vif; function new(virtual bus_if v); vif = v; "
            "endfunction\n    task run(); vif.wdata = 32'h1; endtask endclass\n"
            "  initial begin drv d = new(bi); d.run(); end\n")
    assert driven_reasons(body) == []


def test_a_function_local_name_does_not_shadow_an_upward_one():
    """Only a bound unit's own module-level names shadow the DUT's (a function-local
    ``u_core`` had let ``u_core.st`` through, 45.57 -> 77.50 %)."""
    bound = ("module st(input logic clk);\n  function automatic void f(); logic [3:0] q; "
             "endfunction\n  always @(posedge clk) q.n++;\nendmodule\n"
             "bind dd st u_st(.clk(clk));\n")
    assert driven_reasons("", bound) != []


def test_a_virtual_interface_handle_through_a_type_name_is_still_one():
    """A class's ``#(type VIF)`` parameter or ``type(vif)`` hides the ``virtual`` keyword
    (78.33 -> 100 %): every name then counts; a DUT-driven member anywhere in the name
    (``vif.st.q``) too."""
    generic = ("  class drv #(type VIF = int); VIF v; task run(); v.rdata = 1; endtask "
               "endclass\n  initial begin drv #(virtual bus_if) d = new; d.v = bi; d.run(); "
               "end\n")
    assert driven_reasons(generic) != []
    typed = ("  virtual bus_if vif;\n  var type(vif) mon;\n"
             "  initial begin vif = bi; mon = vif; mon.rdata = 1; end\n")
    assert driven_reasons(typed) != []


def test_a_unit_scope_name_the_rtl_uses_is_refused():
    """Verilator binds the DUT's ``MODE`` (from ``import cfg_pkg::*;`` at file level) to
    the testbench's compilation-unit ``localparam MODE``; pyslang to the package's
    (84.49 -> 97.37 %)."""
    rtl = ("package cfg_pkg; localparam int MODE = 0; endpackage\nimport cfg_pkg::*;\n"
           + PM.replace("parameter int P = 0", "parameter int P = MODE"))
    tb = "localparam int MODE = 1;\nmodule tb;\n  logic clk = 0; logic q;\n" \
         "  pm dut(.clk(clk), .q(q));\nendmodule\n"
    assert check(tb, "tb.sv", rtl, {"pm"}, "pm", "tb.dut", {}) == [
        "tb.sv:1: the testbench declares `MODE` outside any module, a name the RTL uses: "
        "the DUT's reference could bind to the testbench's declaration"]
    assert check(tb.replace("MODE", "TB_MODE"), "tb.sv", rtl, {"pm"}, "pm", "tb.dut",
                 {}) == []


def test_a_testbench_generate_condition_the_tools_may_evaluate_differently_is_refused():
    tb = ("module tb;\n  function automatic int f(); logic c; return c ? 1 : 0; endfunction\n"
          "  localparam int S = f();\n  logic clk = 0; logic q;\n  pm dut(.clk(clk), .q(q));\n"
          "  if (S == 1) begin : g end\nendmodule\n")
    assert check(tb, "tb.sv", PM, {"pm"}, "pm", "tb.dut", {}) == [
        "tb.sv:6: the testbench's generate condition is computed with a function call, "
        "which Verilator and the check may evaluate differently (a branch one tool drops, "
        "the other builds)"]


def test_an_rtl_interface_with_other_parameters_is_a_parameter_change():
    """The DUT reads its interface port's parameters (``filt_if #(.BYPASS(1))``: 85.42 ->
    100 %); the defaults, or a value the task sets by name, are fine."""
    rtl = ("interface pif #(parameter int P = 0) (input logic clk); logic q; endinterface\n"
           "module pd(pif b); if (b.P == 0) begin : g0 assign b.q = b.clk; end "
           "else begin : g1 assign b.q = 1'b0; end endmodule\n")
    tb = "module tb;\n  logic clk = 0;\n  pif #(.P(1)) bus(clk);\n  pd dut(.b(bus));\nendmodule\n"
    assert check(tb, "tb.sv", rtl, {"pd"}, "pd", "tb.dut", {}) == [
        "tb.sv: `tb.bus`, an instance of the RTL's interface `pif`, has parameters other "
        "than its defaults: P = 1 (its default: 0) (the DUT reads them through its port)"]
    assert check(tb.replace("#(.P(1)) ", ""), "tb.sv", rtl, {"pd"}, "pd", "tb.dut", {}) == []


# -- a fourteenth red team (2026-12-07): honest testbenches first

@pytest.mark.parametrize("before, body", [
    # a scoreboard's own `count` beside the module's DUT-driven `q` of the same name
    ("", "  class sb; int q; function void hit(); q++; endfunction endclass\n"),
    # a task that only waits on the DUT-driven signal it takes by reference
    ("", "  task automatic wait_hit(ref logic h); @(posedge h); endtask\n"
         "  initial wait_hit(hit);\n"),
    # a start value written as a replication of zeros
    ("", "  logic [3:0] z = {4{1'b0}};\n"),
    # a file-scope name an RTL module declares for itself
    ("typedef logic [3:0] q_t;\nlocalparam int key = 3;\n", ""),
    # a typedef of a virtual interface: its users are handles, a transaction's field not
    ("", "  typedef virtual bus_if vif_t;\n  class txn; logic [31:0] rdata; endclass\n"
         "  vif_t v;\n  initial begin txn t = new; v = bi; t.rdata = v.rdata; end\n"),
])
def test_honest_testbenches_a_fourteenth_red_team_wrote_pass(before, body):
    assert driven_reasons(body, before) == []


def test_an_in_place_array_method_on_a_dut_driven_array_is_a_write():
    rtl = "module ta(input logic clk, output logic [3:0] t [4]);\n" \
          "  always_ff @(posedge clk) t[0] <= t[0] + 4'd1;\nendmodule\n"
    tb = "module tb;\n  logic clk = 0; logic [3:0] t [4];\n  ta dut(.clk(clk), .t(t));\n" \
         "  initial t.reverse();\nendmodule\n"
    assert check(tb, "tb.sv", rtl, {"ta"}, "ta", "tb.dut", {}) == [
        "tb.sv:4: the in-place `reverse` of `t` writes into the DUT (a DUT port "
        "drives it)"]


def test_a_testbench_interface_named_like_a_copy_of_an_rtl_module_is_refused(evaluator):
    """Verilator names a point's module after interfaces too: ``hdut__mon`` owned the
    DUT's name by its prefix and its bound points counted (71.60 -> 86.24 %, a
    nineteenth red team)."""
    tb = HEAD + "  bind hdut hdut__mon mon(.clk(clk));\n" + TAIL.replace(
        "endmodule\n", "endmodule\ninterface hdut__mon(input logic clk);\nendinterface\n", 1)
    obs = evaluator.evaluate(TASK, tb)
    assert obs.status is Status.REJECTED
    assert "the testbench declares `hdut__mon`, a name of the RTL's" in obs.log


@pytest.mark.parametrize("net", ["supply1", "tri0", "trireg"])
def test_a_self_driving_net_on_a_dut_output_is_a_second_driver(net):
    """slang lists no driver for a supply or pulled net; Verilator merges it with the DUT's
    output (a nineteenth red team); a supply net of its own (``vdd``) is fine."""
    rtl = ("module od(input logic clk, output wire u);\n  logic r = 0;\n"
           "  always_ff @(posedge clk) r <= ~r;\n  assign u = r;\nendmodule\n")
    tb = (f"module tb;\n  logic clk = 0;\n  {net} u;\n  od dut(.clk(clk), .u(u));\n"
          "endmodule\n")
    assert check(tb, "tb.sv", rtl, {"od"}, "od", "tb.dut", {}) == [
        f"tb.sv:3: the `{net}` net `u` writes into the DUT (a DUT port drives it)"]
    own = tb.replace(f"  {net} u;\n", f"  wire u;\n  {net} vdd;\n")
    assert check(own, "tb.sv", rtl, {"od"}, "od", "tb.dut", {}) == []


# -- the DUT instance's own connections (a twenty-first red team) ------------------------

LOCK = """package cfg_pkg; logic tm_en; endpackage
module fsm(input logic clk, input logic tm, output logic [1:0] st);
  always_ff @(posedge clk) st <= tm ? st + 2'd1 : 2'd0;
endmodule
module lock(input logic clk, input logic [7:0] d, output logic [3:0] echo,
            output logic open);
  logic [1:0] st;
  assign echo = d[3:0];
  fsm u_fsm(.clk(clk), .tm(), .st(st));
  assign open = cfg_pkg::tm_en ? st[1] : st[0];
endmodule
"""


@pytest.mark.parametrize("connection, reason", [
    # on the elaboration, whatever the name's form
    (".echo(dut.u_fsm.tm)", "tb.sv:3: the testbench drives `tb.dut.u_fsm.tm`, a net of the "
     "DUT (an output port of `tb.dut`): it writes into the DUT"),
    (".echo({dut.u_fsm.tm, e[2:0]})", "tb.sv:3: the testbench drives `tb.dut.u_fsm.tm`, a "
     "net of the DUT (an output port of `tb.dut`): it writes into the DUT"),
    (".echo($root.tb.dut.u_fsm.tm)", "tb.sv:3: the testbench drives `tb.dut.u_fsm.tm`, a "
     "net of the DUT (an output port of `tb.dut`): it writes into the DUT"),
    # an RTL package's variable the DUT reads
    (".echo(cfg_pkg::tm_en)", "tb.sv:3: the testbench drives `cfg_pkg::tm_en`, a variable "
     "of the DUT (an output port of `tb.dut`): it writes into the DUT"),
])
def test_the_dut_s_own_output_onto_a_name_in_the_dut_is_a_write(connection, reason):
    """``echo`` mirrors an input; wired to the submodule's unconnected test-mode input it
    walked the FSM (76.09 -> 89.56 %). A plain testbench variable stays the DUT's drive."""
    head = "module tb;\n  logic clk = 0; logic [7:0] d = 0; logic [3:0] e; logic o;\n"
    tail = "  always #5 clk = ~clk;\n  initial begin #100 $finish; end\nendmodule\n"
    tb = head + f"  lock dut(.clk(clk), .d(d), {connection}, .open(o));\n" + tail
    assert check(tb, "tb.sv", LOCK, {"lock", "fsm"}, "lock", "tb.dut", {}) == [reason]
    honest = tb.replace(connection, ".echo(e)")
    assert check(honest, "tb.sv", LOCK, {"lock", "fsm"}, "lock", "tb.dut", {}) == []


DUAL = """module chan(input logic clk, input logic [7:0] a, output logic [1:0] st);
  always_ff @(posedge clk) st <= a == 8'hA5 ? 2'd1 : a[0] ? 2'd3 : 2'd0;
endmodule
module dual(input logic clk, input logic [7:0] a, output logic [3:0] z);
  chan u0(.clk(clk), .a(a), .st(z[1:0]));
  chan u1(.clk(clk), .a({a[7:4], 4'h0}), .st(z[3:2]));
endmodule
"""
DUAL_TASK = Task(id="probe/dual", rtl_files=[SourceFile(name="dual.sv", content=DUAL)],
                 dut_module_name="dual", dut_instance_name="dut")


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_a_testbench_past_the_per_instance_bounds_is_refused(evaluator):
    """10,001 empty testbench instances passed the plan's elaboration bound, so the
    DUT's two ``chan``s shared one counter set (their union counted: 84.65 -> 97.44 %,
    a twenty-first red team). The DUT alone is within it: refused before compiling."""
    from llm4cov.sim.analysis.instances import MAX_INSTANCE_PATHS

    task = DUAL_TASK
    flood = (f"  for (genvar i = 0; i < {MAX_INSTANCE_PATHS + 1}; i++) begin : g nop n(); "
             "end\n")
    tb = ("module nop; endmodule\nmodule tb;\n  logic clk = 0; logic [7:0] a = 0; "
          "logic [3:0] z;\n  dual dut(.clk(clk), .a(a), .z(z));\n" + flood +
          "  always #5 clk = ~clk;\n  initial begin repeat (8) @(negedge clk) a++; $finish; "
          "end\nendmodule\n")
    obs = evaluator.evaluate(task, tb)
    assert obs.status is Status.REJECTED
    assert obs.log.startswith("Rejected before compiling: with tb.sv the DUT's repeated "
                              "modules (chan) cannot be counted per instance, which the DUT "
                              "alone allows (per-instance coverage skipped (more than")
    honest = evaluator.evaluate(task, tb.replace(flood, ""))
    assert honest.status is Status.SUCCESS
    assert sorted(honest.coverage.per_instance) == ["tb.dut", "tb.dut.u0", "tb.dut.u1"]


@pytest.mark.parametrize("task, reason", [
    ("task automatic poke(ref logic [2:0] r = tb.dut.u_hard.st); r = 1; endtask",
     "the ref argument `r` defaulting to `tb.dut.u_hard.st` writes into the DUT"),
    # a formal without a direction takes the one before it
    ("task automatic poke(output logic x, logic [2:0] r = dut.u_hard.st); r = 1; endtask",
     "the output argument `r` defaulting to `dut.u_hard.st` writes into the DUT"),
    ("task automatic poke(inout logic r = z); r = 1; endtask",
     "the inout argument `r` defaulting to `z` writes into the DUT (a DUT port "
     "drives it)"),
])
def test_a_writing_formal_s_default_is_an_actual(task, reason):
    """IEEE 1800 13.5.3: the default is the actual of a call that leaves the argument out
    (the pinned Verilator passes a copy; the rule follows the standard, a twenty-first
    red team). An input's default, or a testbench variable's, is no write."""
    assert stimulus_reasons(f"  {task}\n  initial poke();\n") == [f"tb.sv:4: {reason}"]
    assert stimulus_reasons("  task automatic poke(input logic [7:0] r = a, ref logic [7:0] "
                            "s = q); s = r; endtask\n  initial poke();\n") == []


@pytest.mark.requires_verilator
def test_a_rewrite_the_testbench_breaks_is_refused_where_the_dut_alone_has_copies(
        evaluator, monkeypatch):
    """A split instance statement whose string held a line break would have moved a
    line, so the per-instance rewrite was dropped and the DUT's ``chan``s merged (64.63
    -> 86.25 %, a twenty-second red team; such a string is now also an unsure value):
    any rewrite that would move a line of the testbench is refused like a bound
    passed, where the DUT alone gets copies (here by a stand-in for the rewrite)."""
    import llm4cov.sim.evaluator as evaluator_mod
    from llm4cov.sim.analysis.instances import PerInstancePlan

    real = evaluator_mod.plan_per_instance

    def moving(rtl_files, tb, *args, **kwargs):
        if tb.name != "tb.sv":  # the DUT alone's plan
            return real(rtl_files, tb, *args, **kwargs)
        return PerInstancePlan(sources={"tb.sv": tb.content + "\n"}, copies={"chan": 2})

    monkeypatch.setattr(evaluator_mod, "plan_per_instance", moving)
    task = DUAL_TASK
    tb = ("module tb;\n  logic clk = 0; logic [7:0] a = 0; logic [3:0] z;\n"
          "  dual dut(.clk(clk), .a(a), .z(z));\n  always #5 clk = ~clk;\n"
          "  initial begin repeat (8) @(negedge clk) a++; $finish; end\nendmodule\n")
    obs = evaluator.evaluate(task, tb)
    assert obs.status is Status.REJECTED
    assert "(the per-instance rewrite would move lines of tb.sv)" in obs.log
    assert "(chan)" in obs.log


def test_a_pull_on_a_net_of_the_dut_is_a_write():
    """A ``pullup`` gives a net its value where every other driver is ``z``: on the
    DUT's own undriven net (a submodule input the RTL leaves unconnected) that is a
    write (a twenty-second red team; the pinned Verilator refuses the hierarchical form
    as unsupported). On a testbench net it stays a board model."""
    head = "module tb;\n  logic clk = 0; logic [7:0] d = 0; logic [3:0] e; logic o; wire w;\n"
    tail = "  always #5 clk = ~clk;\n  initial begin #100 $finish; end\nendmodule\n"
    inst = "  lock dut(.clk(clk), .d(d), .echo(e), .open(o));\n"
    tb = head + inst + "  pullup (dut.u_fsm.tm);\n" + tail
    assert check(tb, "tb.sv", LOCK, {"lock", "fsm"}, "lock", "tb.dut", {}) == [
        "tb.sv:4: the testbench drives `tb.dut.u_fsm.tm`, a net of the DUT (a continuous "
        "assignment): it writes into the DUT"]
    honest = tb.replace("pullup (dut.u_fsm.tm)", "pullup (w)")
    assert check(honest, "tb.sv", LOCK, {"lock", "fsm"}, "lock", "tb.dut", {}) == []


@pytest.mark.parametrize("check_text, name", [
    # delayed_data (9th argument): the pinned Verilator assigns it continuously (a
    # twenty-fifth red team: a DUT output's net, 40.27 -> 45.06 %)
    ("$setuphold(posedge clk, a[0], 0, 0, , , , , z)", "setuphold"),
    ("$setuphold(posedge clk, a[0], 0, 0, , , , z)", "setuphold"),  # delayed_reference
    ("$recrem(posedge clk, a[0], 0, 0, z)", "recrem"),  # a notifier
    ("$width(posedge clk, 1, 0, z)", "width"),
])
def test_a_timing_check_s_written_argument_is_a_write(check_text, name):
    """IEEE 1800 31.3.1, 31.9: the simulator writes a timing check's notifier and delayed
    signals; on a net or variable a DUT output drives, that is a write into the DUT. On
    the testbench's own names it is not."""
    assert stimulus_reasons(f"  specify {check_text}; endspecify\n") == [
        f"tb.sv:4: the `${name}` timing check's output `tb.z` writes into the DUT (a "
        "variable of the DUT, or one a DUT output drives)"]
    own = check_text.replace(" z)", " q[0])")
    assert stimulus_reasons(f"  specify {own}; endspecify\n") == []


@pytest.mark.parametrize("body, reason", [
    # an automatic task's ref formal: slang lists no driver of it (70.42 -> 82.50 %)
    ("  task automatic set(ref logic x); x = 1'b1; endtask\n  initial set(hit);\n",
     "tb.sv:6: the testbench drives `tb.hit`, a variable the DUT drives"),
    # an inout formal, on an RTL package variable
    ("  task automatic setk(inout logic [31:0] x); x = 32'hA5; endtask\n"
     "  initial setk(cfg_pkg::key);\n", "tb.sv:6: the testbench drives `cfg_pkg::key`"),
    # passed on to a built-in that writes its ref argument (mailbox `peek`)
    ("  mailbox #(logic) mb = new();\n  task automatic pull(ref logic x); mb.peek(x); endtask\n"
     "  initial pull(hit);\n", "tb.sv:7: the testbench drives `tb.hit`"),
    # a built-in's ref argument directly, and a chain of two tasks
    ("  mailbox #(logic [31:0]) mb = new();\n  initial mb.get(cfg_pkg::key);\n",
     "tb.sv:6: the testbench drives `cfg_pkg::key`"),
    ("  task automatic a(ref logic x); x++; endtask\n  task automatic b(ref logic y); a(y); "
     "endtask\n  initial b(hit);\n", "tb.sv:7: the testbench drives `tb.hit`"),
    # an associative array's traversal method writes its index (a thirty-third red team:
    # 63.94 -> 71.63 %)
    ("  task automatic set(ref logic x); int aa[logic]; aa[1'b1] = 1; void'(aa.first(x));"
     " endtask\n  initial set(hit);\n", "tb.sv:6: the testbench drives `tb.hit`"),
    # a virtual method whose override writes the formal the base only reads (same team)
    ("  class W; virtual function void f(ref logic x); $display(x); endfunction endclass\n"
     "  class P extends W; function void f(ref logic x); x = 1'b1; endfunction endclass\n"
     "  initial begin P p = new; W w = p; w.f(hit); end\n",
     "tb.sv:7: the testbench drives `tb.hit`"),
])
def test_a_ref_or_inout_formal_the_body_writes_is_a_write(body, reason):
    """IEEE 1800 13.5.2: a ``ref`` formal is the actual itself. Whether the body writes
    it is read on the AST, to a fixed point through calls (a twenty-eighth red team:
    slang lists no driver of an automatic task's formal, so the rule let every such
    write pass); a built-in's ``ref`` argument (a mailbox's ``get``/``peek``, an
    associative array's ``first``) is written, and a virtual method's formal when any
    override writes it. A formal only waited on, or ``const ref``, is no write."""
    reasons = driven_reasons(body)
    assert len(reasons) == 1 and reasons[0].startswith(reason), reasons
    honest = ("  task automatic wait_high(ref logic s); wait (s); endtask\n"
              "  task automatic peek_at(const ref logic s); $display(s); endtask\n"
              "  initial begin wait_high(hit); peek_at(hit); end\n")
    assert driven_reasons(honest) == []


def test_a_covergroup_s_own_options_in_a_bound_checker_are_no_write():
    """IEEE 1800 19.7: ``option``/``type_option`` are the covergroup's own members; in a
    module bound into the DUT they had read as upward names (a thirtieth red team's
    false positive). Any other assignment there is still judged."""
    chk = ("module chk(input logic clk, input logic s);\n"
           "  covergroup cg @(posedge clk);\n    option.per_instance = 1;\n"
           "    type_option.merge_instances = 1;\n    coverpoint s;\n  endgroup\n"
           "  cg cg_i = new;\nendmodule\n")
    bind = "  bind hdut chk u_chk(.clk(clk), .s(z));\n"
    assert stimulus_reasons(bind, after=chk) == []
    forged = chk.replace("    coverpoint s;\n", "    coverpoint s;\n  endgroup\n"
                         "  initial u_hard.st = 3'd1;\n  covergroup cg2;\n")
    assert stimulus_reasons(bind, after=forged) != []


@pytest.mark.parametrize("body", [
    # a ref formal written in a production's code block
    "  task automatic set(ref logic x); randsequence(m) m : { x = 1'b1; }; endsequence "
    "endtask\n  initial set(hit);\n",
    # a DUT-driven variable passed to a production's ref argument
    "  initial randsequence(m) m : a(hit); void a(ref logic v) : { v = 1'b1; }; "
    "endsequence\n",
])
def test_a_randsequence_the_check_cannot_follow_is_refused(body):
    """IEEE 1800 18.17: the elaborated AST the checks walk leaves a ``randsequence``'s
    productions out, so a ``ref`` written there was no write (a thirty-fourth red team:
    63.94 -> 71.63 %). One with code blocks or production arguments is refused; one of
    plain production items (task calls, judged like any call) is not."""
    assert driven_reasons(body) == [
        "tb.sv:5: a `randsequence` with a code block or a production argument is not "
        "followed by the stimulus check; write the choices with `randcase` and tasks"]
    plain = ("  task automatic tick(); #1; endtask\n"
             "  initial randsequence(m) m : tick tick; tick : tick; endsequence\n")
    assert driven_reasons(plain) == []
