"""Static safety check of untrusted testbenches: on the text Verilator compiles
(``verilator -E`` with the build's flags), one test per kind of escape (issue 10)."""

from __future__ import annotations

import pytest

from llm4cov.sim.safety import vlex
from llm4cov.sim.safety.static_check import EXCEEDED, CheckLimits, inspect_testbench
from llm4cov.tasks.model import SourceFile, Task
from llm4cov.tasks.names import source_arg
from support import default_preprocessor

pytestmark = pytest.mark.requires_verilator

COUNTER = """module counter(input logic clk, output logic [3:0] q);
  always_ff @(posedge clk) q <= q + 4'd1;
endmodule
"""


def task(rtl: str = COUNTER, name: str = "counter.sv", **extra) -> Task:
    return Task(id="t", rtl_files=[SourceFile(name=name, content=rtl)],
                dut_module_name="counter", **extra)


def reasons(src: str, t: Task | None = None, **kw) -> list[str]:
    return inspect_testbench(src, "tb.sv", t, preprocessor=default_preprocessor(t), **kw).reasons


def test_clean_testbench_passes():
    src = """module tb;
  integer fd; logic [7:0] mem [0:3];
  initial begin
    fd = $fopen("out/log.txt", "w");     // relative path inside the work dir
    $readmemh("data/vectors.hex", mem);
    $display("$system and $fopen(\\"/etc/passwd\\") in a string are fine");
    // $system("rm -rf /") in a comment is fine
    $finish;
  end
endmodule
"""
    assert reasons(src) == []


def test_each_unsafe_construct_is_named_with_its_line():
    src = """`include "../secret.vh"
import "DPI-C" function int host(int a);
module tb;
  string s;
  initial begin
    $system("ls");
    $readmemh(s, mem);
    $fopen("/tmp/x", "w");
    $dumpfile("../../escape.vcd");
    $c("std::system(\\"ls\\");");
  end
endmodule
`systemc_header
"""
    assert reasons(src) == [
        "tb.sv:1: `include \"../secret.vh\" points outside the work dir (absolute or '..' path)",
        "tb.sv:2: DPI imports/exports are not allowed",
        "tb.sv:6: $system is not allowed (runs a host shell command)",
        "tb.sv:7: $readmemh needs a string-literal file name or a constant of one (a "
        "computed path cannot be checked to stay inside the work dir)",
        "tb.sv:8: $fopen(\"/tmp/x\") points outside the work dir (absolute or '..' path)",
        "tb.sv:9: $dumpfile(\"../../escape.vcd\") points outside the work dir "
        "(absolute or '..' path)",
        "tb.sv:10: $c (embedded C++) is not allowed",
        "tb.sv:13: `systemc_header (embedded C++) is not allowed",
    ]


def test_ifdef_verilator_hides_nothing_and_untaken_branches_do_not_count(tmp_path):
    outside = tmp_path / "outside.vh"
    outside.write_text("// not the work dir's\n")
    src = f"""module tb;
`ifdef VERILATOR
  `ifdef verilator3
  import "DPI-C" function int host();
  initial void'($system("touch x"));
  initial $c("abort();");
  integer fd = $fopen("/etc/passwd", "r");
  `include "{outside}"
  `endif
`else
  initial $system("never compiled by Verilator");
`endif
endmodule
"""
    assert reasons(src) == [
        f"tb.sv:8: `include of \"{outside}\" reads a file outside the work dir",
        "tb.sv:4: DPI imports/exports are not allowed",
        "tb.sv:5: $system is not allowed (runs a host shell command)",
        "tb.sv:6: $c (embedded C++) is not allowed",
        "tb.sv:7: $fopen(\"/etc/passwd\") points outside the work dir (absolute or '..' path)",
    ]


def test_macros_cannot_hide_a_system_call_or_a_systemc_block():
    src = """`define RUN(x) $sys``tem(x)
`define SC(kind) `systemc_``kind
module tb; initial `RUN("ls");
`SC(header)
#include <cstdlib>
`verilog
endmodule
"""
    assert reasons(src) == [
        "tb.sv:3: $system is not allowed (runs a host shell command)",
        "tb.sv:4: `systemc_header (embedded C++) is not allowed",
        # pasting onto a directive (`systemc_``kind) could build an `include as well
        "tb.sv:2: token pasting (``) joins `systemc_, which holds a backtick: the joined "
        "text can form a directive, such as an `include, whose file cannot be checked "
        "(checked in every preprocessor branch)",
    ]


