"""A small OpenAI-compatible HTTP server around a local policy (``llm4cov model serve``).

Endpoints (OpenAI API subset): ``GET /v1/models`` and ``POST /v1/chat/completions``
(``messages``, ``temperature``, ``top_p``, ``max_tokens``, ``seed``; no streaming, one
choice), HTTP/1.1 with keep-alive. For testing and small models on one machine; big
models belong on vLLM/SGLang.

Connections are bounded and every request has total deadlines
(:mod:`llm4cov.models.connections`).

Every request is untrusted (any local process, or a web page in the user's browser,
can send one). In the order checked, on the head alone, before a byte of the body is
read:

- ``Host`` must name a loopback address (``localhost``, ``127.0.0.0/8``, ``::1``) or
  the address the server was bound to, and a browser's ``Origin``, when sent, too
  (403; DNS rebinding and cross-site pages);
- with an API key (``--api-key`` or ``$LLM4COV_SERVE_API_KEY``), ``Authorization:
  Bearer KEY`` (401; compared in constant time, never echoed);
- ``POST`` bodies must be ``application/json`` (415: a page cannot send one without
  a CORS preflight, which is not answered) and declare one ``Content-Length`` (411) of
  at most ``max_body_bytes`` (413); a refused request's body is never read (the
  connection ends after the answer);
- ``max_tokens`` is clamped to the model's context (``policy.context_tokens``), and
  sampling values must be finite numbers (400).

Answers never name a path: ``/v1/models`` lists the served name only (no ``root``),
and a generation failure answers 500 with a fixed message (the detail goes to the
server's log).
"""

from __future__ import annotations

import hmac
import io
import ipaddress
import json
import logging
import math
import re
import time
import uuid
from email.message import Message
from http import HTTPStatus
from http.client import HTTPException, parse_headers
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from llm4cov.models.connections import ConnectionLimits, ModelServer
from llm4cov.policies.base import GenerationRequest, Policy, PolicyError, SamplingParams
from llm4cov.tasks.model import SourceFile, Task

log = logging.getLogger(__name__)

API_KEY_ENV = "LLM4COV_SERVE_API_KEY"
MAX_BODY_BYTES = 8 * 1024**2
"""Default request body cap (bytes): a prompt with a large repository's RTL fits."""
CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"

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


def admit(headers: Message, bound: str, api_key: str | None) -> None:
    """Refuse a request from elsewhere (``Host``, ``Origin``) or without the key.

    Raises:
        RequestError: 403 or 401.
    """
    if not host_allowed(headers.get("Host", ""), bound):
        raise RequestError(HTTPStatus.FORBIDDEN, "the Host header must name this "
                           "server (a loopback address)")
    origin = headers.get("Origin")
    if origin is not None:
        try:
            netloc = urlsplit(origin).netloc
        except ValueError:
            netloc = ""
        if not host_allowed(netloc, bound):
            raise RequestError(HTTPStatus.FORBIDDEN, "requests from web pages of other "
                               "origins are refused")
    if api_key is not None:
        given = headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {api_key}".encode()):
            raise RequestError(HTTPStatus.UNAUTHORIZED, "a valid API key is required "
                               "(Authorization: Bearer KEY)")


def body_length(headers: Message, max_body_bytes: int) -> int:
    """The length of a JSON request body, from its head alone.

    Raises:
        RequestError: not JSON (415), no single ``Content-Length`` (411, 400), too
            large (413).
    """
    kind = headers.get("Content-Type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise RequestError(HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                           "the body must be application/json")
    lengths = headers.get_all("Content-Length") or []
    if headers.get("Transfer-Encoding") is not None or not lengths:
        raise RequestError(HTTPStatus.LENGTH_REQUIRED, "a Content-Length is required")
    value = lengths[0].strip()
    if len(lengths) > 1 or not re.fullmatch(r"[0-9]+", value):
        raise RequestError(HTTPStatus.BAD_REQUEST, "a bad Content-Length")
    if len(value) > 18 or int(value) > max_body_bytes:
        raise RequestError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                           f"the body exceeds {max_body_bytes} bytes")
    return int(value)


def _route(path: str) -> str:
    """A request path as the handler matches it (``//`` collapsed, no trailing ``/``)."""
    return ("/" + path.lstrip("/") if path.startswith("//") else path).rstrip("/")


