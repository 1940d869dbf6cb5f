"""A DUT parameter value pyslang and Verilator may evaluate differently (a user function,
an ``x``) is settled by Verilator's own elaboration (``--json-only``,
``sim/backends/verilator/elaborated.py``): the task's value passes, another is refused
with Verilator's values. Such a value elsewhere (a wrapper's, a generate condition) stands
where Verilator builds the testbench's text as pyslang does (``sim/safety/shape.py``).
``pm``'s ``P`` picks its easy generate branch when nonzero."""

from __future__ import annotations

import pytest

from llm4cov.sim.analysis.structure import plan_testbench
from llm4cov.sim.backends import SourcesRefused
from llm4cov.sim.safety.shape import ElaboratedShape, _same, disagreements
from llm4cov.sim.safety.stimulus_only import judge
from llm4cov.tasks.model import SourceFile, Task

PM = """module pm #(parameter int P = 0, parameter int W = 4) (input logic clk, output logic q);
  localparam int L = P * 2;
  if (P == 0) begin : g0 assign q = clk; end else begin : g1 assign q = 1'b0; end
endmodule
"""
TASK = Task(id="probe/pm", rtl_files=[SourceFile(name="pm.sv", content=PM)],
            dut_module_name="pm", dut_instance_name="dut")
FUNCTIONS = """  function automatic integer clog2(input integer v);
    integer r; v = v - 1; for (r = 0; v > 0; r = r + 1) v = v >> 1; return r;
  endfunction
  function automatic int f(); logic c; return c ? 2 : 1; endfunction
"""


def tb(values: str, wrapper: bool = False) -> str:
    inst = f"pm #({values}) dut(.clk(clk), .q(q));"
    if wrapper:
        return (f"module wrap(input logic clk);\n  logic q;\n  {inst}\nendmodule\n"
                f"module tb;\n{FUNCTIONS}  logic clk = 0;\n  wrap w(.clk(clk));\nendmodule\n")
    return f"module tb;\n{FUNCTIONS}  logic clk = 0; logic q;\n  {inst}\nendmodule\n"


def simulator_says(evaluator, text: str, dut: str = "tb.dut") -> list[str]:
    src = SourceFile(name="tb.sv", content=text)
    inspection = evaluator.inspect(TASK, src)
    assert inspection.reasons == []
    plan = plan_testbench(TASK.rtl_files, src, "pm", "dut", view=inspection.view)
    assert plan.dut_hier == dut
    return evaluator._dut_writes(TASK, src, plan, inspection.view)


def test_pyslang_alone_leaves_a_user_function_to_the_simulator():
    found = judge(tb(".W(clog2(16))"), "tb.sv", PM, {"pm"}, "pm", "tb.dut", {})
    assert found.reasons == []
    assert found.dut_values == [
        "tb.sv:7: the value of the parameter `W` of `pm` is computed with a function call, "
        "which Verilator and the check may evaluate differently: give it as a plain "
        "constant"]


@pytest.mark.parametrize("values", [".W(clog2(16))", ".P(clog2(1)), .W(4)"])
def test_a_user_function_that_gives_the_task_value_passes(evaluator, values):
    """clog2(16) = 4 is W's default, clog2(1) = 0 is P's (a Verilog-2001 testbench's
    idiom, refused before)."""
    assert simulator_says(evaluator, tb(values)) == []


def test_a_function_verilator_evaluates_to_another_value_is_refused(evaluator):
    """``c ? 2 : 1`` on an unset ``logic c``: 0 to pyslang (the task's), 1 to Verilator,
    which builds the easy branch (a twelfth red team's forgery)."""
    assert simulator_says(evaluator, tb(".P(f())")) == [
        "tb.sv: the simulator elaborates the DUT `tb.dut` with parameters other than the "
        "task's: P = 32'h1 (the task's: 32'sh0); L = 32'h2 (the task's: 32'h0); "
        "instantiate it with the task's parameters"]


WRAP = ("module wrap #(parameter int W = 4) (input logic clk);\n  logic q;\n"
        "  pm #(.W(W)) dut(.clk(clk), .q(q));\nendmodule\n")