def test_rtl_macros_and_task_defines_are_those_of_the_build():
    rtl = COUNTER + "`define HOST(cmd) $system(cmd)\n`define LOG \"/tmp/log\"\n"
    src = """module tb;
  initial `HOST("id");
  integer fd = $fopen(`LOG, "w");
`ifdef EVIL
  initial $c("x");
`endif
endmodule
"""
    expected = [
        "tb.sv:2: $system is not allowed (runs a host shell command)",
        "tb.sv:3: $fopen(\"/tmp/log\") points outside the work dir (absolute or '..' path)",
    ]
    assert reasons(src, task(rtl)) == expected
    assert reasons(src, task(rtl, defines={"EVIL": ""})) == [
        *expected, "tb.sv:5: $c (embedded C++) is not allowed"]


def test_escaped_file_names_are_decoded_and_refused():
    src = r'''module tb;
  integer a = $fopen("\057etc\057passwd", "r");
  integer b = $fopen("\x2fetc\x2fpasswd", "r");
  integer c = $fopen("\457etc/passwd", "r");
  integer d = $fopen("""/etc/passwd""", "r");
  integer e = $fopen("ok\tname", "w");
endmodule
'''
    got = reasons(src)
    assert got == [
        r"""tb.sv:2: $fopen("\057etc\057passwd") uses escape sequences in its file name """
        "(decodes to '/etc/passwd')",
        r"""tb.sv:3: $fopen("\x2fetc\x2fpasswd") uses escape sequences in its file name """
        "(decodes to '/etc/passwd')",
        r"""tb.sv:4: $fopen("\457etc/passwd") uses escape sequences in its file name """
        "(decodes to '/etc/passwd')",
        "tb.sv:5: $fopen(\"/etc/passwd\") points outside the work dir (absolute or '..' path)",
        r"""tb.sv:6: $fopen("ok\tname") uses escape sequences in its file name """
        "(decodes to 'ok\\tname')",
    ]


def test_verilator_string_decoding():
    # VString::unquoteSVString: 1-3 octal digits (8 and 9 taken, wraps at 256), \xHH
    assert vlex.unquote(r"\057a\x2fb\457c\08d\q") == "/a/b/c\x08d"
    assert vlex.string_value('"""a"b"""') == 'a"b'


def test_lexer_tricks_that_hide_code_inside_a_fake_string():
    # Verilator skips "(* name ... *)" up to the first "*)" and a meta-comment up to "*/",
    # quotes included, so the code after them is code; an escaped identifier eats a quote.
    src = """module tb;
  (* keep = " *) initial $system("a"); // " *)
  /*verilator tag " */ initial $system("b"); //"*/
  logic \\x" ; initial $system("c"); //"
endmodule
"""
    assert reasons(src) == [
        "tb.sv:2: $system is not allowed (runs a host shell command)",
        "tb.sv:3: $system is not allowed (runs a host shell command)",
        "tb.sv:4: $system is not allowed (runs a host shell command)",
    ]


def test_a_constant_file_name_is_judged_by_its_literal():
    """``localparam`` file names declared once, named only by file tasks."""
    src = """module tb;
  localparam HEX = "data/rom.hex";
  localparam string LOG = "out/run.log", BAD = "../../x.hex";
  logic [7:0] mem [0:3];
  integer fd;
  initial begin
    $readmemh(HEX, mem);
    fd = $fopen(LOG, "w");
    $readmemb(BAD, mem);
  end
endmodule
"""
    assert reasons(src) == [
        "tb.sv:9: $readmemb(\"../../x.hex\") points outside the work dir (absolute or '..' "
        "path)"]


COMPUTED = ("needs a string-literal file name or a constant of one (a computed path cannot "
            "be checked to stay inside the work dir)")


