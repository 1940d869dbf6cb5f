"""ROUGE-L contamination filter with hand-checked values (paper, "Contamination control")."""

from __future__ import annotations

import pytest
from rouge_score import rouge_scorer

from conftest import EXAMPLES, example_task, shared_path
from llm4cov.synth.contamination import (
    PHASES,
    ContaminationIndex,
    Match,
    rouge_l,
    rouge_tokens,
)
from llm4cov.tasks.loaders import load_tasks


def test_rouge_tokens_lowercase_alphanumeric_runs():
    assert rouge_tokens("module Foo(input [7:0] a_b);") == [
        "module", "foo", "input", "7", "0", "a", "b"]


def test_rouge_l_hand_values():
    """LCS(a b c d e, a c e f) = a c e = 3: P = 3/5, R = 3/4, F = 2*3/(5+4) = 2/3."""
    assert rouge_l(list("abcde"), list("acef")) == pytest.approx(2 / 3)
    # LCS(a b c d, a b x y) = 2 -> F = 4/8 = 0.5 exactly; LCS(a b c d, a x y z) = 1 -> 0.25
    assert rouge_l(list("abcd"), list("abxy")) == 0.5
    assert rouge_l(list("abcd"), list("axyz")) == 0.25
    assert rouge_l([], list("abc")) == 0.0


def test_rouge_l_equals_rouge_score_on_code():
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    texts = [p.read_text() for p in sorted(EXAMPLES.glob("*/*.sv"))]
    for a in texts:
        for b in texts:
            expected = scorer.score(a, b)["rougeL"].fmeasure
            assert rouge_l(rouge_tokens(a), rouge_tokens(b)) == pytest.approx(expected, abs=1e-12)


def test_prefilter_bound_and_threshold_boundary():
    """Bag bound of "a b a" vs "b a a": 3 shared tokens -> 2*3/6 = 1.0, while the LCS is 2
    (F = 4/6): the bound never undercuts the exact value, and F = 0.5 is a match."""
    index = ContaminationIndex([("bench/x.v", "a b c d"), ("bench/y.v", "b a a")])
    assert list(index.bounds(["a", "b", "a"])) == [pytest.approx(4 / 7), 1.0]
    assert index.check([("train/t.v", "a b x y")]) == Match("train/t.v", "bench/x.v", 0.5)
    # "a b x y" bounds 2*2/7 = 4/7 against y.v (tried first: LCS 1, F 2/7 < 0.5), then
    # 4/8 against x.v (LCS 2, F 0.5: the match): two exact LCS computed
    assert (index.stats.files, index.stats.pairs, index.stats.exact) == (1, 2, 2)
    assert set(index.stats.seconds) == set(PHASES)
    before = index.stats.exact
    assert index.check([("train/u.v", "a x y z")]) is None
    assert index.stats.exact == before  # bound 0.25 < 0.5: no exact LCS computed
    assert (index.stats.files, index.stats.pairs) == (2, 4)


def test_benchmark_repos_match_themselves_and_examples_do_not():
    path = shared_path("benchmarks", "rtllm.jsonl")
    index = ContaminationIndex.from_task_files([path])
    task = load_tasks(path, ["rtllm/adder_8bit"])[0]
    match = index.check_task(task)
    assert match is not None and match.score == 1.0
    assert match.benchmark.startswith("rtllm/adder_8bit/")
    for name in ("alu_comb", "traffic_fsm", "hier_acc"):
        assert index.check_task(example_task(name)) is None
    assert index.stats.pairs == len(index.labels) * index.stats.files