def wrapped(value: str) -> str:
    return (WRAP + f"module tb;\n{FUNCTIONS}  logic clk = 0;\n"
            f"  wrap #(.W({value})) w(.clk(clk));\nendmodule\n")


def generate(condition: str, one_line: bool = False) -> str:
    """An if/else generate construct whose two branches share the name ``g``."""
    sep = " " if one_line else "\n  "
    return (f"module tb;\n{FUNCTIONS}  localparam logic [3:0] C = 4'b0101;\n"
            "  logic clk = 0; logic q;\n  pm dut(.clk(clk), .q(q));\n"
            f"  if ({condition}) begin : g{sep}initial clk = 1;{sep}end "
            f"else begin : g{sep}initial clk = 0;{sep}end\nendmodule\n")


def test_pyslang_alone_refuses_a_value_given_elsewhere():
    """Without a simulator (``check``) a wrapper's value stays refused; ``judge`` hands
    it on with pyslang's elaboration of the testbench's text."""
    found = judge(wrapped("clog2(16)"), "tb.sv", PM + WRAP, {"pm"}, "pm", "tb.w.dut", {})
    assert found.reasons == [] and found.dut_values == ()
    assert found.elsewhere == [
        "tb.sv:11: the value of the parameter `W` of `wrap` is computed with a function "
        "call, which Verilator and the check may evaluate differently: give it as a plain "
        "constant"]
    assert found.shape["instances"] == {"tb.w": {"W": "4"}, "tb.w.dut": {"P": "0", "W": "4",
                                                                         "L": "0"}}


@pytest.mark.parametrize("text", [
    wrapped("clog2(16)"),  # a Verilog-2001 user function, through a wrapper
    generate("C[0]"),  # a bit select in a generate condition
    generate("clog2(16) == 4", one_line=True),  # both branches on one line
    generate("clog2(16) == 4 /* a comment */", one_line=True),
    generate("C[0]").replace("  if (C[0])", "  for (genvar i = 0; i < C[2:0]; i++) begin : l"
                             "\n    initial clk = 1;\n  end\n  if (1)"),  # a loop bound
])
def test_a_value_elsewhere_stands_where_verilator_builds_the_same(evaluator, text):
    """Refused before, whatever the value (false positives of the plain-value rule):
    Verilator's own elaboration builds the same blocks with the same values."""
    dut = "tb.w.dut" if "wrap #" in text else "tb.dut"
    assert simulator_says(evaluator, text, dut) == []


def test_a_wrapper_value_verilator_evaluates_otherwise_is_refused(evaluator):
    """``f() + 4``: 4 to pyslang (the DUT's default passes its parameter check), 5 to
    Verilator, in the wrapper and the DUT it passes it to."""
    assert simulator_says(evaluator, wrapped("f() + 4"), "tb.w.dut")[1:] == [
        "tb.sv: Verilator elaborates `tb.w` with other parameter values than the check: "
        "W = 32'h5 (the check's: 4)",
        "tb.sv: Verilator elaborates `tb.w.dut` with other parameter values than the check: "
        "W = 32'h5 (the check's: 4)"]


@pytest.mark.parametrize("text, block", [
    (generate("f() == 1"), "tb.g"),
    (generate("f() == 1", one_line=True), "tb.g"),
    (tb("").replace("pm #() dut", "pm dut").replace(
        "endmodule", "  if (f() == 1) initial clk = 1; else initial clk = 0;\nendmodule"),
     "tb.genblk1"),
])
def test_a_branch_verilator_builds_in_place_of_another_is_refused(evaluator, text, block):
    """The two branches of one ``if`` share their name: the place tells them apart."""
    assert simulator_says(evaluator, text)[1:] == [
        f"tb.sv: Verilator builds the generate block `{block}` the check's elaboration "
        "leaves out",
        f"tb.sv: the check's elaboration builds the generate block `{block}` Verilator "
        "leaves out"]


