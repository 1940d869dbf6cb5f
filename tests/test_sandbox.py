"""Static safety checks on untrusted testbenches (no simulator)."""

from __future__ import annotations

from llm4cov.sim.sandbox import check_testbench


def reasons(src: str) -> list[str]:
    return check_testbench(src, "tb.sv")


def test_clean_testbench_passes():
    src = """module tb;
  integer fd;
  initial begin
    fd = $fopen("out.txt", "w");     // relative path inside the work dir
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
    got = reasons(src)
    assert got == [
        "tb.sv:1: `include \"../secret.vh\" points outside the work dir (absolute or '..' path)",
        "tb.sv:2: DPI imports/exports are not allowed",
        "tb.sv:6: $system is not allowed (runs a host shell command)",
        "tb.sv:7: $readmemh needs a string-literal file name (a computed path cannot be "
        "checked to stay inside the work dir)",
        "tb.sv:8: $fopen(\"/tmp/x\") points outside the work dir (absolute or '..' path)",
        "tb.sv:9: $dumpfile(\"../../escape.vcd\") points outside the work dir "
        "(absolute or '..' path)",
        "tb.sv:10: $c (embedded C++) is not allowed",
        "tb.sv:13: `systemc_header (embedded C++) is not allowed",
    ]


def test_macros_cannot_hide_a_system_call():
    src = """`define RUN(x) $sys``tem(x)
module tb; initial `RUN("ls"); endmodule
"""
    assert reasons(src) == ["tb.sv:2: $system is not allowed (runs a host shell command)"]
