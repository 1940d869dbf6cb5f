"""Any OpenAI-compatible chat endpoint (vLLM, SGLang, Ollama, llama.cpp, hosted APIs).

Uses the official ``openai`` client, whose own retry logic (exponential backoff on
connection errors, 408/409/429 and 5xx) handles transient failures. The API key comes
from the environment: ``LLM4COV_API_KEY``, else ``OPENAI_API_KEY``, else ``"EMPTY"``
(what local servers accept).
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

import openai

from llm4cov.policies.base import Generation, GenerationRequest, PolicyError
from llm4cov.policies.bounded_http import bounded_clients

MODEL_ID = re.compile(r"[A-Za-z0-9][\w.:/@+-]{0,199}", re.ASCII)
"""What a model name the server reports may look like to be recorded (a Hugging Face id,
a GGUF file name, ``name:tag``)."""
_SURROGATE = re.compile("[\ud800-\udfff]")


def served_model(reported: str | None, asked: str) -> str:
    """The model name a generation records: the one the server says it served when it
    looks like a model id (:data:`MODEL_ID`), else the one asked for. The server's text
    reaches records, reports and training data (a thirty-ninth red team put a table row,
    a heading and terminal escapes into ``close``'s sign-off report through it)."""
    return reported if reported and MODEL_ID.fullmatch(reported) else asked


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate (a JSON ``\\udc80`` escape decodes to one: no
    Unicode text holds it, and no UTF-8 file can) replaced by U+FFFD: an answer is
    written to results, reports and training data (a thirty-ninth red team ended a bench
    run with one)."""
    return _SURROGATE.sub("\ufffd", text)


def api_key_from_env() -> str:
    """The API key: ``LLM4COV_API_KEY`` or ``OPENAI_API_KEY``, else ``"EMPTY"``."""
    return os.environ.get("LLM4COV_API_KEY") or os.environ.get("OPENAI_API_KEY") or "EMPTY"


class OpenAIChatPolicy:
    """A chat-completions model behind ``base_url``.

    ``timeout_s`` is the per-request timeout in seconds, the whole response body
    included, which may have :data:`~llm4cov.policies.bounded_http.MAX_RESPONSE_BYTES`
    (:mod:`llm4cov.policies.bounded_http`); ``max_retries`` the client's retry count.
    Errors after retries raise :class:`PolicyError`.
    """

    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 600.0,
        max_retries: int = 3,
    ) -> None:
        self.name = model
        self.model = model
        self.base_url = base_url
        key = api_key or api_key_from_env()
        sync_http, async_http = bounded_clients(timeout_s)
        self._client = openai.OpenAI(base_url=base_url, api_key=key, timeout=timeout_s,
                                     max_retries=max_retries, http_client=sync_http)
        self._async_client = openai.AsyncOpenAI(base_url=base_url, api_key=key,
                                                timeout=timeout_s, max_retries=max_retries,
                                                http_client=async_http)
        self.timeout_s = timeout_s
        self.max_retries = max_retries

    def _kwargs(self, request: GenerationRequest) -> dict[str, Any]:
        p = request.params
        seed = request.seed if request.seed is not None else p.seed
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages,
            "temperature": p.temperature,
            "top_p": p.top_p,
            "max_tokens": p.max_tokens,
        }
        if seed is not None:
            kwargs["seed"] = seed
        return kwargs

    def _failed(self, exc: Exception) -> str:
        """What went wrong, with the cause a connection error hides (a bound of
        :mod:`~llm4cov.policies.bounded_http`)."""
        cause = f" ({exc.__cause__})" if exc.__cause__ is not None else ""
        return f"{self.model} at {self.base_url}: {exc}{cause}"

    def _to_generation(self, response, started: float) -> Generation:
        if not response.choices:
            raise PolicyError(f"{self.model}: the server returned no choices")
        choice = response.choices[0]
        usage = response.usage
        return Generation(
            text=valid_text(choice.message.content or ""),
            model=served_model(response.model, self.model),
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            finish_reason=choice.finish_reason or "",
            latency_s=time.monotonic() - started,
        )

    def generate(self, request: GenerationRequest) -> Generation:
        started = time.monotonic()
        try:
            response = self._client.chat.completions.create(**self._kwargs(request))
        except openai.OpenAIError as exc:
            raise PolicyError(self._failed(exc)) from exc
        return self._to_generation(response, started)

    async def agenerate(self, request: GenerationRequest) -> Generation:
        started = time.monotonic()
        try:
            response = await self._async_client.chat.completions.create(**self._kwargs(request))
        except openai.OpenAIError as exc:
            raise PolicyError(self._failed(exc)) from exc
        return self._to_generation(response, started)

    def describe(self) -> dict[str, Any]:
        return {"model": self.model, "base_url": self.base_url, "timeout_s": self.timeout_s,
                "max_retries": self.max_retries}