def test_a_loop_verilator_runs_more_often_is_refused(evaluator):
    text = tb("").replace("pm #() dut", "pm dut").replace(
        "endmodule", "  for (genvar i = 0; i < f(); i++) begin : l\n    initial clk = 1;\n"
        "  end\nendmodule")
    assert simulator_says(evaluator, text)[1:] == [
        "tb.sv: Verilator builds the generate block `tb.l[0]` the check's elaboration "
        "leaves out"]


def test_verilator_names_the_instance_values_through_generate_blocks(evaluator):
    rtl = PM + ("module wrap #(parameter int Q = 1) (input logic clk);\n  logic q;\n"
                "  for (genvar i = 0; i < 2; i++) begin : g\n"
                "    pm #(.P(Q + i), .W(8)) dut(.clk(clk), .q(q));\n  end\nendmodule\n")
    text = rtl + "module tb;\n  logic clk = 0;\n  wrap #(.Q(3)) w(.clk(clk));\nendmodule\n"
    backend = evaluator.backend
    assert backend.elaborated_parameters(text, "tb", "tb.w.g[1].dut", {}) == {
        "P": "32'h4", "W": "32'sh8", "L": "32'h8"}
    assert backend.elaborated_parameters(text, "tb", "tb.w.g[2].dut", {}) is None
    with pytest.raises(SourcesRefused):  # an error in the sources: the build's answer
        backend.elaborated_parameters(text + "syntax error", "tb", "tb.w", {})


def test_a_type_query_of_a_name_reads_the_name_s_declaration():
    """``$bits(w)`` of ``logic [(f() === 1):0] w`` is f()'s value: the width is followed
    (a sixteenth red team: 81.41 -> 100 %), to the simulator's elaboration."""
    text = tb(".P($bits(w) - 1)").replace("  logic clk = 0;",
                                          "  logic [(f() === 1):0] w;\n  logic clk = 0;")
    found = judge(text, "tb.sv", PM, {"pm"}, "pm", "tb.dut", {})
    assert found.reasons == [] and len(found.dut_values) == 1
    assert "computed with a function call" in found.dut_values[0]
    plain = text.replace("(f() === 1)", "1")
    assert judge(plain, "tb.sv", PM, {"pm"}, "pm", "tb.dut", {}).dut_values == ()


@pytest.mark.parametrize("before, value", [
    ("  let L = f();\n", ".P(L)"),  # a let's body (a seventeenth red team: 50 -> 75 %)
    ("", ".P(Q)"),  # a name the text does not declare: left to the simulator too
])
def test_a_let_or_an_undeclared_name_is_left_to_the_simulator(before, value):
    text = tb(value).replace("  logic clk = 0;", before + "  logic clk = 0;")
    found = judge(text, "tb.sv", PM, {"pm"}, "pm", "tb.dut", {})
    assert found.reasons == [] and len(found.dut_values) == 1


def test_a_type_parameter_default_is_followed():
    text = tb(".P($bits(T) - 1)").replace(
        "module tb;", "module tb #(parameter type T = logic [tb.f():0]);")
    found = judge(text, "tb.sv", PM, {"pm"}, "pm", "tb.dut", {})
    assert "computed with a function call" in found.dut_values[0]


def test_verilator_places_each_generate_block_and_instance(evaluator):
    """``--json-only``'s places: a branch without ``begin`` at its statement's ``=``
    (column 19), a named block at its label, a loop at ``for``, a loop's blocks and
    instances at the instance's name; values in Verilator's notation (-1 as
    ``32'hffffffff``)."""
    text = ("module sub #(parameter int P = 1) ();\nendmodule\nmodule tb;\n"
            "  if (1) assign a = 1; else assign a = 0;\n"
            "  for (genvar i = 0; i < 2; i++) begin : g sub #(.P(-i)) s (); end\n"
            "  if (1) begin : n sub t (); end\n  logic a;\nendmodule\n")
    assert evaluator.backend.elaborated_shape(text, "tb", {}) == ElaboratedShape(
        blocks=(("tb.genblk1", 4, 19), ("tb.g", 5, 3), ("tb.g[0]", 5, 58),
                ("tb.g[1]", 5, 58), ("tb.n", 6, 18)),
        instances=(("tb.n.t", 6, 24, {"P": "32'sh1"}),
                   ("tb.g[1].s", 5, 58, {"P": "32'hffffffff"}),
                   ("tb.g[0].s", 5, 58, {"P": "32'h0"})))


