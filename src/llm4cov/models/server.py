"""A small OpenAI-compatible HTTP server around a local policy (``llm4cov model serve``).

Endpoints (OpenAI API subset): ``GET /v1/models`` and ``POST /v1/chat/completions``
(``messages``, ``temperature``, ``top_p``, ``max_tokens``, ``seed``; no streaming, one
choice). Each request runs on its own thread (``ThreadingHTTPServer``), so concurrent
requests meet in the policy's batcher and are generated together. For testing and
small models on one machine; big models belong on vLLM/SGLang.
"""

from __future__ import annotations

import json
import time
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from llm4cov.policies.base import GenerationRequest, Policy, PolicyError, SamplingParams
from llm4cov.tasks.model import SourceFile, Task

# The policy reads only the messages; the agent's Task is required by the request type.
_NO_TASK = Task(id="served", dut_module_name="served",
                rtl_files=[SourceFile(name="served.v", content="module served;\nendmodule\n")])


def completion_body(policy: Policy, served_name: str, body: dict[str, Any]) -> dict[str, Any]:
    """The ``chat.completion`` answer to request ``body``.

    Raises:
        ValueError: ``messages`` missing or malformed, or a bad sampling value.
        PolicyError: generation failed.
    """
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(
            isinstance(m, dict) and isinstance(m.get("content"), str) for m in messages):
        raise ValueError("messages must be a list of {role, content} objects")
    defaults = SamplingParams()
    params = SamplingParams(
        temperature=float(body.get("temperature", defaults.temperature)),
        top_p=float(body.get("top_p", defaults.top_p)),
        max_tokens=int(body.get("max_tokens") or defaults.max_tokens),
        seed=body.get("seed"),
    )
    answer = policy.generate(GenerationRequest(task=_NO_TASK, messages=messages, params=params))
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
        "created": int(time.time()), "model": served_name,
        "choices": [{"index": 0, "finish_reason": answer.finish_reason,
                     "message": {"role": "assistant", "content": answer.text}}],
        "usage": {"prompt_tokens": answer.prompt_tokens,
                  "completion_tokens": answer.completion_tokens,
                  "total_tokens": answer.prompt_tokens + answer.completion_tokens},
    }


def make_server(policy: Policy, served_name: str, root: str, host: str = "127.0.0.1",
                port: int = 8000) -> ThreadingHTTPServer:
    """A server (not yet serving) for ``policy`` under ``served_name``; ``root`` is the
    checkpoint path reported by ``/v1/models`` (as vLLM does). Port 0 = any free port."""

    class Handler(BaseHTTPRequestHandler):
        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, status: HTTPStatus, message: str) -> None:
            self._send(status, {"error": {"message": message, "type": status.phrase}})

        def do_GET(self) -> None:
            if self.path.rstrip("/") != "/v1/models":
                return self._error(HTTPStatus.NOT_FOUND, f"no route {self.path}")
            self._send(HTTPStatus.OK, {"object": "list", "data": [
                {"id": served_name, "object": "model", "owned_by": "llm4cov", "root": root}]})

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                return self._error(HTTPStatus.NOT_FOUND, f"no route {self.path}")
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("the body must be a JSON object")
                if body.get("stream"):
                    raise ValueError("streaming is not supported")
                self._send(HTTPStatus.OK, completion_body(policy, served_name, body))
            except (ValueError, TypeError) as exc:
                self._error(HTTPStatus.BAD_REQUEST, str(exc))
            except PolicyError as exc:
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, str(exc))

        def log_message(self, format: str, *args: Any) -> None:
            """No per-request log lines."""

    return ThreadingHTTPServer((host, port), Handler)
