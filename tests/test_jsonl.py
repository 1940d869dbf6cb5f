"""Durable JSONL result logs: resume by key, torn-line repair."""

from __future__ import annotations

import pytest

from llm4cov.util.jsonl import (
    ResultLog,
    bounded_lines,
    iter_json_objects,
    iter_jsonl,
    json_line,
)


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


def test_a_torn_line_longer_than_a_read_block_is_cut_at_the_last_newline(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"a": 1}\n{"a": "' + "x" * 200_000)
    ResultLog(path, ("a",))
    assert path.read_text() == '{"a": 1}\n'
    path.write_text("y" * 100_000)  # no newline at all: nothing whole
    ResultLog(path, ("a",))
    assert path.read_text() == ""


def test_a_line_over_the_bound_is_skipped_unread(tmp_path, monkeypatch):
    """An input record over the bound is named (its line number) and skipped, the
    records after it still read; the long line is never held whole."""
    path = tmp_path / "tasks.jsonl"
    path.write_text('{"id": 1}\n{"id": "' + "z" * 5000 + '"}\n\n{"id": 3}\n')
    with path.open() as fh:
        assert [(n, line and len(line)) for n, line in bounded_lines(fh, 1000)] == [
            (1, 10), (2, None), (3, 1), (4, 10)]
    rows = list(iter_json_objects(path))
    assert [(n, r) for n, r, _ in rows] == [(1, {"id": 1}), (2, {"id": "z" * 5000}),
                                            (4, {"id": 3})]
    monkeypatch.setattr("llm4cov.util.jsonl.MAX_LINE_CHARS", 1000)
    assert [(n, r, why[:8]) for n, r, why in iter_json_objects(path)] == [
        (1, {"id": 1}, ""), (2, None, "over 0 M"), (4, {"id": 3}, "")]
    with pytest.raises(ValueError, match=r"tasks\.jsonl:2: a JSONL line over"):
        list(iter_jsonl(path))


def test_corrupt_middle_line_is_an_error(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"a": 1}\nnot json\n{"a": 2}\n')
    with pytest.raises(ValueError, match=r"results\.jsonl:2: corrupt JSONL line"):
        list(iter_jsonl(path))


def test_remove_tool_error_rounds_cuts_the_rest_of_their_samples(tmp_path):
    from llm4cov.bench.runner import remove_tool_error_rounds

    log = ResultLog(tmp_path / "results.jsonl", ("arm", "task_id", "sample", "round"))
    rows = [{"arm": "m", "task_id": t, "sample": s, "round": r,
             "tool_error": (t, s, r) == ("a", 0, 1)}
            for t in ("a", "b") for s in (0, 1) for r in range(3)]
    for row in rows:
        log.append(row)
    # sample (a, 0): round 1 failed in the tool; round 2 was prompted with that failure
    assert remove_tool_error_rounds(log) == 2
    kept = [(r["task_id"], r["sample"], r["round"]) for r in log.rows()]
    assert kept == [(t, s, r) for t in ("a", "b") for s in (0, 1) for r in range(3)
                    if (t, s) != ("a", 0) or r == 0]
    assert len(log) == 10 and ("m", "a", 0, 1) not in log
    assert log.append({**rows[1], "tool_error": False})  # the key is free again
    assert remove_tool_error_rounds(log) == 0
    assert not (tmp_path / ".results.jsonl.tmp").exists()


def test_a_row_with_a_lone_surrogate_is_written_and_reads_back_equal(tmp_path):
    """A lone surrogate (text read with ``surrogateescape``, a JSON ``\\udc80`` escape)
    cannot be UTF-8: the row is written with non-ASCII escaped (a thirty-ninth red
    team's answer ended a bench run here); other rows stay readable UTF-8."""
    path = tmp_path / "r.jsonl"
    log = ResultLog(path, ("task", "sample"))
    assert log.append({"task": "t", "sample": 0, "text": "é \udc80 ok"})
    assert log.append({"task": "t", "sample": 1, "text": "é"})
    assert [r["text"] for r in ResultLog(path, ("task", "sample")).rows()] == [
        "é \udc80 ok", "é"]
    assert path.read_bytes().decode("utf-8").splitlines()[1].endswith('"text": "é"}')
    # the same for the training data files (synth export, LLaMA-Factory data)
    assert json_line({"t": "é\udc80"}) == '{"t": "\\u00e9\\udc80"}\n'
    assert json_line({"t": "é"}) == '{"t": "é"}\n'
