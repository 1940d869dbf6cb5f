"""The local transformers backend's speed features on a tiny random Qwen3 (CPU, offline):
batched greedy decoding equals one-by-one, concurrent calls meet in one batch, the
stop at the end of the code block, the context limit."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from conftest import fixture_task
from llm4cov.agent.prompt import build_messages
from llm4cov.policies import GenerationRequest, SamplingParams, get_policy
from llm4cov.policies.local_transformers import (
    CONTEXT_EXCEEDED,
    CodeBlockStop,
    closed_code_block_end,
)

CORPUS = Path(__file__).resolve().parent / "fixtures" / "train" / "stage.jsonl"


@pytest.fixture(scope="module")
def policy(tmp_path_factory):
    from llm4cov.train.tiny import build_tiny_checkpoint, texts_of

    ckpt = build_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "ckpt", texts_of(CORPUS))
    return get_policy(f"local:{ckpt}", device="cpu")


def greedy(user_text: str, max_tokens: int = 10) -> GenerationRequest:
    task = fixture_task("mux2")
    messages = [*build_messages(task)[:1], {"role": "user", "content": user_text}]
    return GenerationRequest(task, messages, SamplingParams(temperature=0.0,
                                                             max_tokens=max_tokens))


@pytest.mark.parametrize(("text", "final", "end"), [
    ("no code", False, None),
    ("```systemverilog\nmodule tb; endmodule\n", True, None),  # opened, never closed
    ("```sv\nmodule tb;\nendmodule\n```\nmore", False, 30),
    ("Here:\n```\nx\n```", False, None),  # "```" may still become "```verilog"
    ("Here:\n```\nx\n```", True, 15),
    ("```\n\n```\n", True, None),  # an empty block does not count
    ("```\n\n```verilog\nmodule a;\nendmodule\n```\n", False, 39),  # SmolLM2's habit
])
def test_closed_code_block_end(text, final, end):
    assert closed_code_block_end(text, final) == end
    if end is not None:
        assert text[:end].endswith("```")


def test_code_block_stop_is_per_row(policy):
    tok = policy.tokenizer
    import torch

    prompt = tok("prompt")["input_ids"]
    closed = prompt + tok("```sv\nmodule t;\nendmodule\n```\n")["input_ids"]
    still_open = prompt + tok("```sv\nmodule t;\nendmodule\n")["input_ids"]
    width = max(len(closed), len(still_open))
    rows = [[tok.pad_token_id] * (width - len(r)) + r for r in (closed, still_open)]
    stop = CodeBlockStop(tok, len(prompt) + width - len(closed), policy._fence_ids)
    assert stop(torch.tensor(rows), None).tolist() == [True, False]


def test_batched_greedy_equals_unbatched_for_prompts_of_different_lengths(policy):
    requests = [greedy("module"), greedy("x " * 40), greedy("assign y = a & b;" * 3)]
    batched = policy.generate_batch(requests)
    alone = [policy.generate_batch([r])[0] for r in requests]
    assert [g.text for g in batched] == [g.text for g in alone]
    assert len({g.prompt_tokens for g in batched}) == 3  # left padding was needed
    assert [g.completion_tokens for g in batched] == [g.completion_tokens for g in alone]


def test_concurrent_calls_are_decoded_in_one_batch(policy, monkeypatch):
    sizes: list[int] = []
    original = policy.generate_batch

    def counting(requests):
        sizes.append(len(requests))
        return original(requests)

    monkeypatch.setattr(policy, "generate_batch", counting)
    monkeypatch.setattr(policy, "batch_wait_s", 5.0)
    requests = [greedy("a"), greedy("b b"), greedy("c c c")]
    answers: dict[int, str] = {}

    def call(i: int) -> None:
        answers[i] = policy.generate(requests[i]).text

    threads = [threading.Thread(target=call, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sizes == [3]
    assert [answers[i] for i in range(3)] == [g.text for g in original(requests)]


def test_a_prompt_over_the_context_gets_an_empty_answer_and_its_size(policy, monkeypatch):
    fits, too_long = greedy("a"), greedy("x " * 30)
    n_fits = policy.generate_batch([fits])[0].prompt_tokens
    monkeypatch.setattr(policy, "context_tokens", n_fits + 4)
    short, long = policy.generate_batch([fits, too_long])
    assert (long.text, long.finish_reason, long.completion_tokens) == ("", CONTEXT_EXCEEDED, 0)
    assert long.prompt_tokens > n_fits + 4
    assert short.prompt_tokens == n_fits and 1 <= short.completion_tokens <= 4  # capped


def test_describe_names_the_speed_settings(policy):
    info = policy.describe()
    assert (info["backend"], info["batch_size"], info["stop_at_code_end"]) == (
        "transformers", 8, True)
    assert info["context_tokens"] == 40960
