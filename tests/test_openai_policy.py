"""The OpenAI-compatible policy against a real local HTTP server (recorded responses)."""

from __future__ import annotations

import asyncio

import pytest

from conftest import fixture_task
from llm4cov.agent.prompt import build_messages
from llm4cov.policies import GenerationRequest, PolicyError, SamplingParams, get_policy
from support.replay_server import ReplayServer


def _request(seed=None):
    task = fixture_task("mux2")
    return GenerationRequest(task, build_messages(task), SamplingParams(0.2, 0.9, 512), seed)


def test_generate_sends_sampling_params_and_counts_tokens():
    with ReplayServer(["```systemverilog\nmodule tb; endmodule\n```"]) as server:
        policy = get_policy("qwen-test", base_url=server.base_url)
        gen = policy.generate(_request(seed=7))
    body = server.requests[0]
    assert body["model"] == "qwen-test"
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (
        0.2, 0.9, 512, 7)
    assert body["messages"][0]["role"] == "system"
    assert gen.text.startswith("```systemverilog")
    assert gen.model == "recorded-model"
    assert gen.completion_tokens == len(gen.text) // 4  # the server's recorded usage


@pytest.mark.parametrize(("served", "recorded"), [
    ("Qwen/Qwen3-4B-Instruct-2507", "Qwen/Qwen3-4B-Instruct-2507"),
    ("smollm2-135m-instruct-q8_0.gguf", "smollm2-135m-instruct-q8_0.gguf"),
    ("m | 1 | - |\n\n# SIGNED OFF **100.00%**", "qwen-test"),  # red team 39
    ("m\x1b]0;pwned\x07", "qwen-test"),
    ("", "qwen-test"),
])
def test_the_served_model_name_is_recorded_only_when_it_looks_like_one(served, recorded):
    """The server's name for the model reaches records, reports and training data: a
    thirty-ninth red team wrote a table row, a heading and terminal escapes into
    ``close``'s sign-off report through it; anything but a model id is replaced by the
    name asked for."""
    with ReplayServer(["```systemverilog\nmodule tb; endmodule\n```"], model=served) as server:
        gen = get_policy("qwen-test", base_url=server.base_url).generate(_request())
    assert gen.model == recorded


def test_a_lone_surrogate_in_an_answer_becomes_the_replacement_character():
    """JSON's ``\\udc80`` decodes to a lone surrogate, which no UTF-8 file holds: the
    answer is written to results and training data (a thirty-ninth red team ended a
    bench run with one)."""
    with ReplayServer(["I cannot write it.\udc80"]) as server:
        gen = get_policy("qwen-test", base_url=server.base_url).generate(_request())
    assert gen.text == "I cannot write it.\ufffd"


def test_retries_transient_server_errors():
    with ReplayServer(["ok"], fail_first=2) as server:
        policy = get_policy("m", base_url=server.base_url, max_retries=3)
        assert policy.generate(_request()).text == "ok"
    assert len(server.requests) == 3


def test_gives_up_with_policy_error():
    with ReplayServer(["ok"], fail_first=5) as server:
        policy = get_policy("m", base_url=server.base_url, max_retries=1)
        with pytest.raises(PolicyError, match=r"m at http://127\.0\.0\.1"):
            policy.generate(_request())


def test_async_generation():
    with ReplayServer(["a", "b"]) as server:
        policy = get_policy("m", base_url=server.base_url)

        async def both():
            return await asyncio.gather(policy.agenerate(_request()), policy.agenerate(_request()))

        texts = sorted(g.text for g in asyncio.run(both()))
    assert texts == ["a", "b"]


def test_llm_model_without_endpoint_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match="needs --base-url"):
        get_policy("qwen")
