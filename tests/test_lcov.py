"""LCOV and UCIS XML exports (report/lcov.py) of the hand-counted mux2 design.

mux2 partial testbench: the always_comb block (line 9) ran 7 times; `if (sel && en)`
(line 10) never took its then branch, its else (line 11) 7 times.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from lxml import etree

from conftest import FIXTURES
from llm4cov.report.lcov import lcov_text, write_ucis_xml
from llm4cov.sim.backends.verilator.coverage_dat import COVERAGE_FORMAT, parse_coverage_dat
from llm4cov.sim.model.exclusions import parse_rules

DAT = FIXTURES / "report" / "mux2_partial.coverage.dat"
MUX2 = FIXTURES / "mux2" / "mux2.sv"
SOURCES = {"mux2.sv": MUX2.read_text()}


def test_lcov_records_match_the_hand_count():
    text = lcov_text(parse_coverage_dat(DAT), "tb.dut", SOURCES, {"mux2.sv": MUX2})
    assert text.splitlines() == [
        "TN:llm4cov",
        f"SF:{MUX2}",
        "BRDA:10,0,0,0",
        "BRDA:11,0,1,7",
        "BRF:2",
        "BRH:1",
        "DA:9,7",
        "LF:1",
        "LH:1",
        "end_of_record",
    ]


def test_lcov_honours_exclusions():
    text = lcov_text(parse_coverage_dat(DAT), "tb.dut", SOURCES, {"mux2.sv": MUX2},
                     parse_rules(["mux2.sv:10 branch"]))
    assert "BRF:0" in text and "BRDA" not in text and "DA:9,7" in text


@pytest.mark.skipif(shutil.which("genhtml") is None, reason="genhtml (Debian lcov) not installed")
def test_genhtml_accepts_the_tracefile(tmp_path):
    info = tmp_path / "mux2.info"
    info.write_text(lcov_text(parse_coverage_dat(DAT), "tb.dut", SOURCES, {"mux2.sv": MUX2}))
    done = subprocess.run(["genhtml", "--branch-coverage", "-o", str(tmp_path / "out"),
                           str(info)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "lines......: 100.0% (1 of 1 line" in done.stdout
    assert "branches...: 50.0% (1 of 2 branches)" in done.stdout
    assert (tmp_path / "out" / "index.html").exists()


def test_ucis_xml_names_the_design_files(tmp_path):
    assert write_ucis_xml(DAT, tmp_path / "mux2.xml", COVERAGE_FORMAT) == 0
    root = etree.parse(str(tmp_path / "mux2.xml")).getroot()
    assert root.tag == "UCIS"
    assert {e.get("fileName") for e in root.iter("sourceFiles")} >= {"mux2.sv", "tb.sv"}


def test_ucis_counts_points_pyucis_cannot_read(tmp_path, capsys):
    """fsmx.coverage.dat has two expression points on `MODE == 32'sh1`: a quote."""
    dat = FIXTURES / "report" / "fsmx.coverage.dat"
    assert write_ucis_xml(dat, tmp_path / "f.xml", COVERAGE_FORMAT) == 2
    assert capsys.readouterr().out == ""
