"""The annotated HTML report (report/data.py, report/html.py) and the CLI report flags.

Values are the hand count of tests/fixtures/mux2 with the partial testbench
(tests/test_coverage_counts.py): line 1/1, branch 1/2, expr 2/3, toggle 3/16.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from lxml import etree as lxml_etree
from lxml import html as lxml_html

from conftest import EXAMPLES, FIXTURES
from llm4cov.cli.app import main
from llm4cov.report.data import build_report_data
from llm4cov.report.html import SCRIPT, highlight_lines, write_html
from llm4cov.sim.backends.verilator.coverage_dat import parse_coverage_dat
from llm4cov.sim.model.exclusions import ProvenUnreachable, parse_rules

REPORT = FIXTURES / "report"
SOURCES = {"mux2.sv": (FIXTURES / "mux2" / "mux2.sv").read_text()}
POINTS = parse_coverage_dat(REPORT / "mux2_partial.coverage.dat")


def test_report_data_matches_the_hand_count():
    data = build_report_data(POINTS, "tb.dut", SOURCES)
    got = {k: (v.covered, v.total) for k, v in data.summary.metrics.items()}
    assert got == {"line": (1, 1), "branch": (1, 2), "expr": (2, 3), "toggle": (3, 16)}
    status = {line.number: line.status for line in data.files["mux2.sv"]}
    # 3: sel toggled 0->1 only; 4: en never; 9: the always_comb ran; 10: then branch and
    # one expression term missed, two terms seen; 11: the else ran; 1-2: no points
    assert [status[n] for n in (1, 3, 4, 9, 10, 11)] == [
        "", "partial", "uncovered", "covered", "partial", "covered"]
    toggles = {t.signal: (t.bits, t.covered, t.total) for t in data.toggles}
    assert toggles == {"sel": ("", 1, 2), "en": ("", 0, 2), "a": ("[1:0]", 1, 4),
                       "b": ("[1:0]", 0, 4), "y": ("[1:0]", 1, 4)}
    assert data.uncovered[0].detail == "then branch of the if at mux2.sv:10 never taken"


def test_excluded_points_are_marked_not_counted():
    """A rule matches the line Verilator gives a point: both branches of the if at
    line 10 (the else is shown at its own line 11) and the three expression terms."""
    data = build_report_data(POINTS, "tb.dut", SOURCES, parse_rules(["mux2.sv:10"]))
    assert data.excluded == {"branch": 2, "expr": 3}
    assert {k: (v.covered, v.total) for k, v in data.summary.metrics.items()} == {
        "line": (1, 1), "toggle": (3, 16)}
    assert [data.files["mux2.sv"][n - 1].status for n in (9, 10, 11)] == [
        "covered", "excluded", "excluded"]


def test_highlighting_keeps_one_fragment_per_line():
    text = "/* a\n b */ module m;\nendmodule"
    lines = highlight_lines(text)
    assert len(lines) == 3
    assert lines[0] == '<span class="cm">/* a</span>'
    assert '<span class="k">module</span>' in lines[1]


def test_a_file_ending_with_an_empty_line_renders(tmp_path):
    """realbench sdc_controller's files end with "endmodule\n\n": the report used to stop
    with "list object has no element" (one highlighted fragment short)."""
    sources = {"mux2.sv": SOURCES["mux2.sv"] + "\n"}
    data = build_report_data(POINTS, "tb.dut", sources)
    assert data.files["mux2.sv"][-1].text == ""
    check_page(write_html(data, tmp_path, "mux2"))


def check_page(path: Path) -> lxml_html.HtmlElement:
    """Parse the page; every in-page link has its target, nothing is fetched, and the
    only script is the report's own fixed one (nothing from the run is in a script)."""
    page = lxml_html.parse(str(path)).getroot()
    ids = {e.get("id") for e in page.iter() if e.get("id")}
    hrefs = [a.get("href") for a in page.iter("a")]
    assert hrefs and all(h.startswith("#") and h[1:] in ids for h in hrefs)
    assert not page.xpath("//link|//img|//iframe|//object|//embed|//*[@src]")
    assert [s.text for s in page.xpath("//script")] == [SCRIPT]
    assert not [a for e in page.iter() for a in e.attrib if a.startswith("on")]
    return page


