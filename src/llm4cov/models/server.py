"""A small OpenAI-compatible HTTP server around a local policy (``llm4cov model serve``).

Endpoints (OpenAI API subset): ``GET /v1/models`` and ``POST /v1/chat/completions``
(``messages``, ``temperature``, ``top_p``, ``max_tokens``, ``seed``; no streaming, one
choice). Each request runs on its own thread (``ThreadingHTTPServer``), so concurrent
requests meet in the policy's batcher and are generated together. For testing and
small models on one machine; big models belong on vLLM/SGLang.

Every request is untrusted (any local process, or a web page in the user's browser,
can send one). In the order checked:

- ``Host`` must name a loopback address (``localhost``, ``127.0.0.0/8``, ``::1``) or
  the address the server was bound to, and a browser's ``Origin``, when sent, too
  (403; DNS rebinding and cross-site pages);
- with an API key (``--api-key`` or ``$LLM4COV_SERVE_API_KEY``), ``Authorization:
  Bearer KEY`` (401; compared in constant time, never echoed);
- ``POST`` bodies must be ``application/json`` (415: a page cannot send one without
  a CORS preflight, which is not answered) and declare a ``Content-Length`` (411) of at
  most ``max_body_bytes`` (413), checked before a byte of the body is read; a body
  that does not arrive within :data:`READ_TIMEOUT_S` ends the connection;
- ``max_tokens`` is clamped to the model's context (``policy.context_tokens``), and
  sampling values must be finite numbers (400).

Answers never name a path: ``/v1/models`` lists the served name only (no ``root``),
and a generation failure answers 500 with a fixed message (the detail goes to the
server's log).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import math
import time
import uuid
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from llm4cov.policies.base import GenerationRequest, Policy, PolicyError, SamplingParams
from llm4cov.tasks.model import SourceFile, Task

log = logging.getLogger(__name__)

API_KEY_ENV = "LLM4COV_SERVE_API_KEY"
MAX_BODY_BYTES = 8 * 1024**2
"""Default request body cap (bytes): a prompt with a large repository's RTL fits."""
READ_TIMEOUT_S = 60.0
"""Seconds a connection may take to deliver its request (a stalled client is dropped)."""

# The policy reads only the messages; the agent's Task is required by the request type.
_NO_TASK = Task(id="served", dut_module_name="served",
                rtl_files=[SourceFile(name="served.v", content="module served;\nendmodule\n")])


