"""Hand-made observations for the pure synthesis tests (no simulator)."""

from __future__ import annotations

from llm4cov.sim.model.observation import CoverageReport, MetricCoverage, Observation, Status


def make_obs(status: str = "success", overall: float = 0.0, log: str = "") -> Observation:
    """An observation with ``status`` and measured ``overall`` percent (one line metric)."""
    report = CoverageReport(
        dut_hier="tb.dut",
        metrics={"line": MetricCoverage(covered=round(overall), total=100)},
        overall=overall,
    )
    return Observation(status=Status(status), coverage=report, log=log)