def plan_head(head: bytes, bound: str, api_key: str | None,
              max_body_bytes: int) -> tuple[int, bool, bool]:
    """What the event loop does after a complete request ``head`` (request line,
    headers, blank line): ``(body bytes to read, answer "100 Continue" first, end the
    connection after the answer)``. Only a chat request that passes every check of the
    head (:func:`admit`, :func:`body_length`) has its body read; any other body is never
    read, so its connection ends after the handler's answer (a refusal, for a refused
    request)."""
    try:
        line, _, rest = head.partition(b"\n")
        words = line.decode("iso-8859-1").split()
        headers = parse_headers(io.BytesIO(rest))
    except (HTTPException, ValueError):
        return 0, False, True
    length = headers.get("Content-Length")
    declared = headers.get("Transfer-Encoding") is not None or (
        length is not None and length.strip() != "0")
    if len(words) != 3 or words[0] != "POST" or _route(words[1]) != CHAT_PATH:
        return 0, False, declared
    try:
        admit(headers, bound, api_key)
        need = body_length(headers, max_body_bytes)
    except RequestError:
        return 0, False, True
    expect = (headers.get("Expect", "").strip().lower() == "100-continue"
              and words[2] >= "HTTP/1.1")
    return need, expect, False


def _handler_class(policy: Policy, served_name: str, bound: str, api_key: str | None,
                   max_body_bytes: int) -> type[_Handler]:
    context = getattr(policy, "context_tokens", None)

    class Handler(_Handler):
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

        def _read_json(self) -> dict[str, Any]:
            """The request body as a JSON object, its size checked before reading."""
            length = body_length(self.headers, max_body_bytes)
            try:
                body = json.loads(self.rfile.read(length))
            except (ValueError, UnicodeDecodeError):
                raise RequestError(HTTPStatus.BAD_REQUEST, "the body is not JSON") from None
            if not isinstance(body, dict):
                raise RequestError(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
            return body

        def do_GET(self) -> None:
            try:
                admit(self.headers, bound, api_key)
                if _route(self.path) != MODELS_PATH:
                    raise RequestError(HTTPStatus.NOT_FOUND, "no such route")
            except RequestError as exc:
                return self._error(exc)
            entry = {"id": served_name, "object": "model", "owned_by": "llm4cov"}
            if context:
                entry["max_model_len"] = context
            self._send(HTTPStatus.OK, {"object": "list", "data": [entry]})

        def do_POST(self) -> None:
            try:
                admit(self.headers, bound, api_key)
                if _route(self.path) != CHAT_PATH:
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

    return Handler


class _Handler(BaseHTTPRequestHandler):
    """One complete request (head and body, as the event loop read them) answered into
    a buffer by a handler thread; no socket."""

    server_version = "llm4cov"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def __init__(self, request: bytes, client_address: Any) -> None:
        self.client_address = client_address
        self.rfile = io.BytesIO(request)
        self._answer = io.BytesIO()
        self.wfile = self._answer
        self.close_connection = True
        self.handle_one_request()

    def version_string(self) -> str:
        return self.server_version

    def answer(self) -> tuple[bytes, bool]:
        """The answer's bytes and whether the connection must end after it."""
        return self._answer.getvalue(), self.close_connection

    def handle_expect_100(self) -> bool:
        """The event loop answered "100 Continue" before it read the body."""
        return True

    def log_message(self, format: str, *args: Any) -> None:
        """No per-request log lines."""


def make_server(policy: Policy, served_name: str, host: str = "127.0.0.1", port: int = 8000,
                api_key: str | None = None, max_body_bytes: int = MAX_BODY_BYTES,
                limits: ConnectionLimits | None = None) -> ModelServer:
    """A server (not yet serving) for ``policy`` under ``served_name`` on ``host:port``
    (port 0 = any free port); ``api_key``: required as ``Authorization: Bearer KEY``
    when given; ``max_body_bytes``: the request body cap; ``limits``: connections and
    deadlines (default :class:`ConnectionLimits`; the body budget is at least
    ``max_body_bytes``). See the module docstring for what every request must satisfy."""
    limits = limits or ConnectionLimits()
    if limits.buffer_bytes < max_body_bytes:
        limits = ConnectionLimits(**{**limits.__dict__, "buffer_bytes": max_body_bytes})
    handler = _handler_class(policy, served_name, host, api_key, max_body_bytes)
    workers = limits.workers or max(4, 2 * int(getattr(policy, "batch_size", None) or 2))

    def plan(head: bytes) -> tuple[int, bool, bool]:
        return plan_head(head, host, api_key, max_body_bytes)

    return ModelServer(lambda request, peer: handler(request, peer).answer(), plan,
                       (host, port), limits, workers)