def test_page_links_resolve_and_need_no_network(tmp_path):
    data = build_report_data(POINTS, "tb.dut", SOURCES)
    page = check_page(write_html(data, tmp_path, "mux2"))
    row = page.get_element_by_id("f0-L10")
    assert row.get("class") == "partial"
    first = page.xpath("//h2[@id='uncovered']/ancestor::details[1]//table[1]//a")[0]
    assert (first.get("href"), first.text) == ("#f0-L10", "mux2.sv:10")


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed")
def test_page_loads_in_headless_chromium_without_console_errors(tmp_path):
    data = build_report_data(POINTS, "tb.dut", SOURCES)
    page = write_html(data, tmp_path, "mux2")
    done = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Uncovered items (9)" in done.stdout
    assert "CONSOLE" not in done.stderr, done.stderr[-2000:]


@pytest.mark.requires_verilator
def test_sim_cli_writes_html_lcov_and_keeps_workdir(tmp_path, capsys):
    excl = tmp_path / "excl.txt"
    excl.write_text("mux2.sv:3-7 toggle\n")
    code = main(["sim", "--rtl", str(FIXTURES / "mux2"), "--tb",
                 str(FIXTURES / "mux2_partial_tb.sv"), "--html", str(tmp_path / "html"),
                 "--lcov", str(tmp_path / "mux2.info"), "--exclude", str(excl),
                 "--keep-workdir", "--json"])
    assert code == 0
    printed = capsys.readouterr()
    obs = json.loads(printed.out)
    assert {k: (v["covered"], v["total"]) for k, v in obs["coverage"]["metrics"].items()} == {
        "line": (1, 1), "branch": (1, 2), "expr": (2, 3)}
    err = printed.err
    page = check_page(tmp_path / "html" / "index.html")
    assert page.get_element_by_id("f0-L3").get("class") == "excluded"
    assert (tmp_path / "html" / "coverage.dat").exists()
    assert "BRDA:11,0,1,7" in (tmp_path / "mux2.info").read_text()
    kept = [line for line in err.splitlines() if line.startswith("kept work dir")]
    workdir = Path(kept[0].rsplit(": ", 1)[1])
    assert (workdir / "obj").is_dir() and (workdir / "coverage.dat").is_file()
    shutil.rmtree(workdir.parent)


@pytest.mark.slow
@pytest.mark.requires_verilator
def test_sim_trace_keeps_a_vcd_of_the_design(tmp_path):
    code = main(["sim", "--rtl", str(FIXTURES / "mux2"), "--tb",
                 str(FIXTURES / "mux2_partial_tb.sv"), "--trace", "vcd",
                 "--html", str(tmp_path)])
    assert code == 0
    vcd = (tmp_path / "llm4cov_trace.vcd").read_text()
    assert "$scope module dut $end" in vcd and " sel $end" in vcd


@pytest.mark.slow
@pytest.mark.requires_verilator
def test_gen_writes_the_html_report_of_hier_acc(tmp_path):
    out = tmp_path / "hier"
    assert main(["gen", str(EXAMPLES / "hier_acc"), "--out", str(out), "--rounds", "1"]) == 0
    page = check_page(out / "html" / "index.html")
    hier = page.xpath("//h2[@id='hierarchy']/ancestor::details[1]//td[1]/code/@title")
    assert hier == ["tb.dut", "tb.dut.stage_a", "tb.dut.stage_b"]
    assert (out / "coverage.dat").exists()
    assert json.loads((out / "run.json").read_text())["best_round"] == 1


def test_best_rows_prefer_sim_pass_then_cov_pass_then_coverage():
    from llm4cov.report.bench_links import best_rows

    def row(task, sim, cov_pass, cov, response="r"):
        return {"task_id": task, "sim_pass": sim, "cov_pass": cov_pass, "coverage": cov,
                "response": response, "testbench_sha256": "x", "tag": (sim, cov_pass, cov)}

    rows = [row("a", False, False, 0.0), row("a", True, False, 90.0),
            row("a", True, True, 80.0), row("a", True, True, 80.0, response=None),
            row("b", True, False, 10.0), row("b", True, False, 10.0)]
    best = best_rows(rows)
    assert best["a"]["tag"] == (True, True, 80.0)
    assert best["b"] is rows[4]  # the earliest on ties


