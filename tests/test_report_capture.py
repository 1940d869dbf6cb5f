"""What ``report/capture.py`` keeps never comes from a name or path the testbench chose:
the coverage read is the run's own file (at most ``COVERAGE_MAX_BYTES``), the dump is a
regular file inside the work dir, and the capture's scratch dir does not outlive a kill.

The design is tests/fixtures/mux2 (hand count in tests/test_coverage_counts.py).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import FIXTURES, fixture_task
from llm4cov.report.capture import Capture, capture, read_coverage
from llm4cov.sim.backends.verilator import COVERAGE_MAX_BYTES, KEPT_COVERAGE
from llm4cov.sim.config import SimConfig
from llm4cov.sim.observation import Observation, Status

PARTIAL_TB = (FIXTURES / "mux2_partial_tb.sv").read_text()
#: One line point of mux2.sv at the DUT with a hit count no real run of the fixture has.
FORGED = (r"# SystemC::Coverage-3\nC '\001f\002mux2.sv\001l\0027\001n\0021\001t\002line"
          r"\001page\002v_line/mux2\001o\002block\001S\0027\001h\002tb.dut' 77777\n")


def _tb(extra: str) -> str:
    """The partial testbench with ``extra`` put before its stimulus block."""
    return PARTIAL_TB.replace("  initial begin\n", extra + "  initial begin\n", 1)


@pytest.mark.requires_verilator
def test_report_reads_the_runs_own_coverage_and_sweeps_killed_captures(tmp_path):
    root = tmp_path / "wd"
    root.mkdir()
    killed = subprocess.run(  # a capture killed while it held its scratch dir
        [sys.executable, "-c", "import os, sys; from llm4cov.sim import workdirs; "
         "workdirs.create(sys.argv[1], prefix='llm4cov-keep-'); os.kill(os.getpid(), 9)",
         str(root)], check=False)
    assert killed.returncode == -9 and len(list(root.iterdir())) == 1
    forged_files = [f"cov_{i:02d}.dat" for i in range(8)] + [KEPT_COVERAGE]
    forging = _tb("  integer fd;\n  initial begin\n" + "".join(
        f'    fd = $fopen("{name}", "w"); $fwrite(fd, "%s", S); $fclose(fd);\n'
        for name in forged_files) + "  end\n"
    ).replace("module tb;\n", f'module tb;\n  string S = "{FORGED}";\n', 1)
    cap = capture(fixture_task("mux2"), forging, SimConfig(workdir_root=str(root)),
                  tmp_path / "out")
    assert cap.observation.status is Status.SUCCESS
    counts = {p.count for p in cap.points}
    assert counts and 77777 not in counts
    assert "77777" not in (tmp_path / "out" / "coverage.dat").read_text()
    assert list(root.iterdir()) == []  # the killed one swept, this one released


def test_coverage_over_the_cap_or_not_regular_is_not_read(tmp_path):
    result = Capture(observation=Observation(status=Status.SUCCESS), points=[])
    with open(tmp_path / KEPT_COVERAGE, "wb") as big:  # sparse: no disk, no parse
        big.truncate(COVERAGE_MAX_BYTES + 1)
    read_coverage(tmp_path, None, result)
    assert (result.points, result.coverage_dat) == ([], None)
    assert result.notes == [f"{KEPT_COVERAGE} is 64 MiB, over the 64 MiB cap: not read"]
    linked = tmp_path / "linked"
    linked.mkdir()
    (tmp_path / "real.dat").write_text(FORGED.replace(r"\001", "\1").replace(r"\002", "\2")
                                       .replace(r"\n", "\n"))
    os.symlink(tmp_path / "real.dat", linked / KEPT_COVERAGE)
    read_coverage(linked, None, result)
    assert (result.points, result.coverage_dat) == ([], None)


@pytest.mark.slow  # a traced build
@pytest.mark.requires_verilator
def test_dumpfile_in_a_comment_copies_nothing_from_outside(tmp_path):
    (tmp_path / "secret.txt").write_text("SECRET\n")
    root = tmp_path / "wd"  # the work dir is wd/llm4cov-keep-*/llm4cov-*: ../../.. is tmp_path
    root.mkdir()
    tb = _tb('  // $dumpfile("../../../secret.txt")\n'
             '  initial begin $dumpfile("w.vcd"); $dumpvars; end\n')
    cap = capture(fixture_task("mux2"), tb, SimConfig(workdir_root=str(root)),
                  tmp_path / "out", trace="vcd")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["coverage.dat", "w.vcd"]
    assert cap.trace == tmp_path / "out" / "w.vcd"
    assert "$scope module dut $end" in cap.trace.read_text()
