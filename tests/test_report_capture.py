"""What ``report/capture.py`` keeps never comes from a name or path the testbench chose:
the coverage read is the run's own file (at most ``COVERAGE_MAX_BYTES``), the dump is a
regular file inside the work dir, and the capture's scratch dir does not outlive a kill.

The design is tests/fixtures/mux2 (hand count in tests/test_coverage_counts.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from conftest import EXAMPLES, FIXTURES, example_task, fixture_task
from llm4cov.report.capture import Capture, capture, read_coverage
from llm4cov.sim.backends.verilator import COVERAGE_MAX_BYTES, KEPT_COVERAGE
from llm4cov.sim.backends.verilator.coverage_dat import COVERAGE_FORMAT
from llm4cov.sim.config import SimConfig
from llm4cov.sim.model.observation import Observation, Status

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
        [sys.executable, "-c", "import os, sys; from llm4cov.sim.safety import workdirs; "
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
    result = Capture(observation=Observation(status=Status.SUCCESS), points=[],
                     coverage_format=COVERAGE_FORMAT)
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


@pytest.mark.requires_verilator
def test_a_worker_returns_the_runs_own_coverage_data(tmp_path):
    """SimCall(keep_coverage=True) through a real worker process, OS sandbox on: the
    coverage data is the run's own file (the forged files the testbench wrote are not
    it), it gives the very counts the observation scored, and nothing is left behind."""
    from llm4cov.exec.local import LocalExecutor
    from llm4cov.report.capture import from_observation
    from llm4cov.sim.model.call import SimCall
    from llm4cov.sim.model.coverage import summarize

    root = tmp_path / "wd"
    root.mkdir()
    forging = _tb("  integer fd;\n  initial begin\n"
                  f'    fd = $fopen("{KEPT_COVERAGE}", "w"); $fwrite(fd, "%s", S); '
                  "$fclose(fd);\n  end\n"
                  ).replace("module tb;\n", f'module tb;\n  string S = "{FORGED}";\n', 1)
    task = fixture_task("mux2")
    with LocalExecutor(1, SimConfig(workdir_root=str(root))) as sims:
        obs = asyncio.run(sims.simulate_call(SimCall(task, forging, keep_coverage=True)))
    assert obs.status is Status.SUCCESS and obs.coverage_data is not None
    assert "coverage_data" not in obs.model_dump()  # never in a round record or the cache
    cap = from_observation(obs, tmp_path / "out")
    assert 77777 not in {p.count for p in cap.points}
    sources = {f.name: f.content for f in task.rtl_files}
    assert summarize(cap.points, cap.dut_hier, sources, cap.modules) == obs.coverage
    assert (tmp_path / "out" / "coverage.dat").is_file()
    assert list(root.iterdir()) == []


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_gen_reports_come_from_the_rounds_own_runs(tmp_path, monkeypatch):
    """gen with every report: as many simulations as rounds (it used to simulate the
    best testbench once more for the reports), and OUT/coverage.dat is the scored run's."""
    from llm4cov.cli.app import main
    from llm4cov.sim.backends.verilator import VerilatorBackend
    from llm4cov.sim.backends.verilator.coverage_dat import parse_coverage_dat
    from llm4cov.sim.model.coverage import summarize
    from llm4cov.sim.model.observation import Observation as Obs

    runs = tmp_path / "runs.txt"
    real_run = VerilatorBackend.run

    def counted(self, task, tb, workdir):  # the real run, counted (workers are forked)
        with open(runs, "a") as log:
            log.write("run\n")
        return real_run(self, task, tb, workdir)

    monkeypatch.setattr(VerilatorBackend, "run", counted)
    out = tmp_path / "gen"
    code = main(["gen", str(EXAMPLES / "traffic_fsm"), "--out", str(out), "--rounds", "2",
                 "--no-cache", "--lcov", str(out / "cov.info"), "--ucis", str(out / "u.xml")])
    assert code == 0
    assert runs.read_text().count("run") == 2
    best = json.loads((out / "run.json").read_text())["best_round"]
    record = json.loads((out / "rounds" / f"round_{best}.json").read_text())
    scored = Obs.model_validate(record["observation"])
    task = example_task("traffic_fsm")
    points = parse_coverage_dat(out / "coverage.dat")
    assert summarize(points, "tb.dut", {f.name: f.content for f in task.rtl_files}
                     ).metrics == scored.coverage.metrics
    assert (out / "html" / "index.html").is_file() and (out / "u.xml").is_file()
