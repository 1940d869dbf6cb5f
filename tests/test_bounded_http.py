"""A model server's answer is bounded (``policies/bounded_http.py``): the real ``openai``
client against a local HTTP server that sends a body past the size bound, and a body
that arrives after its deadline (a clock of the test's that moves one second per
chunk read, so no test waits on the machine's speed)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from llm4cov.policies.base import GenerationRequest, PolicyError, SamplingParams
from llm4cov.policies.bounded_http import MAX_RESPONSE_BYTES, BoundedTransport
from llm4cov.policies.openai_chat import OpenAIChatPolicy
from llm4cov.tasks.model import SourceFile, Task

ANSWER = {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
          "choices": [{"index": 0, "finish_reason": "stop",
                       "message": {"role": "assistant", "content": "hi"}}],
          "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


@contextmanager
def serving(body: bytes) -> Iterator[str]:
    """A server that answers every POST with ``body`` (JSON), in 64 KiB chunks."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for at in range(0, len(body), 1 << 16):
                self.wfile.write(body[at:at + (1 << 16)])

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()


def _request() -> GenerationRequest:
    task = Task(id="t", dut_module_name="a",
                rtl_files=[SourceFile(name="a.v", content="module a; endmodule\n")])
    return GenerationRequest(task, [{"role": "user", "content": "x"}], SamplingParams())


def test_an_answer_within_the_bounds_is_read():
    with serving(json.dumps(ANSWER).encode()) as url:
        policy = OpenAIChatPolicy("m", base_url=url, api_key="k", max_retries=0)
        assert policy.generate(_request()).text == "hi"


def test_an_answer_past_the_size_bound_is_an_error_not_read_whole():
    padded = dict(ANSWER, pad="x" * (MAX_RESPONSE_BYTES + 1))
    with serving(json.dumps(padded).encode()) as url:
        policy = OpenAIChatPolicy("m", base_url=url, api_key="k", max_retries=0)
        with pytest.raises(PolicyError, match=r"\(the response passed 8388608 bytes\)"):
            policy.generate(_request())


def test_a_body_that_arrives_past_its_deadline_is_cut_off():
    """httpx's timeouts are per read: a trickling server never trips them. The
    transport's deadline counts from the request's start, the body included."""
    import httpx2

    ticks = iter(range(1000))
    body = json.dumps(dict(ANSWER, pad="x" * (5 << 16))).encode()  # 6 chunks
    with serving(body) as url:
        client = httpx2.Client(transport=BoundedTransport(3.0, clock=lambda: next(ticks)))
        with pytest.raises(httpx2.ReadTimeout, match="longer than its deadline"):
            client.post(f"{url}/chat/completions", json={})
        client = httpx2.Client(transport=BoundedTransport(30.0, clock=lambda: next(ticks)))
        assert client.post(f"{url}/chat/completions", json={}).json()["model"] == "m"