@pytest.mark.parametrize("module, line", [
    # a positional override of a parameter (no name to find)
    ("""module sub; parameter F = "ok.hex"; logic [7:0] m [0:1];
  initial $readmemh(F, m);
endmodule
module tb; sub #("/etc/passwd") u(); endmodule
""", 2),
    # red team 35: a `virtual class` ended a keyword count of scopes early, so the
    # parameter seemed to belong to a module no instance names
    ("""module holder(interface i); endmodule
module sub;
  virtual class C; endclass
  parameter F = "ok.txt"; logic [7:0] m [0:1];
  initial $readmemh(F, m);
endmodule
module tb; sub #("tb.sv") u(); endmodule
""", 5),
    # another declaration of the name shadows the constant
    ("""module tb; localparam F = "ok.hex"; logic [7:0] m [0:1];
  task automatic load; string F; F = "/etc/passwd"; $readmemh(F, m); endtask
  initial load();
endmodule
""", 2),
    # a string variable can be assigned: only constants count
    ("""module tb; string F = "ok.hex"; logic [7:0] m [0:1];
  initial $readmemh(F, m);
endmodule
""", 2),
])
def test_a_file_name_constant_that_may_change_is_refused(module, line):
    assert f"tb.sv:{line}: $readmemh {COMPUTED}" in reasons(module)


def test_computed_file_names_and_verilator_config_are_refused():
    src = """module tb;
  integer fd = $fopen({"", "/etc/passwd"}, "r");
  initial $dumpports(tb, "../ports.vcd");
endmodule
`verilator_config
coverage_off -file "*"
"""
    assert reasons(src) == [
        "tb.sv:2: $fopen needs a string-literal file name or a constant of one (a "
        "computed path cannot be checked to stay inside the work dir)",
        "tb.sv:3: $dumpports(\"../ports.vcd\") points outside the work dir "
        "(absolute or '..' path)",
        "tb.sv:5: `verilator_config is not allowed (it changes how every file is compiled "
        "and covered)",
    ]


BOMB = "".join(f"`define B{i} (`B{i - 1}+`B{i - 1})\n" for i in range(1, 24))


def test_macro_bomb_is_rejected_by_the_preprocessing_limits():
    src = f"`define B0 1\n{BOMB}module tb; localparam int N = `B23; endmodule\n"
    assert reasons(src) == [
        f"tb.sv: {EXCEEDED} (Verilator's limit of tokens on a line)"]


def test_bomb_only_pyslang_would_expand_is_rejected_in_bounded_memory():
    # Verilator skips the `ifndef branch; the evaluator's own pyslang parse (no VERILATOR
    # macro) would expand it: the guard child runs that parse under 256 MiB first.
    src = (f"`define B0 1\n{BOMB}module tb;\n`ifndef VERILATOR\n"
           "localparam int N = `B23;\n`endif\nendmodule\n")
    limits = CheckLimits(parse_memory_bytes=256 << 20)
    assert reasons(src, limits=limits) == [
        f"tb.sv: {EXCEEDED} (the pyslang parse of the testbench went past 10 s CPU or 256 MiB)"]


def test_a_preprocessor_killed_by_its_limits_rejects_instead_of_passing():
    # A partial output must never pass: the real build runs with other limits.
    got = reasons("module tb; initial $display(1); endmodule\n",
                  limits=CheckLimits(memory_bytes=4 << 20))
    assert len(got) == 1 and got[0].startswith(f"tb.sv: {EXCEEDED} (")


def test_oversized_testbench_is_rejected_before_preprocessing():
    src = "module tb; endmodule\n" + "// padding\n" * 100
    assert reasons(src, limits=CheckLimits(testbench_bytes=1000)) == [
        f"tb.sv: the testbench has {len(src)} bytes, more than the 1000 allowed ({EXCEEDED})"]


def test_option_like_rtl_file_names_reach_verilator_as_files():
    assert source_arg("-o.sv") == "./-o.sv"
    assert source_arg("+define+EVIL=1.sv") == "./+define+EVIL=1.sv"
    assert source_arg("rtl/-x.sv") == "rtl/-x.sv"
    odd = Task(id="t", dut_module_name="counter", rtl_files=[
        SourceFile(name="counter.sv", content=COUNTER),
        SourceFile(name="+define+EVIL=1.sv", content="module odd; endmodule\n"),
        SourceFile(name="-o.sv", content="module odd2; endmodule\n"),
    ])
    # As an option, +define+EVIL=1.sv would define EVIL and expose the $system.
    src = "module tb;\n`ifdef EVIL\n initial $system(\"x\");\n`endif\nendmodule\n"
    assert reasons(src, odd) == []


