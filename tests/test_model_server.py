"""``llm4cov model serve`` treats every request as hostile (issue 20, item 8): body size
checked before reading (413), JSON only (415), loopback Host and Origin (403), an
optional API key (401), max_tokens clamped to the context, no path in any answer. It
bounds connections (issue 40): a cap, total deadlines for a request's head and body,
legitimate requests answered while 1,000 idle or trickling connections are open.

The policy behind the server is a double at the LLM boundary (it echoes what reached
it); the last test serves a tiny random checkpoint through the real command."""

from __future__ import annotations

import contextlib
import http.client
import json
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from llm4cov.models.connections import ConnectionLimits, ModelServer
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


@contextlib.contextmanager
def running(policy=None, **options) -> Iterator[ModelServer]:
    server = make_server(policy or EchoPolicy(), "tiny", port=0, **options)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def serve(**options) -> Iterator[tuple[str, int]]:
    with running(**options) as server:
        yield server.server_address[:2]


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
        assert answer.startswith(b"HTTP/1.1 413 ")
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


# -- connections (issue 40) ---------------------------------------------------------


@pytest.fixture
def open_files():
    """Raise this process's soft limit on open files (both ends of every connection are
    here) to at least the count asked for, up to the hard limit (skip beyond it)."""
    resource = pytest.importorskip("resource")
    before = resource.getrlimit(resource.RLIMIT_NOFILE)

    def at_least(count: int) -> None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY or soft >= count:
            return
        if hard != resource.RLIM_INFINITY and hard < count:
            pytest.skip(f"needs {count} open files; the hard limit (ulimit -Hn) is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (count, hard))

    yield at_least
    resource.setrlimit(resource.RLIMIT_NOFILE, before)


def wait_for(condition, seconds: float = 30.0) -> bool:
    end = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def closed_by_server(sockets: list[socket.socket]) -> list[int]:
    """Indexes of the sockets the server ended (it never writes to an idle one, so any
    readable or hung-up socket here was closed by it)."""
    poller = select.poll()
    for sock in sockets:
        poller.register(sock, select.POLLIN | select.POLLHUP | select.POLLERR)
    fds = {sock.fileno(): i for i, sock in enumerate(sockets)}
    return sorted(fds[fd] for fd, _ in poller.poll(0))


def trickle(address, at_once: bytes, data: bytes, outcome: dict,
            every_s: float = 0.2) -> None:
    """Send ``at_once``, then ``data`` one byte every ``every_s`` (gaps far below any
    per-recv timeout); record in ``outcome`` how many bytes of ``data`` were sent before
    the server cut the connection (``cut_after``; None: never cut), what it answered, and
    the seconds it took."""
    start = time.monotonic()
    answer = b""
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(at_once)
        sock.settimeout(every_s)
        for sent in range(len(data)):
            try:
                sock.sendall(data[sent:sent + 1])
                got = sock.recv(4096)
            except TimeoutError:
                continue
            except OSError:  # reset by the server
                got = b""
            if not got:
                outcome.update(cut_after=sent + 1, answer=answer,
                               seconds=time.monotonic() - start)
                return
            answer += got
    outcome.update(cut_after=None, answer=answer, seconds=time.monotonic() - start)


SLOW_HEAD = (b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: " + b"s" * 150
             + b"\r\n\r\n")
SLOW_BODY_HEAD = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  b"Content-Type: application/json\r\nContent-Length: 300\r\n\r\n")


def test_a_request_is_answered_while_1000_idle_connections_are_open(open_files):
    """1,000 idle connections (within the default cap) and five clients trickling a byte
    every 0.2 s: a request through the real openai client is answered at once, no idle
    connection is dropped for it, and every trickler is cut by the total deadline of its
    head or body (each would need 30 s or more to finish) without an answer."""
    openai = pytest.importorskip("openai")
    httpx = pytest.importorskip("httpx")
    open_files(2 * 1000 + 300)
    limits = ConnectionLimits(idle_timeout_s=120, header_timeout_s=2, body_timeout_s=2)
    idle: list[socket.socket] = []
    with running(limits=limits) as server:
        address = server.server_address[:2]
        try:
            for _ in range(1000):
                idle.append(socket.create_connection(address, timeout=30))
            assert wait_for(lambda: server.open_connections >= 1000)
            trickled = [(b"", SLOW_HEAD)] * 3 + [(SLOW_BODY_HEAD, b"x" * 300)] * 2
            outcomes: list[dict] = [{} for _ in trickled]
            tricklers = [threading.Thread(target=trickle, args=(address, *sends, outcome))
                         for sends, outcome in zip(trickled, outcomes, strict=True)]
            for thread in tricklers:
                thread.start()
            client = openai.OpenAI(base_url=f"http://{address[0]}:{address[1]}/v1",
                                   api_key="unused", max_retries=0, timeout=10,
                                   http_client=httpx.Client(trust_env=False))
            started = time.monotonic()
            answer = client.chat.completions.create(model="tiny", messages=MESSAGES,
                                                    max_tokens=7)
            assert answer.choices[0].message.content == "7 1"
            assert time.monotonic() - started < 10
            assert call(address, "GET", "/v1/models")[0] == 200
            assert closed_by_server(idle) == []  # all 1,000 were open throughout
            client.close()
            for thread in tricklers:
                thread.join(timeout=90)
            for outcome in outcomes:  # cut long before the last byte, unanswered
                assert outcome["cut_after"] is not None and outcome["answer"] == b""
                assert outcome["cut_after"] < 100 and outcome["seconds"] < 20
        finally:
            for sock in idle:
                sock.close()


