"""``llm4cov model serve`` treats every request as hostile (issue 20, item 8): body size
checked before reading (413), JSON only (415), loopback Host and Origin (403), an
optional API key (401), max_tokens clamped to the context, no path in any answer.

The policy behind the server is a double at the LLM boundary (it echoes what reached
it); the last test serves a tiny random checkpoint through the real command."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from llm4cov.models.server import host_allowed, make_server
from llm4cov.policies import Generation, PolicyError

SECRET_PATH = "/home/user/secret/checkpoints/step-42"


class EchoPolicy:
    """Answers with the max_tokens and message count it was given; a context of 256
    tokens; a prompt saying "fail" raises a PolicyError that names a path."""

    name = "echo"
    context_tokens = 256

    def generate(self, request):
        if request.messages[-1]["content"] == "fail":
            raise PolicyError(f"local:{SECRET_PATH}: generation failed: out of memory")
        return Generation(text=f"{request.params.max_tokens} {len(request.messages)}",
                          model=self.name, prompt_tokens=5, completion_tokens=2)

    def describe(self):
        return {"model": self.name}


def serve(**options) -> Iterator[tuple[str, int]]:
    server = make_server(EchoPolicy(), "tiny", port=0, **options)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[:2]
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def address():
    yield from serve()


@pytest.fixture
def keyed():
    yield from serve(api_key="s3cret-key")


def call(address, method: str, path: str, body: bytes | None = None,
         headers: dict | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection(*address, timeout=60)
    conn.request(method, path, body=body, headers={"Content-Type": "application/json",
                                                   **(headers or {})})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, json.loads(data)


def chat(address, payload: dict, **headers) -> tuple[int, dict]:
    return call(address, "POST", "/v1/chat/completions", json.dumps(payload).encode(), headers)


MESSAGES = [{"role": "user", "content": "write a testbench"}]


def test_max_tokens_is_clamped_to_the_context(address):
    status, body = chat(address, {"messages": MESSAGES, "max_tokens": 10**12})
    assert status == 200 and body["choices"][0]["message"]["content"] == "256 1"
    status, body = chat(address, {"messages": MESSAGES, "max_tokens": 99})
    assert body["choices"][0]["message"]["content"] == "99 1"
    status, body = chat(address, {"messages": MESSAGES})  # default 8192 -> the context
    assert body["choices"][0]["message"]["content"] == "256 1"


@pytest.mark.parametrize("payload", [
    {"messages": MESSAGES, "max_tokens": "many"}, {"messages": MESSAGES, "max_tokens": 0},
    {"messages": MESSAGES, "max_tokens": True}, {"messages": MESSAGES, "temperature": "hot"},
    {"messages": MESSAGES, "seed": "x"}, {"messages": []},
    {"messages": [{"role": 1, "content": "x"}]}])
def test_bad_sampling_values_are_400(address, payload):
    assert chat(address, payload)[0] == 400


def test_non_finite_numbers_are_400(address):
    body = b'{"messages": [{"role": "user", "content": "x"}], "temperature": NaN}'
    assert call(address, "POST", "/v1/chat/completions", body)[0] == 400


def test_a_foreign_host_or_origin_is_403(address):
    assert chat(address, {"messages": MESSAGES}, Host="evil.example:8000")[0] == 403
    assert chat(address, {"messages": MESSAGES}, Origin="http://evil.example")[0] == 403
    assert call(address, "GET", "/v1/models", headers={"Host": "rebind.example"})[0] == 403
    assert chat(address, {"messages": MESSAGES}, Origin="http://localhost:3000")[0] == 200


def test_host_names_of_this_machine():
    assert host_allowed("127.0.0.1:8000", "127.0.0.1")
    assert host_allowed("localhost", "127.0.0.1") and host_allowed("[::1]:80", "127.0.0.1")
    assert host_allowed("127.3.4.5", "127.0.0.1")
    assert host_allowed("10.0.0.7:8000", "10.0.0.7")  # the address it was bound to
    assert not host_allowed("10.0.0.7:8000", "0.0.0.0")  # a wildcard names no host
    assert not host_allowed("", "127.0.0.1") and not host_allowed("127.0.0.1.evil.io", "")


def test_only_json_bodies_are_read(address):
    status, body = call(address, "POST", "/v1/chat/completions",
                        json.dumps({"messages": MESSAGES}).encode(),
                        {"Content-Type": "text/plain"})
    assert status == 415 and body["error"]["message"] == "the body must be application/json"


def test_the_body_size_is_checked_before_reading():
    """A 1 GiB Content-Length with no body sent: the answer comes at once, so the server
    did not wait for (or read) the body."""
    for address in serve(max_body_bytes=1024):
        with socket.create_connection(address, timeout=60) as sock:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                         b"Content-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n")
            answer = sock.makefile("rb").read()
        assert answer.startswith(b"HTTP/1.0 413 ")
        assert b'"the body exceeds 1024 bytes"' in answer
        status, _ = call(address, "POST", "/v1/chat/completions", b"{}",
                         {"Transfer-Encoding": "chunked"})
        assert status == 411


def test_an_api_key_is_required_when_set(keyed):
    assert chat(keyed, {"messages": MESSAGES})[0] == 401
    status, body = chat(keyed, {"messages": MESSAGES}, Authorization="Bearer wrong")
    assert status == 401 and "s3cret" not in json.dumps(body)
    assert call(keyed, "GET", "/v1/models")[0] == 401
    assert chat(keyed, {"messages": MESSAGES}, Authorization="Bearer s3cret-key")[0] == 200


def test_answers_name_no_path(address):
    status, body = call(address, "GET", "/v1/models")
    assert status == 200 and body["data"] == [
        {"id": "tiny", "object": "model", "owned_by": "llm4cov", "max_model_len": 256}]
    status, body = chat(address, {"messages": [{"role": "user", "content": "fail"}]})
    assert status == 500
    assert body["error"]["message"] == "generation failed (see the server's log)"


@pytest.mark.slow
@pytest.mark.requires_train
def test_model_serve_of_a_checkpoint_names_no_path(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from pathlib import Path

    from llm4cov.train.tiny import build_tiny_checkpoint, texts_of

    corpus = Path(__file__).resolve().parent / "fixtures" / "train" / "stage.jsonl"
    ckpt = build_tiny_checkpoint(tmp_path / "secret-folder" / "ckpt", texts_of(corpus))
    code = "from llm4cov.cli.app import main; raise SystemExit(main())"
    proc = subprocess.Popen([sys.executable, "-c", code, "model", "serve", f"local:{ckpt}",
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read()
        address = ("127.0.0.1", int(url.rsplit(":", 1)[1].split("/")[0]))
        status, body = call(address, "GET", "/v1/models")
        assert status == 200 and body["data"][0]["id"] == "ckpt"
        assert str(tmp_path) not in json.dumps(body)
        assert chat(address, {"messages": MESSAGES}, Host="evil.example")[0] == 403
        status, body = chat(address, {"messages": MESSAGES, "max_tokens": 4,
                                      "temperature": 0})
        assert status == 200 and body["usage"]["completion_tokens"] <= 4
        assert body["model"] == "ckpt"
    finally:
        proc.terminate()
        proc.wait(timeout=60)
