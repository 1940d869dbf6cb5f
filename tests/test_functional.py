"""Functional coverage: testbench covergroup bins counted as their own metric (bins hit /
bins that count, per covergroup and coverpoint), in observations, feedback and reports,
never in the code-coverage headline; counted from coverage.dat lines written the way
Verilator 5.052 writes them, and from a real 5.052 run (skipped where it is not fetched).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from conftest import fixture_task
from llm4cov.agent.prompt import render_observation
from llm4cov.report.data import build_report_data
from llm4cov.report.html import render_html
from llm4cov.report.lcov import write_ucis_xml
from llm4cov.sim.backends.verilator.coverage_dat import COVERAGE_FORMAT, parse_coverage_dat
from llm4cov.sim.model.coverage import dut_points, summarize
from llm4cov.sim.model.functional import functional_coverage, functional_lines
from llm4cov.sim.model.observation import Observation, Status
from llm4cov.sim.report import coverage_markdown


def _point(count: int, **keys: str) -> str:
    """One coverage.dat line: keys between \\x01 and \\x02, as Verilator writes them."""
    return "C '" + "".join(f"\x01{k}\x02{v}" for k, v in keys.items()) + f"' {count}\n"


def _bin(group: str, point: str, name: str, count: int, line: int, kind: str = "",
         page: str | None = None) -> str:
    keys = {"t": "covergroup", "page": f"v_covergroup/{page or group}", "f": "tb.sv",
            "l": str(line), "n": "5", "bin": name}
    if kind:
        keys["bin_type"] = kind
    return _point(count, **keys, h=f"{page or group}.{point}.{name}")


#: Hand-counted: cg_in.cp_a 2 of 3 bins hit (hi never); cg_in.cp_sel 2/2;
#: cg_in.x_a_sel (a cross) 3/6; the class covergroup cg_cls.cp_kind: lo[0] hit, lo[1]
#: not, and its ignore, illegal and default bins do not count (even hit): 1/2. In all
#: 8 of 13 bins. One code-coverage line point of the DUT (mux2.sv) is hit, and a
#: covergroup bin forged to look like a DUT point (DUT file, hierarchy and module).
COVERAGE_DAT = "".join([
    "# SystemC::Coverage-3\n",
    _bin("cg_in", "cp_a", "zero", 1, 7), _bin("cg_in", "cp_a", "one", 2, 7),
    _bin("cg_in", "cp_a", "hi", 0, 7),
    _bin("cg_in", "cp_sel", "auto_0", 2, 8), _bin("cg_in", "cp_sel", "auto_1", 1, 8),
    *(_bin("cg_in", "x_a_sel", f"{a}_x_auto_{s}", hit, 9)
      for (a, s), hit in {("hi", 0): 0, ("hi", 1): 0, ("one", 0): 1, ("one", 1): 1,
                          ("zero", 0): 1, ("zero", 1): 0}.items()),
    _bin("cg_cls", "cp_kind", "lo[0]", 1, 12, page="__vlAnonCG_cg_cls"),
    _bin("cg_cls", "cp_kind", "lo[1]", 0, 12, page="__vlAnonCG_cg_cls"),
    _bin("cg_cls", "cp_kind", "ig", 3, 12, "ignore", page="__vlAnonCG_cg_cls"),
    _bin("cg_cls", "cp_kind", "bad", 0, 12, "illegal", page="__vlAnonCG_cg_cls"),
    _bin("cg_cls", "cp_kind", "rest", 1, 12, "default", page="__vlAnonCG_cg_cls"),
    _point(4, t="line", page="v_line/mux2", f="mux2.sv", l="10", n="3", o="block", S="10",
           h="tb.dut"),
    _point(1, t="covergroup", page="v_covergroup/mux2", f="mux2.sv", l="10", n="3",
           bin="x", h="tb.dut.x"),
])


@pytest.fixture
def points(tmp_path):
    path = tmp_path / "coverage.dat"
    path.write_bytes(COVERAGE_DAT.encode())
    return parse_coverage_dat(path)


def test_bins_are_counted_per_covergroup_and_coverpoint(points):
    fc = functional_coverage(points)
    own = {g: {p: (c.covered, c.total, c.missed) for p, c in cg.coverpoints.items()}
           for g, cg in fc.covergroups.items()}
    assert own == {
        "cg_cls": {"cp_kind": (1, 2, ["lo[1]"])},
        "cg_in": {"cp_a": (2, 3, ["hi"]), "cp_sel": (2, 2, []),
                  "x_a_sel": (3, 6, ["hi_x_auto_0", "hi_x_auto_1", "zero_x_auto_1"])},
        "mux2": {"tb.dut": (1, 1, [])},  # the forged bin: hierarchy not below its group
    }
    assert (fc.covergroups["cg_in"].bins.covered, fc.covergroups["cg_in"].bins.total) == (7, 11)
    assert (fc.covergroups["cg_in"].file, fc.covergroups["cg_in"].line) == ("tb.sv", 7)
    assert (fc.bins.covered, fc.bins.total) == (9, 14)
    assert fc.bins.pct == pytest.approx(100 * 9 / 14)


def test_covergroup_bins_never_enter_code_coverage(points):
    """Even the bin forged with the DUT's file, hierarchy and module name: code coverage
    is the one line point, the headline as without covergroups."""
    from llm4cov.sim.model.coverage import DesignModules

    modules = DesignModules(rtl=frozenset({"mux2"}), testbench=frozenset({"tb"}))
    assert [p.metric for p in dut_points(points, "tb.dut", {"mux2.sv"}, modules)] == ["line"]
    rep = summarize(points, "tb.dut", {"mux2.sv"}, modules)
    assert {m: (c.covered, c.total) for m, c in rep.metrics.items()} == {"line": (1, 1)}
    assert rep.overall == 100.0


def test_functional_coverage_in_feedback_and_reports(points, tmp_path):
    fc = functional_coverage([p for p in points if p.module != "mux2"])
    task = fixture_task("mux2")
    obs = Observation(status=Status.SUCCESS, functional=fc)
    feedback = render_observation(obs, task)
    assert ("Functional coverage of the testbench's covergroups (not part of the code "
            "coverage score): 8/13 bins (61.5%)") in feedback
    assert "- `cg_in.x_a_sel`: 3/6 bins; never hit: hi_x_auto_0, hi_x_auto_1, " \
           "zero_x_auto_1" in feedback
    markdown = coverage_markdown(obs, task)
    assert "**8/13 bins (61.54%)**" in markdown
    assert "| `cg_cls` | `cp_kind` | 1 | 2 | 50.00 | `lo[1]` |" in markdown
    html = render_html(build_report_data(points, "tb.dut", {"mux2.sv": "x\n"}), "t", obs)
    assert 'id="functional"' in html and "<code>hi_x_auto_0</code>" in html
    dat = tmp_path / "coverage.dat"
    write_ucis_xml(dat, tmp_path / "cov.xml", COVERAGE_FORMAT)
    root = etree.parse(str(tmp_path / "cov.xml")).getroot()
    bins = {(b.getparent().get("name"), b.get("name")): (
        b.get("type"), b.find(".//{*}contents").get("coverageCount"))
        for b in root.iter("{*}coverpointBin")}
    assert bins[("cp_kind", "ig")] == ("ignore", "3")
    assert bins[("cp_kind", "bad")] == ("illegal", "0")
    assert bins[("cp_a", "one")] == ("bins", "2")
    assert ("cp_kind", "rest") not in bins  # a default bin has no UCIS XML type
    assert len(bins) == 11 + 4 + 1  # cg_in, cg_cls without its default bin, mux2


def test_names_from_the_testbench_are_shown_safely():
    fc = functional_coverage(parse_coverage_dat(_write(COVERAGE_DAT.replace(
        "cg_in.cp_a.hi", "cg_in.cp_a.h`|\x1bi"))))
    text = "\n".join(functional_lines(fc))
    assert "h\\x60\\x7c\\x1bi" in text and "\x1b" not in text


def _write(text: str) -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "coverage.dat"
    path.write_bytes(text.encode())
    return path


#: The mux2 stimulus of tests/fixtures/mux2_partial_tb.sv with a covergroup sampled at
#: the three input states (sel, a) = (0, 0), (0, 1), (1, 1): cp_a hits zero and one of
#: {zero, one, hi} (2/3), cp_sel both auto bins (2/2), the cross 3 of 6: 7/11 bins.
COVERGROUP_TB = """module tb;
  logic sel, en;
  logic [1:0] a, b;
  wire  [1:0] y;
  mux2 dut (.sel(sel), .en(en), .a(a), .b(b), .y(y));
  covergroup cg_in;
    cp_a: coverpoint a { bins zero = {0}; bins one = {1}; bins hi = {[2:3]}; }
    cp_sel: coverpoint sel;
    x_a_sel: cross cp_a, cp_sel;
  endgroup
  cg_in cg = new;
  initial begin
    sel = 0; en = 0; a = 2'b00; b = 2'b00; #1; cg.sample();
    a = 2'b01; #1; cg.sample();
    sel = 1;   #1; cg.sample();
    $finish;
  end
endmodule
"""


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_verilator_5052_reports_a_testbench_covergroup_as_functional_coverage(evaluator_5052):
    """Code coverage is the mux2 stimulus' own, hand-counted in test_coverage_counts
    (line 1/1, branch 1/2, expr 2/3, toggle 3/16): the covergroup adds nothing to it."""
    obs = evaluator_5052.evaluate(fixture_task("mux2"), COVERGROUP_TB)
    assert obs.status is Status.SUCCESS, obs.log
    assert {m: (c.covered, c.total) for m, c in obs.coverage.metrics.items()} == {
        "line": (1, 1), "branch": (1, 2), "expr": (2, 3), "toggle": (3, 16)}
    fc = obs.functional
    assert (fc.bins.covered, fc.bins.total) == (7, 11)
    assert {p: (c.covered, c.total) for p, c in fc.covergroups["cg_in"].coverpoints.items()} \
        == {"cp_a": (2, 3), "cp_sel": (2, 2), "x_a_sel": (3, 6)}