def test_beyond_the_cap_the_oldest_idle_connection_makes_room():
    with running(limits=ConnectionLimits(max_connections=8, idle_timeout_s=120)) as server:
        address = server.server_address[:2]
        idle = []
        try:
            for _ in range(8):
                idle.append(socket.create_connection(address, timeout=30))
                assert wait_for(lambda: server.open_connections == len(idle))
            assert chat(address, {"messages": MESSAGES})[0] == 200
            assert wait_for(lambda: closed_by_server(idle) == [0])  # only the oldest
        finally:
            for sock in idle:
                sock.close()


class GatedPolicy(EchoPolicy):
    """EchoPolicy that holds every generation until ``release`` is set (30 s at most)."""

    def __init__(self) -> None:
        self.entered = 0
        self.release = threading.Event()

    def generate(self, request):
        self.entered += 1
        self.release.wait(timeout=30)
        return super().generate(request)


def test_when_every_connection_is_a_request_in_progress_a_new_one_gets_503():
    policy = GatedPolicy()
    limits = ConnectionLimits(max_connections=2, workers=4)
    with running(policy, limits=limits) as server:
        address = server.server_address[:2]
        answers: list[int] = []
        busy = [threading.Thread(target=lambda: answers.append(
            chat(address, {"messages": MESSAGES})[0])) for _ in range(2)]
        for thread in busy:
            thread.start()
        try:
            assert wait_for(lambda: policy.entered == 2)
            with socket.create_connection(address, timeout=30) as sock:
                sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                refused = sock.makefile("rb").read()
            assert refused.startswith(b"HTTP/1.1 503 ") and b"Retry-After: 1" in refused
        finally:
            policy.release.set()
            for thread in busy:
                thread.join(timeout=30)
        assert answers == [200, 200]


def test_keep_alive_then_the_idle_timeout():
    with running(limits=ConnectionLimits(idle_timeout_s=2)) as server:
        conn = http.client.HTTPConnection(*server.server_address[:2], timeout=30)
        conn.request("GET", "/v1/models")
        assert conn.getresponse().read() and conn.sock is not None
        sock = conn.sock
        conn.request("POST", "/v1/chat/completions", json.dumps({"messages": MESSAGES}),
                     {"Content-Type": "application/json"})
        assert conn.getresponse().status == 200 and conn.sock is sock  # the same one
        assert sock.recv(1) == b""  # closed by the server once idle
        conn.close()


def test_expect_100_continue_and_pipelined_requests(address):
    body = json.dumps({"messages": MESSAGES, "max_tokens": 3}).encode()
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Content-Type: application/json\r\nExpect: 100-continue\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body))
        assert sock.recv(4096) == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(body + b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     b"Connection: close\r\n\r\n")
        answers = sock.makefile("rb").read()
    assert answers.count(b"HTTP/1.1 200 OK") == 2 and b'"content": "3 1"' in answers


def test_a_refused_request_is_answered_while_its_body_arrives(address):
    """The body of a refused request is never read, yet the answer reaches the client:
    the server drains the connection after answering (no reset under the answer)."""
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: evil.example\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 4000000\r\n\r\n"
                     + b" " * 4_000_000)
        answer = sock.makefile("rb").read()
    assert answer.startswith(b"HTTP/1.1 403 ")


def test_a_head_beyond_64_kib_is_431(address):
    with socket.create_connection(address, timeout=30) as sock:
        sock.sendall(b"GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "
                     + b"a" * 70_000 + b"\r\n\r\n")
        answer = sock.makefile("rb").read()
    assert answer.startswith(b"HTTP/1.1 431 ")


def test_connection_limits_are_checked():
    with pytest.raises(ValueError, match="header_timeout_s"):
        ConnectionLimits(header_timeout_s=0)
    with pytest.raises(ValueError, match="max_connections"):
        ConnectionLimits(max_connections=0)


def test_the_connection_cap_fits_the_open_file_limit(monkeypatch):
    """The soft limit is raised to fit the cap; where the hard limit is lower, the cap is
    lowered to fit it (the real limits of this process are left alone)."""
    resource = pytest.importorskip("resource")
    from llm4cov.models import connections as module

    raised = []
    monkeypatch.setattr(resource, "setrlimit", lambda kind, limits: raised.append(limits))
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (1024, 65536))
    limits = ConnectionLimits(max_connections=4000)
    assert module.fit_open_files(limits) == limits
    assert raised == [(4000 + module.SPARE_CONNECTIONS + 128, 65536)]
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (1024, 1024))
    assert module.fit_open_files(limits).max_connections == 1024 - module.SPARE_CONNECTIONS - 128
    assert module.fit_open_files(ConnectionLimits(max_connections=100)).max_connections == 100


def test_a_body_still_arriving_gives_way_to_a_complete_request():
    """The bodies held at once are capped (here one 600-byte body): a client that sent a
    head and then stalls is closed, oldest first, to read a new request's body."""
    limits = ConnectionLimits(buffer_bytes=600, idle_timeout_s=60, body_timeout_s=60)
    with running(max_body_bytes=600, limits=limits) as server:
        address = server.server_address[:2]
        with socket.create_connection(address, timeout=30) as stalled:
            stalled.sendall(SLOW_BODY_HEAD.replace(b"300", b"500"))
            assert wait_for(lambda: server.body_bytes_held == 500)
            payload = {"messages": MESSAGES, "pad": "x" * 200}
            assert chat(address, payload)[0] == 200
            assert stalled.recv(1) == b""  # closed unanswered
