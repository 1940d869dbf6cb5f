"""Stage-0 rebalancing ratios and the token counters (paper, "Stages")."""

from __future__ import annotations

import pytest

from llm4cov.synth.config import RebalanceConfig, export_preset
from llm4cov.synth.curation import CurationItem, keep_count, rebalance
from llm4cov.synth.records import PointKind
from llm4cov.synth.tokens import ApproxTokenCounter, get_token_counter

D, A = PointKind.DIRECT, PointKind.AGENTIC


def _items(kind: PointKind, n: int, tokens: int, tag: str) -> list[CurationItem]:
    return [CurationItem(f"{tag}{i}", kind, tokens) for i in range(n)]


def test_keep_count_rounds_half_up():
    assert [keep_count(n, 1 / 3) for n in (1, 2, 3, 9, 10)] == [0, 1, 1, 3, 3]
    assert [keep_count(n, 1 / 2) for n in (1, 3, 10)] == [1, 2, 5]


def test_stage0_keeps_a_third_of_short_direct_and_half_of_short_agentic():
    items = (_items(D, 9, 300, "sd") + _items(D, 4, 5000, "ld")
             + _items(A, 10, 1024, "sa") + _items(A, 3, 1025, "la"))
    kept = rebalance(items, export_preset(0).rebalance)
    by_group = {g: sum(k.startswith(g) for k in kept) for g in ("sd", "ld", "sa", "la")}
    # 1024 tokens is still short (<= 1k); 1025 is long
    assert by_group == {"sd": 3, "ld": 4, "sa": 5, "la": 3}
    assert kept == rebalance(list(reversed(items)), export_preset(0).rebalance)
    other_seed = RebalanceConfig(short_direct_keep=1 / 3, short_agentic_keep=1 / 2, seed=43)
    assert rebalance(items, other_seed) != kept


def test_other_stages_keep_everything():
    items = _items(D, 5, 10, "d") + _items(A, 5, 10, "a")
    assert rebalance(items, export_preset(1).rebalance) == {i.key for i in items}


def test_approximate_counter_counts_letter_runs_digits_and_punctuation():
    counter = ApproxTokenCounter()
    # module | foo | ( | input | a | ); | \n
    assert counter.count("module foo(input a);\n") == 7
    # 8 | ' | hFF | ; | 1 | 2
    assert counter.count("8'hFF; 12") == 6
    assert get_token_counter(None).name == "approx-regex"


def _word_tokenizer():
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tok = tokenizers.Tokenizer(WordLevel({"module": 0, "a": 1, "[UNK]": 2}, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    return tok


def test_local_tokenizer_file_counts_exactly(tmp_path):
    path = tmp_path / "tok.json"
    _word_tokenizer().save(str(path))
    counter = get_token_counter(str(path))
    assert counter.name == "tokenizer:tok.json"
    assert counter.count("module a b c") == 4
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match="cannot load a tokenizer"):
        get_token_counter(str(tmp_path / "bad.json"))
    with pytest.raises(ValueError, match="no such tokenizer"):
        get_token_counter(str(tmp_path / "missing"))


@pytest.mark.requires_train
def test_local_model_directory_counts_with_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=_word_tokenizer(),
                                                unk_token="[UNK]")
    fast.save_pretrained(str(tmp_path / "model"))
    counter = get_token_counter(str(tmp_path / "model"))
    assert counter.name == "tokenizer:model"
    assert counter.count("module a zz") == 3