def test_evaluator_passes_option_like_names_as_paths_and_checks_with_its_own_command(tmp_path):
    from llm4cov.sim.analysis.structure import TestbenchPlan
    from llm4cov.sim.config import SimConfig
    from llm4cov.sim.evaluator import Evaluator

    ev = Evaluator(SimConfig(cache_dir=str(tmp_path), sandbox=False))
    odd = Task(id="t", dut_module_name="counter", defines={"W": "4"}, rtl_files=[
        SourceFile(name="counter.sv", content=COUNTER),
        SourceFile(name="-o.sv", content="module odd; endmodule\n"),
    ])
    tb = SourceFile(name="-tb.sv", content="module tb; counter dut(); endmodule\n")
    build = ev.backend.verilate_command(odd, tb, TestbenchPlan("tb", "tb.dut"))
    assert build[-4:-1] == ["counter.sv", "./-o.sv", "./-tb.sv"]
    check = ev.backend.preprocess_command(odd, tb)
    assert [a for a in check if a.startswith(("-D", "-I", "./", "--timing"))] == [
        a for a in build if a.startswith(("-D", "-I", "./", "--timing"))]


def test_check_in_the_os_sandbox_judges_outside_includes_by_name():
    from llm4cov.sim.backends.verilator.build import build_sandbox
    from llm4cov.sim.backends.verilator.toolchain import find_toolchain
    from llm4cov.sim.safety import isolation

    if not isolation.available():
        pytest.skip("no OS sandbox here")
    src = """module tb;
`include "/etc/hostname"
  initial $system("x");
endmodule
"""
    assert reasons(src, sandbox=build_sandbox(find_toolchain())) == [
        "tb.sv:2: `include \"/etc/hostname\" points outside the work dir (absolute or '..' path)",
        "tb.sv:3: $system is not allowed (runs a host shell command)",
    ]


@pytest.mark.slow
def test_option_like_rtl_names_simulate_and_an_escape_is_rejected(tmp_path):
    from llm4cov.sim.config import SimConfig
    from llm4cov.sim.evaluator import Evaluator
    from llm4cov.sim.model.observation import Status

    ev = Evaluator(SimConfig(cache_dir=str(tmp_path)))
    odd = Task(id="t", dut_module_name="counter", rtl_files=[
        SourceFile(name="counter.sv", content=COUNTER),
        SourceFile(name="+define+EVIL=1.sv", content="module odd; endmodule\n"),
        SourceFile(name="-o.sv", content="module odd2; endmodule\n"),
    ])
    tb = """module tb; logic clk = 0; logic [3:0] q;
  counter dut(.clk(clk), .q(q));
  always #5 clk = ~clk;
  initial #100 $finish;
endmodule
"""
    assert ev.evaluate(odd, tb).status is Status.SUCCESS
    bad = tb.replace("initial #100", 'integer fd = $fopen("\\057etc\\057hostname", "r");\n'
                     "  initial #100")
    obs = ev.evaluate(odd, bad)
    assert obs.status is Status.REJECTED and "uses escape sequences" in obs.log


def test_in_process_parse_never_reads_a_host_file_through_include(tmp_path, monkeypatch):
    """No `include in an untrusted text alone is ever opened (not against the current
    dir either: an include depth of 0; tests/test_host_parse.py has the absolute and
    hidden ones)."""
    from llm4cov.tasks.hdl import parse_tree

    (tmp_path / "secret.vh").write_text("module leaked_secret_module; endmodule\n")
    monkeypatch.chdir(tmp_path)
    tree = parse_tree('`include "secret.vh"\nmodule tb; endmodule\n', "tb.sv")
    assert "leaked_secret_module" not in str(tree.root)
    assert [str(d.code) for d in tree.diagnostics] == ["DiagCode(ExceededMaxIncludeDepth)"]