@pytest.mark.slow
@pytest.mark.requires_verilator
def test_bench_links_the_coverage_report_of_each_task(tmp_path):
    from conftest import fixture_task

    tasks = tmp_path / "mux2.jsonl"
    tasks.write_text(fixture_task("mux2").model_dump_json() + "\n")
    out = tmp_path / "bench"
    assert main(["bench", "--tasks", str(tasks), "--samples", "1", "--rounds", "1",
                 "--out", str(out), "--workers", "1", "--no-progress", "--baselines", "",
                 "--coverage-html"]) == 0
    page = "coverage/local_mux2-ae65c64c44aef565/index.html"  # tasks.names.task_path_part
    assert json.loads((out / "coverage" / "links.json").read_text()) == {"local/mux2": page}
    check_page(out / page)
    assert f"href='{page}'" in (out / "report.html").read_text()


TRAFFIC = {"traffic_light.sv": (EXAMPLES / "traffic_fsm" / "traffic_light.sv").read_text()}
TRAFFIC_POINTS = parse_coverage_dat(REPORT / "traffic_fsm.coverage.dat")
#: What the formal policy proved on examples/traffic_fsm (its round annotation).
DEFAULT_37 = ProvenUnreachable(
    file="traffic_light.sv", line=37, kind="line", goal="case item", metric="line",
    item="case item default of the case at traffic_light.sv:18 never executed")
FSMX = {"fsmx.sv": (REPORT / "fsmx" / "fsmx.sv").read_text()}


def test_proven_unreachable_points_are_unr_beside_an_unchanged_headline(tmp_path):
    """traffic_fsm's best formal round: only the `default:` (line 37) is missed, and
    k-induction proved it unreachable: line 4/5 stays the headline (95%), UNR apart
    (100% with it excluded); the line is `unr`, not uncovered."""
    data = build_report_data(TRAFFIC_POINTS, "tb.dut", TRAFFIC, proven=[DEFAULT_37])
    assert (data.summary.metrics["line"].covered, data.summary.metrics["line"].total) == (4, 5)
    assert data.summary.overall == 95.0
    assert data.unreachable == {"line": 1} and data.overall_unreachable_excluded() == 100.0
    assert [(i.line, i.kind) for i in data.unreachable_items] == [(37, "line")]
    assert data.uncovered == []
    assert data.files["traffic_light.sv"][36].status == "unr"
    page = check_page(write_html(data, tmp_path, "traffic"))
    assert page.get_element_by_id("f0-L37").get("class") == "unr"
    unr = page.xpath("//h2[@id='unr']/ancestor::details[1]//table//a/text()")
    assert unr == ["traffic_light.sv:37"]
    assert "with the 1 proven-unreachable (UNR) point excluded (separate figure): " \
        "100.00%" in page.text_content()
    plain = build_report_data(TRAFFIC_POINTS, "tb.dut", TRAFFIC)  # no proof: uncovered
    assert [i.line for i in plain.uncovered] == [37] and plain.unreachable == {}


def test_markdown_lists_unr_and_parameter_constant_misses_apart():
    from llm4cov.sim.model.coverage import summarize
    from llm4cov.sim.model.observation import Observation, Status
    from llm4cov.sim.report import coverage_markdown
    from llm4cov.tasks.model import SourceFile, Task

    data = build_report_data(TRAFFIC_POINTS, "tb.dut", TRAFFIC, proven=[DEFAULT_37])
    obs = Observation(status=Status.SUCCESS, coverage=data.summary)
    task = Task(id="local/traffic_fsm", source="local", dut_module_name="traffic_light",
                rtl_files=[SourceFile(name=n, content=t) for n, t in TRAFFIC.items()])
    text = coverage_markdown(obs, task, uncovered=data.uncovered, constant=[],
                             unreachable=data.unreachable_items,
                             unreachable_points=data.unreachable)
    assert "overall **95.00%**" in text
    assert "- with 1 proven-unreachable (UNR) point excluded (separate figure): 100.00%" in text
    assert "| line | 4 | 5 | 80.00 | 1 | 0 |" in text
    assert ("- `traffic_light.sv:37 [line] case item default of the case at "
            "traffic_light.sv:18 never executed | default: state <= RED;` UNR") in text
    assert "## Uncovered" not in text
    # fsmx: `if (MODE == 1)` (line 29) never taken while MODE=0 made it false, and the
    # term `MODE == 1` never true while seen false: 2 misses apart, hand count 76.07%
    points = parse_coverage_dat(REPORT / "fsmx.coverage.dat")
    rep = summarize(points, "tb.dut", FSMX)
    assert rep.constant == {"branch": 1, "expr": 1}
    assert (rep.overall, rep.overall_without_constant()) == (69.4048, 76.0714)
    fsmx = build_report_data(points, "tb.dut", FSMX)
    assert sorted((i.line, i.kind) for i in fsmx.constant_items) == [(24, "expr"),
                                                                       (29, "branch")]
    # both ?: arms of line 24 stay plain misses: that code never ran, so which arm
    # the parameter kills is unknown
    assert sorted(i.detail.split(" at ")[0] for i in fsmx.uncovered if i.line == 24
                  and i.kind == "branch") == ["false arm of the ?: on `MODE == 1`",
                                              "true arm of the ?: on `MODE == 1`"]
    fsmx_task = task.model_copy(update={"id": "local/fsmx", "rtl_files": [
        SourceFile(name="fsmx.sv", content=FSMX["fsmx.sv"])]})
    text = coverage_markdown(Observation(status=Status.SUCCESS, coverage=rep), fsmx_task,
                             uncovered=fsmx.uncovered, constant=fsmx.constant_items)
    assert "overall **69.40%**" in text
    assert "- with 2 parameter-constant misses excluded (separate figure): 76.07%" in text
    apart = text.split("## Unreachable under the parameters")[1]
    assert "fsmx.sv:29 [branch] then branch of the if at fsmx.sv:29 never taken" in apart
    assert "fsmx.sv:29" not in text.split("## Uncovered")[1].split("## Unreachable")[0]


