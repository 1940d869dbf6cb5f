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
    ANSWER_PREFIX,
    CONTEXT_EXCEEDED,
    CodeBlockStop,
    closed_code_block_end,
)

pytestmark = pytest.mark.requires_train

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


def test_code_block_stop_counts_the_answer_prefix(policy):
    tok = policy.tokenizer
    import torch

    prompt = tok("prompt")["input_ids"]
    body = prompt + tok("module t;\nendmodule\n```\n")["input_ids"]
    assert CodeBlockStop(tok, len(prompt), policy._fence_ids)(
        torch.tensor([body]), None).tolist() == [False]  # a lone closing fence
    assert CodeBlockStop(tok, len(prompt), policy._fence_ids, "```sv\n")(
        torch.tensor([body]), None).tolist() == [True]


def test_the_answer_starts_with_the_prefix_written_into_the_assistant_turn(policy,
                                                                           monkeypatch):
    request = greedy("module", max_tokens=3)
    with_prefix = policy.generate_batch([request])[0]
    monkeypatch.setattr(policy, "answer_prefix", "")
    without = policy.generate_batch([request])[0]
    assert with_prefix.text.startswith(ANSWER_PREFIX) and ANSWER_PREFIX == "```systemverilog\n"
    prefix_tokens = len(policy.tokenizer(ANSWER_PREFIX, add_special_tokens=False)["input_ids"])
    assert with_prefix.prompt_tokens == without.prompt_tokens + prefix_tokens
    assert with_prefix.completion_tokens == 3


@pytest.mark.parametrize("options", [{"cache": "dynamic"}, {"dtype": "int8"}])
def test_other_cache_and_int8_weights_keep_batched_equal_to_unbatched(policy, options):
    import torch

    other = get_policy(f"local:{policy.path}", device="cpu", **options)
    requests = [greedy("module"), greedy("x " * 40)]
    batched = other.generate_batch(requests)
    assert [g.text for g in batched] == [other.generate_batch([r])[0].text for r in requests]
    linear = other.model.get_submodule("model.layers.0.self_attn.q_proj")
    if options.get("dtype") == "int8":
        assert isinstance(linear, torch.ao.nn.quantized.dynamic.Linear)
        assert linear.weight().qscheme() == torch.per_channel_affine
        assert other.describe()["dtype"] == "int8"
    else:  # the same fp32 model, another cache: the same greedy answers
        assert [g.text for g in batched] == [g.text for g in policy.generate_batch(requests)]


def test_int8_is_refused_off_the_cpu():
    from llm4cov.policies.local_transformers import LocalTransformersPolicy

    with pytest.raises(ValueError, match="CPU only"):
        LocalTransformersPolicy("unused", device="cuda", dtype="int8")
    with pytest.raises(ValueError, match="cache must be"):
        LocalTransformersPolicy("unused", device="cpu", cache="paged")


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

    def counting(requests, cancelled=()):
        sizes.append(len(requests))
        return original(requests, cancelled)

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
    assert (info["backend"], info["batch_size"], info["stop_at_code_end"], info["cache"],
            info["answer_prefix"], info["dtype"]) == (
        "transformers", 8, True, "static", "```systemverilog\n", "fp32")
    assert info["context_tokens"] == 40960


def test_a_cancelled_request_stops_at_its_next_token(policy):
    """Ctrl-C cancels an awaited answer; its row stops decoding, the others go on."""
    from llm4cov.policies.local_transformers import CANCELLED

    stopped, going = policy.generate_batch([greedy("module", 50), greedy("module", 50)],
                                           [lambda: True, lambda: False])
    assert stopped.finish_reason == CANCELLED and stopped.completion_tokens <= 2
    assert going.finish_reason != CANCELLED and going.completion_tokens > 2
    assert not policy.meter.active  # the meter saw the generate call end


def test_cancelling_the_await_stops_the_decoding(policy):
    import asyncio

    async def cancel_mid_answer() -> tuple[bool, int]:
        answer = asyncio.ensure_future(policy.agenerate(greedy("module", 20000)))
        while not (policy.meter.active and policy.meter.tokens >= 5):
            await asyncio.sleep(0.01)
        answer.cancel()
        while policy.meter.active:  # the batcher's generate call ends
            await asyncio.sleep(0.01)
        return answer.cancelled(), policy.meter.tokens

    cancelled, tokens = asyncio.run(cancel_mid_answer())
    assert cancelled and 5 <= tokens < 20000
