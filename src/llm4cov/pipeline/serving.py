"""Checkpoint k as a policy: loaded in this process (``local:PATH``) or served by vLLM.

With ``student.serve: vllm`` the user runs ``vllm serve CHECKPOINT --served-model-name
NAME`` (docs/training.md, "Serving a checkpoint with vLLM"); the pipeline prints that
command and polls the endpoint's ``GET /models`` (OpenAI API, which vLLM implements)
until ``NAME`` is listed. One name per checkpoint, so a server still running the
previous checkpoint is never mistaken for the next one.
"""

from __future__ import annotations

import json
import shlex
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from llm4cov.pipeline.config import Student
from llm4cov.policies.base import PolicyError


class ServerNotReady(PolicyError):
    """The served checkpoint did not appear in time, or the server runs another one."""


@dataclass(frozen=True)
class ModelRef:
    """Checkpoint ``k`` (a directory or model id) as the policy name and endpoint the
    agent uses: ``local:CHECKPOINT`` and no URL, or the served name and its URL."""

    k: int | str
    checkpoint: str
    name: str
    base_url: str | None = None

    @property
    def served(self) -> bool:
        return self.base_url is not None


def student_ref(student: Student, k: int | str, checkpoint: str) -> ModelRef:
    """How the pipeline reaches checkpoint ``k`` (``k`` is ``naive`` for mode naive)."""
    if student.serve == "local":
        return ModelRef(k, checkpoint, f"local:{checkpoint}")
    return ModelRef(k, checkpoint, student.served_name.format(k=k), student.base_url)


def serve_command(ref: ModelRef) -> str:
    """The ``vllm serve`` command for ``ref`` (docs/training.md's flags: bf16, the paper's
    40,960-token context, sampling defaults from the checkpoint's generation config)."""
    words = ["vllm", "serve", ref.checkpoint, "--served-model-name", ref.name,
             "--dtype", "bfloat16", "--max-model-len", "40960", "--generation-config", "auto"]
    port = urlsplit(ref.base_url or "").port
    return shlex.join(words + (["--port", str(port)] if port else []))


def list_models(base_url: str, timeout_s: float = 10.0) -> list[dict[str, Any]]:
    """The ``data`` entries of ``GET {base_url}/models`` (``id`` = served name, vLLM adds
    ``root`` = the path it loaded). The API key is the policies' (``LLM4COV_API_KEY``,
    ``OPENAI_API_KEY``).

    Raises:
        OSError: the server cannot be reached or answers with an error.
        ValueError: the answer is not the OpenAI models list.
    """
    from llm4cov.policies.openai_chat import api_key_from_env

    request = urllib.request.Request(base_url.rstrip("/") + "/models",
                                     headers={"Authorization": f"Bearer {api_key_from_env()}"})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        body = json.loads(response.read().decode("utf-8"))
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        raise ValueError("not an OpenAI /models answer")
    return [m for m in body["data"] if isinstance(m, dict)]


def _same_checkpoint(root: str | None, checkpoint: str) -> bool:
    """False only when both are directories here and differ (a server on another
    machine may name the checkpoint by another path)."""
    if not root or not Path(root).is_dir() or not Path(checkpoint).is_dir():
        return True
    return Path(root).resolve() == Path(checkpoint).resolve()


def wait_until_served(ref: ModelRef, wait_s: float, poll_s: float,
                      on_event: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Poll ``ref.base_url`` until it lists ``ref.name``; returns that ``/models`` entry.
    Waits at most ``wait_s`` seconds (0 = check once), ``poll_s`` seconds between polls.

    Raises:
        ServerNotReady: not listed in time, or listed with another checkpoint (``root``).
    """
    if ref.base_url is None:
        raise ValueError(f"{ref.name} is not a served checkpoint")
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            models = list_models(ref.base_url)
        except (OSError, ValueError) as exc:  # URLError is an OSError
            seen = f"not reachable ({exc})"
        else:
            entry = next((m for m in models if m.get("id") == ref.name), None)
            if entry is not None:
                if not _same_checkpoint(entry.get("root"), ref.checkpoint):
                    raise ServerNotReady(
                        f"{ref.base_url} serves {ref.name} from {entry.get('root')}, not "
                        f"{ref.checkpoint}; restart it with: {serve_command(ref)}")
                return entry
            seen = f"serves {', '.join(str(m.get('id')) for m in models) or 'nothing'}"
        if time.monotonic() >= deadline:
            raise ServerNotReady(
                f"checkpoint {ref.k} is not served as {ref.name} at {ref.base_url} ({seen}); "
                f"start it with: {serve_command(ref)} and rerun the pipeline to resume")
        if not told:
            on_event(f"waiting up to {wait_s:.0f} s for checkpoint {ref.k} at {ref.base_url} "
                     f"({seen}); start it with: {serve_command(ref)}")
            told = True
        time.sleep(max(0.0, min(poll_s, deadline - time.monotonic())))
