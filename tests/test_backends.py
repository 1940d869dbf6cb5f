"""The simulator-backend seam: a registry that names its backends, and an evaluator
that drives any backend (here a fake one: no simulator needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES, fixture_task
from llm4cov.sim.backends import UnknownBackend, backend_names, get_backend, register_backend
from llm4cov.sim.backends.base import RunOutcome
from llm4cov.sim.call import SimCall
from llm4cov.sim.config import SimConfig
from llm4cov.sim.coverage import Point
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.observation import EndReason, Status
from llm4cov.sim.process import ProcessResult, Sandbox

CONFIG = SimConfig(sandbox=False, result_cache=False, static_check=False, precheck=False)


class FakeBackend:
    """Builds nothing; every run ends by ``$finish`` with one of two lines covered."""

    name = "fake"
    simulator = "fake 1.0"
    version = "fake 1.0"
    has_solver = False
    reserved_names = frozenset({"driver.sv"})
    retry_without = ()

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.staged: list[Path] = []
        self.built: list[str] = []

    def env(self) -> dict[str, str]:
        return {}

    def check_sandbox(self) -> Sandbox:
        return Sandbox()

    def preprocess_command(self, task, tb) -> list[str]:
        return ["true"]

    def stage(self, workdir: Path) -> None:
        self.staged.append(workdir)

    def build(self, task, tb, plan, workdir, drop=()) -> ProcessResult:
        self.built.append(tb.name)
        return ProcessResult(returncode=0, output="", timed_out=False, wall_s=0.0,
                             output_bytes=0)

    def tool_failure(self, build, files) -> str | None:
        return None

    def run(self, task, tb, workdir) -> RunOutcome:
        done = ProcessResult(returncode=0, output=f"ran in {workdir}\n", timed_out=False,
                             wall_s=0.5, output_bytes=10)
        return RunOutcome(process=done, end={"end": "finish"}, problem=None,
                          output="ran\n", notes=["fake run"], tb_errors=1, sim_seconds=None)

    def coverage(self, workdir, outcome) -> tuple[list[Point], list[str]]:
        points = [Point("line", "mux2.sv", line, "block", "tb.dut", count, module="mux2")
                  for line, count in ((10, 1), (11, 0))]
        return points, []

    def classify(self, outcome, has_coverage) -> tuple[Status, EndReason, list[str]]:
        return Status.SUCCESS, EndReason.FINISH, ["fake end"]


def test_an_unknown_backend_names_the_valid_ones():
    with pytest.raises(UnknownBackend, match=r"backend 'nope'; valid: .*verilator"):
        get_backend("nope", CONFIG)


def test_a_registered_backend_drives_the_evaluator(monkeypatch):
    monkeypatch.setattr("llm4cov.sim.backends._BACKENDS", {})
    register_backend("fake", FakeBackend)
    assert backend_names() == ["fake"]
    backend = get_backend("fake", CONFIG)
    task = fixture_task("mux2")
    call = SimCall(task, (FIXTURES / "mux2_partial_tb.sv").read_text(), tb_name="driver.sv")
    obs = Evaluator(CONFIG, backend=backend).evaluate_call(call)
    assert (obs.status, obs.end_reason, obs.simulator) == (Status.SUCCESS, EndReason.FINISH,
                                                            "fake 1.0")
    assert obs.coverage.metrics["line"].covered == 1 and obs.coverage.metrics["line"].total == 2
    assert obs.tb_error_count == 1 and obs.sim_time == "" and obs.run_s == 0.5
    assert "fake run" in obs.notes and "fake end" in obs.notes
    assert "== simulation output ==\nran\n" in obs.log
    assert len(backend.staged) == 1 and backend.built == ["llm4cov_driver.sv"]
