"""coverage.dat parsing and DUT-subtree arithmetic on hand-written data (no simulator)."""

from __future__ import annotations

import pytest

from llm4cov.sim.backends.verilator.coverage_dat import parse_coverage_dat
from llm4cov.sim.model.coverage import in_subtree, summarize, uncovered_items
from llm4cov.sim.model.observation import MetricCoverage, overall_percent


def _line(**kv) -> str:
    count = kv.pop("count")
    body = "".join(f"\x01{k}\x02{v}" for k, v in kv.items())
    return f"C '{body}' {count}\n"


@pytest.fixture
def dat(tmp_path):
    rows = [
        _line(f="top.sv", l=3, t="line", page="v_line/top", o="block", S="3-4", h="tb.dut",
              count=5),
        _line(f="top.sv", l=5, t="branch", page="v_branch/top", o="if", h="tb.dut", count=0),
        _line(f="top.sv", l=5, t="branch", page="v_branch/top", o="else", h="tb.dut", count=2),
        _line(f="sub.sv", l=2, t="toggle", page="v_toggle/sub", o="q[0]:0->1",
              h="tb.dut.u_*", count=0),
        _line(f="sub.sv", l=2, t="toggle", page="v_toggle/sub", o="q[1]:0->1",
              h="tb.dut.u_*", count=0),
        _line(f="sub.sv", l=2, t="toggle", page="v_toggle/sub", o="q[1]:1->0",
              h="tb.dut.u_*", count=0),
        _line(f="sub.sv", l=2, t="toggle", page="v_toggle/sub", o="q[0]:1->0",
              h="tb.dut.u_*", count=1),
        _line(f="tb.sv", l=1, t="toggle", page="v_toggle/tb", o="clk:0->1", h="tb", count=9),
        _line(f="other.sv", l=1, t="line", page="v_line/x", o="block", h="tb.dut2", count=0),
        # a quote inside the key (sized literal in an expression term) must not drop it
        _line(f="top.sv", l=7, t="expr", page="v_expr/top", o="(cnt=='d3) => 1", h="tb.dut",
              count=0),
    ]
    path = tmp_path / "coverage.dat"
    path.write_text("# SystemC::Coverage-3\n" + "".join(rows))
    return path


def test_summarize_counts_only_the_dut_subtree(dat):
    points = parse_coverage_dat(dat)
    assert len(points) == 10
    rep = summarize(points, "tb.dut")
    got = {k: (v.covered, v.total) for k, v in rep.metrics.items()}
    assert got == {"line": (1, 1), "branch": (1, 2), "toggle": (1, 4), "expr": (0, 1)}
    # (100 + 50 + 25 + 0) / 4
    assert rep.overall == pytest.approx(43.75)
    assert set(rep.per_instance) == {"tb.dut", "tb.dut.u_*"}
    assert rep.merged == ["tb.dut.u_*"]
    assert summarize(points, "tb.nothing") is None
    # only the repo's RTL files: without sub.sv its toggles (all 4 points) drop out
    only_top = summarize(points, "tb.dut", {"top.sv"})
    assert {k: (v.covered, v.total) for k, v in only_top.metrics.items()} == {
        "line": (1, 1), "branch": (1, 2), "expr": (0, 1)}


def test_uncovered_items_order_and_toggle_merge(dat):
    # only points of the RTL files (the keys of sources) count
    sources = {"top.sv": "a\nb\nc\nd\nif (x) y;", "sub.sv": ""}
    items, more = uncovered_items(parse_coverage_dat(dat), "tb.dut", sources)
    assert more == 0
    assert [i.render() for i in items] == [
        "top.sv:5 [branch] then branch of the if at top.sv:5 never taken | if (x) y;",
        "top.sv:7 [expr] the expression never true with cnt='d3",
        "sub.sv:2 [toggle] q[0] never toggled 0->1",
        "sub.sv:2 [toggle] q[1] never toggled",
    ]
    limited, more = uncovered_items(parse_coverage_dat(dat), "tb.dut", sources, limit=1)
    assert len(limited) == 1 and more == 3
    only_top, more = uncovered_items(parse_coverage_dat(dat), "tb.dut", {"top.sv": ""})
    assert [i.file for i in only_top] == ["top.sv", "top.sv"] and more == 0


def test_in_subtree_wildcards():
    assert in_subtree("tb.dut", "tb.dut")
    assert in_subtree("tb.dut.stage_*", "tb.dut")
    assert not in_subtree("tb.dut2", "tb.dut")
    assert not in_subtree("tb", "tb.dut")
    # two instances of the DUT module merged by Verilator: a wildcard never counts as
    # the DUT (IMC counts the DUT instance alone); one strictly below it does
    assert not in_subtree("tb.d*", "tb.dut")
    assert not in_subtree("tb.*", "tb.dut")
    assert not in_subtree("tb.x*", "tb.dut")


def test_overall_is_mean_of_metric_percentages_with_points():
    metrics = {
        "line": MetricCoverage(covered=3, total=4),
        "toggle": MetricCoverage(covered=1, total=10),
        "expr": MetricCoverage(covered=0, total=0),
        "user": MetricCoverage(covered=0, total=5),
    }
    assert overall_percent(metrics) == pytest.approx((75 + 10) / 2)
    assert overall_percent({}) == 0.0


def test_keys_decode_as_pyucis_decodes_them():
    """``decode_key`` (no pyucis import at start-up) agrees with pyucis's
    ``VltParser.decode_compact_string`` on well-formed and malformed keys alike."""
    import random

    from ucis.vltcov.vlt_parser import VltParser

    from llm4cov.sim.backends.verilator.coverage_dat import decode_key

    parser = VltParser()
    rng = random.Random(7)
    keys = ["\x01f\x02test.v\x01l\x0219\x01t\x02line\x01", "", "x\x01a\x02", "\x01ab\x01c\x02v",
            "\x01a", "\x01a\x02b\x02c\x01\x01d\x02"]
    keys += ["".join(rng.choice("\x01\x02ab") for _ in range(rng.randrange(12)))
             for _ in range(2000)]
    for key in keys:
        assert decode_key(key) == parser.decode_compact_string(key), repr(key)