def test_ucis_marks_the_bins_of_proven_unreachable_points(tmp_path):
    from llm4cov.report.lcov import UNR_REASON, mark_unreachable_ucis, write_ucis_xml
    from llm4cov.sim.backends.verilator.coverage_dat import COVERAGE_FORMAT
    from llm4cov.sim.model.exclusions import unreachable_misses

    xml = tmp_path / "u.xml"
    write_ucis_xml(REPORT / "traffic_fsm.coverage.dat", xml, COVERAGE_FORMAT)
    unr = unreachable_misses(TRAFFIC_POINTS, [DEFAULT_37], TRAFFIC)
    assert [(p.metric, p.line, p.comment) for p in unr] == [("line", 37, "case")]
    assert mark_unreachable_ucis(xml, unr) == 1
    page = lxml_etree.parse(str(xml))
    marked = page.xpath("//bin[@excluded='true']")
    assert [b.get("excludedReason") for b in marked] == [UNR_REASON]
    assert marked[0].getparent().find("id").get("line") == "37"


_PROBE = """<script>
var table = document.getElementById("toggles").closest("details").querySelector("table.sort");
var names = function () { return Array.from(table.tBodies[0].rows, function (r) {
  return r.cells[1].textContent; }).join(","); };
var hits = table.tHead.rows[0].cells[3];
hits.click(); document.body.setAttribute("data-up", names());
hits.click(); document.body.setAttribute("data-down", names());
var fold = document.querySelector("tr[data-d='1'] button.fold"); fold.click();
document.body.setAttribute("data-wide", document.documentElement.scrollWidth);
document.body.setAttribute("data-hidden", Array.from(document.querySelectorAll(
  "table.tree tr[hidden] td:first-child code"), function (c) { return c.title; }).join(","));
</script></body>"""


@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium not installed")
def test_tables_sort_and_the_hierarchy_folds_in_headless_chromium(tmp_path):
    """The report's own script, run by Chromium: clicking "toggles hit" sorts by the
    hit fraction (ascending, then descending), and folding an instance hides exactly
    the instances below it. At 1,400 px nothing scrolls sideways, even with a 400-
    character source line."""
    from dataclasses import replace

    sub = [replace(p, hier=h) for p in POINTS if p.hier == "tb.dut"
           for h in ("tb.dut", "tb.dut.a", "tb.dut.a.b", "tb.dut.c")]
    long_line = {"mux2.sv": SOURCES["mux2.sv"] + "// " + "x" * 400 + "\n"}
    data = build_report_data(sub, "tb.dut", long_line)
    page = write_html(data, tmp_path, "mux2")
    page.write_text(page.read_text().replace("</body>", _PROBE, 1))
    done = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,900",
         "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    body = lxml_html.fromstring(done.stdout).find("body")
    assert int(body.get("data-wide")) <= 1400
    rows = sorted((t for t in data.toggles if t.missing), key=lambda t: t.covered / t.total)
    assert body.get("data-up") == ",".join(t.signal for t in rows)
    down = sorted(rows, key=lambda t: t.covered / t.total, reverse=True)
    assert body.get("data-down") == ",".join(t.signal for t in down)
    assert body.get("data-hidden") == "tb.dut.a.b"
    assert "CONSOLE" not in done.stderr, done.stderr[-2000:]
