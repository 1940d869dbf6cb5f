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
from lxml import html as lxml_html

from conftest import EXAMPLES, FIXTURES
from llm4cov.cli.app import main
from llm4cov.report.data import build_report_data
from llm4cov.report.html import highlight_lines, write_html
from llm4cov.sim.coverage import parse_coverage_dat
from llm4cov.sim.exclusions import parse_rules

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


def check_page(path: Path) -> lxml_html.HtmlElement:
    """Parse the page; every in-page link has its target and nothing is fetched."""
    page = lxml_html.parse(str(path)).getroot()
    ids = {e.get("id") for e in page.iter() if e.get("id")}
    hrefs = [a.get("href") for a in page.iter("a")]
    assert hrefs and all(h.startswith("#") and h[1:] in ids for h in hrefs)
    assert not page.xpath("//script|//link|//img|//iframe")
    return page


def test_page_links_resolve_and_need_no_network(tmp_path):
    data = build_report_data(POINTS, "tb.dut", SOURCES)
    page = check_page(write_html(data, tmp_path, "mux2"))
    row = page.get_element_by_id("f0-L10")
    assert row.get("class") == "partial"
    first = page.xpath("//h2[@id='uncovered']/following-sibling::table[1]//a")[0]
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
    hier = page.xpath("//h2[@id='hierarchy']/following-sibling::table[1]//code/text()")
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
    assert json.loads((out / "coverage" / "links.json").read_text()) == {
        "local/mux2": "coverage/local_mux2/index.html"}
    check_page(out / "coverage" / "local_mux2" / "index.html")
    assert "href='coverage/local_mux2/index.html'" in (out / "report.html").read_text()