class RequestError(Exception):
    """A request refused with HTTP ``status`` and a one-line ``message``."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _number(body: dict[str, Any], key: str, default: float) -> float:
    value = body.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{key} must be a finite number")
    return float(value)


def sampling_params(body: dict[str, Any], context_tokens: int | None) -> SamplingParams:
    """The request's sampling parameters; ``max_tokens`` (default: the
    :class:`SamplingParams` default) is clamped to ``context_tokens`` (tokens; None =
    no clamp).

    Raises:
        ValueError: a value of the wrong type, not finite or out of range.
    """
    defaults = SamplingParams()
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        max_tokens = defaults.max_tokens
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ValueError("max_tokens must be a positive integer")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ValueError("seed must be an integer")
    return SamplingParams(
        temperature=_number(body, "temperature", defaults.temperature),
        top_p=_number(body, "top_p", defaults.top_p),
        max_tokens=min(max_tokens, context_tokens) if context_tokens else max_tokens,
        seed=seed,
    )


def completion_body(policy: Policy, served_name: str, body: dict[str, Any]) -> dict[str, Any]:
    """The ``chat.completion`` answer to request ``body`` (``max_tokens`` clamped to
    ``policy.context_tokens`` when the policy has one).

    Raises:
        ValueError: ``messages`` missing or malformed, or a bad sampling value.
        PolicyError: generation failed.
    """
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and isinstance(m.get("content"), str)
            and isinstance(m.get("role"), str) for m in messages):
        raise ValueError("messages must be a list of {role, content} objects")
    params = sampling_params(body, getattr(policy, "context_tokens", None))
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


def _host_name(authority: str) -> str:
    """The host of a ``Host`` header value (``[::1]:8000`` -> ``::1``), lower case."""
    return (urlsplit(f"//{authority}").hostname or "").lower()


def host_allowed(authority: str, bound: str) -> bool:
    """Whether a ``Host`` header value (or an ``Origin``'s authority) names this server:
    a loopback name or address, or ``bound`` (the listen address, unless a wildcard)."""
    try:
        host = _host_name(authority)
    except ValueError:
        return False
    if host == "localhost":
        return True
    try:
        if ipaddress.ip_address(host).is_loopback:
            return True
    except ValueError:
        pass
    return bool(host) and bound not in ("", "0.0.0.0", "::") and host == bound.lower()


def make_server(policy: Policy, served_name: str, host: str = "127.0.0.1", port: int = 8000,
                api_key: str | None = None,
                max_body_bytes: int = MAX_BODY_BYTES) -> ThreadingHTTPServer:
    """A server (not yet serving) for ``policy`` under ``served_name`` on ``host:port``
    (port 0 = any free port); ``api_key``: required as ``Authorization: Bearer KEY``
    when given; ``max_body_bytes``: the request body cap. See the module docstring for
    what every request must satisfy."""
    context = getattr(policy, "context_tokens", None)

    class Handler(BaseHTTPRequestHandler):
        server_version = "llm4cov"
        sys_version = ""
        timeout = READ_TIMEOUT_S

        def _send(self, status: int, payload: dict[str, Any], close: bool = False) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status == HTTPStatus.UNAUTHORIZED:
                self.send_header("WWW-Authenticate", "Bearer")
            if close:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            self.wfile.write(data)

        def _error(self, error: RequestError) -> None:
            # the body of a refused request stays unread: the connection must end
            self._send(error.status, {"error": {"message": error.message,
                                                "type": error.status.phrase}}, close=True)

        def _admit(self) -> None:
            """Refuse a request from elsewhere or without the key (RequestError)."""
            if not host_allowed(self.headers.get("Host", ""), host):
                raise RequestError(HTTPStatus.FORBIDDEN, "the Host header must name this "
                                   "server (a loopback address)")
            origin = self.headers.get("Origin")
            if origin is not None and not host_allowed(urlsplit(origin).netloc, host):
                raise RequestError(HTTPStatus.FORBIDDEN, "requests from web pages of other "
                                   "origins are refused")
            if api_key is not None:
                given = self.headers.get("Authorization", "")
                if not hmac.compare_digest(given.encode(), f"Bearer {api_key}".encode()):
                    raise RequestError(HTTPStatus.UNAUTHORIZED, "a valid API key is required "
                                       "(Authorization: Bearer KEY)")

        def _read_json(self) -> dict[str, Any]:
            """The request body as a JSON object, its size checked before reading."""
            kind = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
            if kind != "application/json":
                raise RequestError(HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                                   "the body must be application/json")
            if self.headers.get("Transfer-Encoding") or "Content-Length" not in self.headers:
                raise RequestError(HTTPStatus.LENGTH_REQUIRED, "a Content-Length is required")
            try:
                length = int(self.headers["Content-Length"])
            except ValueError:
                length = -1
            if length < 0:
                raise RequestError(HTTPStatus.BAD_REQUEST, "a bad Content-Length")
            if length > max_body_bytes:
                raise RequestError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                                   f"the body exceeds {max_body_bytes} bytes")
            try:
                body = json.loads(self.rfile.read(length))
            except (ValueError, UnicodeDecodeError):
                raise RequestError(HTTPStatus.BAD_REQUEST, "the body is not JSON") from None
            if not isinstance(body, dict):
                raise RequestError(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
            return body

        def do_GET(self) -> None:
            try:
                self._admit()
                if self.path.rstrip("/") != "/v1/models":
                    raise RequestError(HTTPStatus.NOT_FOUND, "no such route")
            except RequestError as exc:
                return self._error(exc)
            entry = {"id": served_name, "object": "model", "owned_by": "llm4cov"}
            if context:
                entry["max_model_len"] = context
            self._send(HTTPStatus.OK, {"object": "list", "data": [entry]})

        def do_POST(self) -> None:
            try:
                self._admit()
                if self.path.rstrip("/") != "/v1/chat/completions":
                    raise RequestError(HTTPStatus.NOT_FOUND, "no such route")
                body = self._read_json()
                if body.get("stream"):
                    raise RequestError(HTTPStatus.BAD_REQUEST, "streaming is not supported")
                self._send(HTTPStatus.OK, completion_body(policy, served_name, body))
            except RequestError as exc:
                self._error(exc)
            except (ValueError, TypeError) as exc:
                self._error(RequestError(HTTPStatus.BAD_REQUEST, str(exc)))
            except PolicyError as exc:
                log.error("generation failed: %s", exc)
                self._error(RequestError(HTTPStatus.INTERNAL_SERVER_ERROR,
                                         "generation failed (see the server's log)"))

        def log_message(self, format: str, *args: Any) -> None:
            """No per-request log lines."""

    return ThreadingHTTPServer((host, port), Handler)
