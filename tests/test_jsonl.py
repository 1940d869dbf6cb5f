"""Durable JSONL result logs: resume by key, torn-line repair."""

from __future__ import annotations

import pytest

from llm4cov.util.jsonl import ResultLog, iter_jsonl


def test_append_skips_existing_keys_and_resumes(tmp_path):
    path = tmp_path / "results.jsonl"
    log = ResultLog(path, ("task", "sample"))
    assert log.append({"task": "a", "sample": 0, "cov": 50.0})
    assert not log.append({"task": "a", "sample": 0, "cov": 99.0})
    assert log.append({"task": "a", "sample": 1, "cov": 70.0})
    again = ResultLog(path, ("task", "sample"))
    assert ("a", 0) in again and ("a", 1) in again and len(again) == 2
    assert [r["cov"] for r in again.rows()] == [50.0, 70.0]


def test_torn_last_line_is_cut_and_rewritten(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"task": "a", "sample": 0}\n{"task": "a", "sam')
    assert [r["sample"] for r in iter_jsonl(path)] == [0]
    log = ResultLog(path, ("task", "sample"))
    assert path.read_text() == '{"task": "a", "sample": 0}\n'
    log.append({"task": "a", "sample": 1})
    assert [r["sample"] for r in iter_jsonl(path)] == [0, 1]


def test_corrupt_middle_line_is_an_error(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"a": 1}\nnot json\n{"a": 2}\n')
    with pytest.raises(ValueError, match=r"results\.jsonl:2: corrupt JSONL line"):
        list(iter_jsonl(path))