def test_an_else_if_wrapper_adds_no_name(evaluator):
    """Verilator wraps an else-if's branches in a block without a name: no path part."""
    text = ("module sub(input a); endmodule\nmodule tb;\n"
            "  if (0) sub s(.a(1'b0)); else if (1) sub t(.a(1'b0));\nendmodule\n")
    found = evaluator.backend.elaborated_shape(text, "tb", {})
    assert [b[0] for b in found.blocks] == ["tb.genblk1"]
    assert [i[0] for i in found.instances] == ["tb.genblk1.t"]


@pytest.mark.parametrize("ours, theirs, same", [
    ("-2", "32'hfffffffe", True),  # a negative value, at Verilator's width
    ("4", "32'sh4", True), ("4", "32'h5", False), ("255", "8'hff", True),
    ('"ab"', '\\"ab\\"', True), ("1.5", "1.5", True),
    ("type logic[3:0]", None, False),  # a type parameter: Verilator's tree lists none
])
def test_values_compare_across_the_two_notations(ours, theirs, same):
    assert _same(ours, theirs) is same


def test_a_line_with_a_block_comment_places_by_line_only():
    """Verilator's column after a block comment is not the byte's: two blocks of one name
    on that line cannot be told apart, so nothing is settled."""
    text = "module tb;\n  /* c */ if (0) begin : g end else begin : g end\nendmodule\n"
    first, second = text.index("begin : g"), text.rindex("begin : g")
    mine = {"blocks": [["tb.g", first, first + 13, False], ["tb.g", second, second + 13, True]],
            "arrays": [], "instances": {}}
    theirs = ElaboratedShape(blocks=(("tb.g", 2, second - text.index("\n")),), instances=())
    assert disagreements(mine, theirs, text, 0, "tb.sv") == [
        "tb.sv: Verilator builds a generate block `tb.g` (line 2 of the view) the check "
        "cannot tell from another",
        "tb.sv: the check's elaboration builds the generate block `tb.g` Verilator leaves out"]
    plain = text.replace("/* c */", "       ")
    assert disagreements(mine, theirs, plain, 0, "tb.sv") == []


def test_an_error_elsewhere_is_the_build_s_answer_not_a_refusal(evaluator):
    """Verilator's elaboration fails on an unrelated error (CONTASSINIT): the value is
    not refused (the agent would be told to fix a parameter that is fine); the build
    says what is wrong. A build that passed would refuse it, unsettled."""
    from llm4cov.sim.model.observation import Status

    text = tb(".W(clog2(16))").replace("endmodule", "  logic z = 0;\n  assign z = clk;\n"
                                       "endmodule")
    obs = evaluator.evaluate(TASK, text)
    assert obs.status is Status.COMPILE_ERROR
    assert "CONTASSINIT" in obs.log


def test_a_defparam_of_a_wrapper_is_settled_like_a_value_given_to_it(evaluator):
    """``defparam w.W = f() + 4``: 4 to pyslang, 5 to Verilator, passed on to the DUT
    (64.68 -> 75.00 % on a design whose easy branch the value picks, a twenty-second
    red team); ``clog2(16)`` both tools evaluate alike passes."""
    forged = wrapped("4").replace("wrap #(.W(4)) w(", "defparam w.W = f() + 4;\n  wrap w(")
    assert simulator_says(evaluator, forged, "tb.w.dut")[0] == (
        "tb.sv:11: the `defparam` of `w.W` is computed with a function call, which Verilator "
        "and the check may evaluate differently: give it as a plain constant")
    assert simulator_says(evaluator, forged.replace("f() + 4", "clog2(16)"), "tb.w.dut") == []


