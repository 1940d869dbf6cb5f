"""Testbench top and DUT instance detection (pyslang syntax level, no simulator)."""

from __future__ import annotations

import pytest

from llm4cov.sim.structure import StructureError, plan_testbench, stop_sites
from llm4cov.tasks.model import SourceFile

RTL = [
    SourceFile(name="sub.sv", content="module sub(input a); endmodule\n"),
    SourceFile(name="top.sv", content="module top(input a); sub u0(.a(a)); endmodule\n"),
]


def tb(text: str) -> SourceFile:
    return SourceFile(name="tb.sv", content=text)


def test_top_and_nested_dut_path():
    src = (
        "module helper; endmodule\nmodule env; top dut(.a(1'b0)); endmodule\n"
        "module tb; env e(); helper h(); endmodule\n"
    )
    plan = plan_testbench(RTL, tb(src), "top", "dut")
    assert (plan.tb_top, plan.dut_hier) == ("tb", "tb.e.dut")


def test_wrong_instance_name_and_missing_dut():
    with pytest.raises(StructureError, match="instantiated as `uut`, but the task requires"):
        plan_testbench(RTL, tb("module tb; top uut(.a(1'b0)); endmodule"), "top", "dut")
    with pytest.raises(StructureError, match="does not instantiate the DUT module `top`"):
        plan_testbench(RTL, tb("module tb; sub s(.a(1'b0)); endmodule"), "top", "dut")
    with pytest.raises(StructureError, match="no module declaration"):
        plan_testbench(RTL, tb("// empty"), "top", "dut")


def test_any_instance_accepts_the_first():
    plan = plan_testbench(RTL, tb("module t2; top x(.a(1'b0)); endmodule"), "top", None)
    assert plan.dut_hier == "t2.x"


def test_stop_sites_skip_error_lines():
    src = (
        "module tb;\ninitial begin\n  if (x) $error(\"e\"); else $stop;\n  $stop;\nend\n"
        "endmodule\n"
    )
    assert stop_sites([tb(src)]) == ["tb.sv:4"]


def test_several_instances_in_one_statement():
    src = "module tb; top other(.a(1'b0)), dut(.a(1'b1)); endmodule\n"
    plan = plan_testbench(RTL, tb(src), "top", "dut")
    assert plan.dut_hier == "tb.dut"
