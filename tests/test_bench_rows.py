"""The typed bench row: ``results.jsonl`` lines read back and write out byte-identical."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from conftest import fixture_task
from llm4cov.bench.rows import ResultRow, make_row
from llm4cov.policies.base import SamplingParams
from llm4cov.sim.model.observation import (
    CoverageReport,
    EndReason,
    MetricCoverage,
    Observation,
    Status,
)
from llm4cov.util.jsonl import ResultLog


def _observation() -> Observation:
    metrics = {"line": MetricCoverage(covered=3, total=4),
               "toggle": MetricCoverage(covered=5, total=8)}
    return Observation(
        status=Status.SUCCESS, end_reason=EndReason.FINISH, simulator="verilator 5",
        coverage_options=["--coverage-line"], seed=7, build_s=1.5, run_s=0.25,
        coverage=CoverageReport(dut_hier="tb.dut", metrics=metrics, overall=68.75),
    )


def test_a_written_row_reads_back_to_the_same_line(tmp_path):
    row = make_row(arm="m", task=fixture_task("mux2"), sample=1, round_=0,
                   observation=_observation(), testbench="module tb; endmodule\n",
                   simulator="verilator 5", wall_s=2.00049, model="m", response="```x```",
                   prompt_tokens=10, completion_tokens=5, gen_s=0.5,
                   params=SamplingParams(), seed=3)
    log = ResultLog(tmp_path / "results.jsonl", ("arm", "task_id", "sample", "round"))
    log.append(row.as_json())
    line = (tmp_path / "results.jsonl").read_text(encoding="utf-8").rstrip("\n")
    stored = json.loads(line)
    assert stored["status"] == "success" and stored["end_reason"] == "finish"
    assert stored["wall_s"] == 2.0 and stored["metrics"] == {"line": [3, 4], "toggle": [5, 8]}
    again = ResultRow.model_validate(stored)
    assert again == row and again.simulated
    assert json.dumps(again.as_json(), ensure_ascii=False, sort_keys=True) == line


def test_a_row_with_an_unknown_key_or_a_wrong_type_is_refused():
    stored = make_row(arm="m", task=fixture_task("mux2"), sample=0, round_=0,
                      observation=_observation(), testbench=None, simulator="v",
                      wall_s=0.0, model="m").as_json()
    assert not ResultRow.model_validate(stored).simulated
    with pytest.raises(ValidationError, match="extra"):
        ResultRow.model_validate({**stored, "extra": 1})
    with pytest.raises(ValidationError, match="sample"):
        ResultRow.model_validate({**stored, "sample": "first"})


def test_policy_annotations_are_kept_only_when_given():
    def stored(annotations):
        return make_row(arm="formal", task=fixture_task("mux2"), sample=0, round_=1,
                        observation=_observation(), testbench=None, simulator="v",
                        wall_s=0.0, model="formal", annotations=annotations).as_json()

    assert "annotations" not in stored(None) and "annotations" not in stored({})
    verdicts = {"formal": {"reached": 1, "unreachable": 0, "unknown": 2,
                           "unreachable_items": []}}
    row = stored(verdicts)
    assert row["annotations"] == verdicts
    assert ResultRow.model_validate(row).as_json() == row