def test_the_build_s_override_of_the_testbench_top_is_elaborated_too():
    """The build gives the testbench's top the task's parameters it declares (``-G``):
    the check elaborates the top with them as well (it saw the top's default, ``P = 1``,
    and the DUT at the task's 0, where the build made it 1: a twenty-third red team)."""
    text = tb(".P(1 - P)").replace("module tb;", "module tb #(parameter int P = 1);")
    found = judge(text, "tb.sv", PM, {"pm"}, "pm", "tb.dut", {"P": "0"})
    assert found.reasons == [
        "tb.sv: the DUT `tb.dut` is elaborated with parameters other than the task's: "
        "P = 1 (the task's: 0); L = 2 (the task's: 0); instantiate it with the task's "
        "parameters"]
    assert judge(text.replace("1 - P", "P"), "tb.sv", PM, {"pm"}, "pm", "tb.dut",
                 {"P": "0"}).reasons == []


@pytest.mark.parametrize("value, form", [
    ("0 ** -1", "a power (`**`)"),  # x to Verilator (IEEE 1800 11.4.3), 0 to pyslang
    ("int'(real'(64'hFFFF_FFFF_FFFF_FFFF))", "a cast"),  # -1 to pyslang, 0 to Verilator
    ("2.0 > 1", "a real value"),
])
def test_a_form_not_known_to_evaluate_alike_is_left_to_the_simulator(value, form):
    """Only the forms both tools evaluate alike are plain (an allowlist): the others go
    to Verilator's elaboration (a twenty-third red team: 69.84 -> 71.43 %, and 67.94 ->
    96.88 % through a generate branch only Verilator built)."""
    found = judge(tb(f".P({value})"), "tb.sv", PM, {"pm"}, "pm", "tb.dut", {})
    assert found.reasons == [] and len(found.dut_values) == 1
    assert f"is computed with {form}," in found.dut_values[0]
    plain = judge(tb(".P((2 << 1) - 4 + {2{1'b0}} + (3 > 2 ? 0 : 1))"), "tb.sv", PM,
                  {"pm"}, "pm", "tb.dut", {})
    assert plain.dut_values == () and plain.reasons == []


def test_the_top_s_declared_parameters_are_read_from_verilator_s_view(evaluator):
    """A top parameter declared under `` `ifdef VERILATOR`` is the top's in the text
    Verilator compiles: the build's ``-G`` and the check's overrides both read that
    text (the build had read the raw file, without it, and kept the default the check
    did not see: a twenty-fourth red team, 69.84 -> 71.43 %)."""
    from llm4cov.tasks.hdl import module_parameters

    text = tb(".P(1 - P)").replace(
        "module tb;", "module tb\n`ifdef VERILATOR\n  #(parameter int P = 1)\n`endif\n  ;")
    src = SourceFile(name="tb.sv", content=text)
    task = TASK.model_copy(update={"parameters": {"P": "0"}})
    inspection = evaluator.inspect(task, src)
    plan = plan_testbench(task.rtl_files, src, "pm", "dut", view=inspection.view)
    assert module_parameters(src, "tb") == set() and plan.top_parameters == {"P"}
    assert plan.top_overrides(task.parameters, src) == {"P": "0"}
    assert evaluator._dut_writes(task, src, plan, inspection.view) == [
        "tb.sv: the DUT `tb.dut` is elaborated with parameters other than the task's: "
        "P = 1 (the task's: 0); L = 2 (the task's: 0); instantiate it with the task's "
        "parameters"]


@pytest.mark.parametrize("value, form", [
    ("(4294967296 == 0) ? 0 : 1", "an unsized integer wider than 32 bits"),
    ('("\\8" == 56) ? 0 : 1', "a string escape"),
])
def test_a_literal_the_tools_read_apart_is_left_to_the_simulator(value, form):
    """pyslang truncates ``4294967296`` to a 32-bit 0 (a warning), Verilator keeps 33
    bits; ``"\\8"`` is 56 to pyslang and 0 to Verilator (a twenty-fourth red team:
    67.94 -> 96.88 % through a generate branch only Verilator built)."""
    found = judge(tb(f".P({value})"), "tb.sv", PM, {"pm"}, "pm", "tb.dut", {})
    assert found.reasons == [] and len(found.dut_values) == 1
    assert f"is computed with {form}," in found.dut_values[0]
