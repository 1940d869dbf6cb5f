"""Testbench extraction from model responses (untrusted text)."""

from __future__ import annotations

from llm4cov.agent.response import extract_testbench, fenced_blocks

TB = "module tb;\n  alu4 dut (.a(a));\n  initial $finish;\nendmodule\n"


def test_fenced_block_after_thinking():
    text = "<think>maybe module foo; endmodule</think>Here:\n```systemverilog\n" + TB + "```\n"
    assert extract_testbench(text, "alu4") == TB


def test_prefers_block_that_instantiates_the_dut_over_echoed_rtl():
    rtl = "module alu4(input a); endmodule"
    text = f"```verilog\n{rtl}\n```\nand the testbench\n```sv\n{TB}```"
    assert extract_testbench(text, "alu4") == TB


def test_unfenced_code_and_unterminated_think():
    text = "Sure.\n`timescale 1ns/1ps\n" + TB + "Hope it helps."
    assert extract_testbench(text, "alu4") == "`timescale 1ns/1ps\n" + TB
    assert extract_testbench("<think>still thinking module x; endmodule", "alu4") is None


def test_no_code_gives_none():
    assert extract_testbench("I cannot help with that.", "alu4") is None
    assert extract_testbench("```text\nno code\n```", "alu4") is None
    assert extract_testbench("", "alu4") is None


def test_a_longer_fence_holds_a_testbench_with_three_backticks_in_it():
    """CommonMark 0.31, 4.5: only a line of at least the opening fence's backticks
    closes it (a twenty-sixth red team: a six-backtick answer was cut at a string's
    three backticks, 22 lines to 11)."""
    tb = 'module tb;\n  alu4 dut (.a(a));\n  initial $display("```");\n```\nendmodule\n'
    assert extract_testbench(f"Here:\n``````systemverilog\n{tb}``````\nDone.", "alu4") == tb


def test_a_sloppy_close_on_the_code_s_last_line_still_ends_the_block():
    """``endmodule```` then prose and another block: two blocks, as before."""
    text = f"```sv\nmodule x; endmodule```\nand the testbench:\n```sv\n{TB}```\n"
    assert extract_testbench(text, "alu4") == TB
    assert fenced_blocks(text)[0] == ("sv", "module x; endmodule")
