"""TEST DOUBLE at the LLM boundary: a real local HTTP server that speaks the OpenAI
chat-completions protocol and replays recorded responses.

``ReplayServer(responses)`` serves ``POST /v1/chat/completions``; each request gets the
next recorded response text (cycling when ``cycle=True``), or the response chosen by
``select(request_json)`` when given. ``GET /v1/models`` lists ``model`` as vLLM does
(``root``: the path it was loaded from, when given). Every request body is kept in ``requests`` so
tests can assert what the client sent. ``fail_first=n`` answers the first n requests
with HTTP 503 to exercise the client's retries.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ReplayServer:
    def __init__(
        self,
        responses: list[str],
        model: str = "recorded-model",
        cycle: bool = False,
        select: Callable[[dict], str] | None = None,
        fail_first: int = 0,
        root: str | None = None,
    ) -> None:
        self.responses = list(responses)
        self.model = model
        self.cycle = cycle
        self.select = select
        self.fail_first = fail_first
        self.root = root
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._served = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, body: dict) -> tuple[int, str | None]:
        with self._lock:
            self.requests.append(body)
            if self.fail_first > 0:
                self.fail_first -= 1
                return 503, None
            if self.select is not None:
                return 200, self.select(body)
            if self._served >= len(self.responses) and not self.cycle:
                return 500, None
            text = self.responses[self._served % len(self.responses)]
            self._served += 1
            return 200, text

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                if not self.path.endswith("/models"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                entry = {"id": server.model, "object": "model", "owned_by": "vllm",
                         "root": server.root or server.model}
                self._send(200, {"object": "list", "data": [entry]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                code, text = server._next(body)
                if code != 200:
                    self._send(code, {"error": {"message": "recorded failure"}})
                    return
                prompt_chars = sum(len(m.get("content", "")) for m in body.get("messages", []))
                self._send(200, {
                    "id": f"chatcmpl-{time.monotonic_ns()}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": server.model,
                    "choices": [{
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }],
                    "usage": {
                        "prompt_tokens": prompt_chars // 4,
                        "completion_tokens": len(text) // 4,
                        "total_tokens": prompt_chars // 4 + len(text) // 4,
                    },
                })

            def _send(self, code: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
