"""The pipeline run directory's records: stage rows by revision, identity checks across
reopening (no model, no simulator)."""

from __future__ import annotations

import json

import pytest

from llm4cov.pipeline.records import PipelineDir, PipelineDirError

IDENTITY = {"global": {"init": "base", "limit": None}}


def test_a_stage_benched_later_gets_a_new_revision_that_a_reopened_run_reads(tmp_path):
    run = PipelineDir(tmp_path, IDENTITY, {})
    assert run.stage("stage0") is None
    run.record_stage({"name": "stage0", "bench": {}, "wall_s": 10.0})
    run.record_stage({"name": "stage1", "bench": {"direct": {"n": 1}}, "wall_s": 5.0})
    run.record_stage({"name": "stage0", "bench": {"direct": {"n": 2}}, "wall_s": 12.5})
    again = PipelineDir(tmp_path, IDENTITY, {})
    assert again.stage("stage0") == {"name": "stage0", "revision": 1,
                                     "bench": {"direct": {"n": 2}}, "wall_s": 12.5}
    assert again.stage("stage1")["revision"] == 0
    rows = [json.loads(line) for line in (tmp_path / "stages.jsonl").read_text().splitlines()]
    assert [(r["name"], r["revision"]) for r in rows] == [("stage0", 0), ("stage1", 0),
                                                         ("stage0", 1)]


def test_another_global_identity_is_refused_with_the_changed_key(tmp_path):
    PipelineDir(tmp_path, IDENTITY, {})
    with pytest.raises(PipelineDirError, match="changed: limit"):
        PipelineDir(tmp_path, {"global": {"init": "base", "limit": 3}}, {})


def test_a_stage_resumes_when_only_its_saves_changed(tmp_path):
    """Identities recorded before saves were left out hold ``save_steps``: a resume
    without it, or with another value, is the same stage; a learning rate is not."""
    run = PipelineDir(tmp_path, IDENTITY, {})
    run.begin_stage("stage0", {"preset": 0, "train": {"learning_rate": 2e-4, "save_steps": 11,
                                                      "keep_checkpoints": 1}})
    again = PipelineDir(tmp_path, IDENTITY, {})
    again.begin_stage("stage0", {"preset": 0, "train": {"learning_rate": 2e-4}})
    again.begin_stage("stage0", {"preset": 0, "train": {"learning_rate": 2e-4,
                                                        "save_steps": 5}})
    with pytest.raises(PipelineDirError, match=r"changed: train\)"):
        again.begin_stage("stage0", {"preset": 0, "train": {"learning_rate": 5e-5,
                                                            "save_steps": 11}})
