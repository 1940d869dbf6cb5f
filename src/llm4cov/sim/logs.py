"""Bounded, readable simulator logs in terms of the repo's own file names."""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from llm4cov.sim.config import default_cache_root

_MAKE_NOISE = re.compile(
    r"^(make(\[\d+\])?: |ccache |c\+\+ |g\+\+ |/usr/bin/|rm |echo |ar |python3? |\s*$|"
    r"- V e r i l a t i o n|- Verilator: (Built|Walltime)|"
    r"\s*\.\.\. (For (warning|error) description see|Use \"/\* verilator lint_off|"
    r"See the manual at))"
)
_ERROR_LINE = re.compile(r"(%Error|%Warning|error:|Error|Internal Error)")


def scrub_paths(text: str, workdir: str, caches: Iterable[str] = ()) -> str:
    """Replace the temporary work dir (and ``obj/``) so paths read as the repo's own,
    then the host's folders a simulator or compiler message names (:func:`host_folders`,
    ``caches``: the caches' roots in use)."""
    text = text.replace(workdir.rstrip("/") + "/", "").replace(workdir, ".")
    text = text.replace("obj/../", "")
    for folder, placeholder in host_folders(tuple(caches)):
        text = re.sub(re.escape(folder) + r"(?![\w.+-])", placeholder, text)
    return text


@functools.cache
def host_folders(caches: tuple[str, ...] = ()) -> tuple[tuple[str, str], ...]:
    """``(folder, placeholder)`` of the host folders a log may name, longest first:
    the caches' roots (``<cache>``: fetched toolchains, precompiled headers), the
    virtual environment's prefix (``<venv>``: the pinned Verilator's runtime sources,
    whose ``__FILE__`` its runtime messages print) and the home folder (``~``). A log
    goes into the model's prompt (perhaps a remote server) and into reports: neither
    needs where the user keeps things. System folders (``/usr``) are left as they are."""
    found = {str(Path(c).expanduser().resolve()): "<cache>" for c in caches if c}
    found.setdefault(str(default_cache_root().resolve()), "<cache>")
    if sys.prefix != sys.base_prefix:
        found.setdefault(str(Path(sys.prefix).resolve()), "<venv>")
        found.setdefault(sys.prefix, "<venv>")
    home = str(Path.home())
    if home not in ("", "/"):
        found.setdefault(home, "~")
    return tuple(sorted(found.items(), key=lambda kv: -len(kv[0])))


def clean_build_log(text: str, workdir: str, caches: Iterable[str] = ()) -> str:
    """Verilator/g++ diagnostics without make/compiler command noise, errors first
    (paths scrubbed: :func:`scrub_paths`)."""
    lines = [ln for ln in scrub_paths(text, workdir, caches).splitlines()
             if not _MAKE_NOISE.match(ln)]
    errors, rest = _split_diagnostics(lines)
    return "\n".join(errors + rest)


def _split_diagnostics(lines: list[str]) -> tuple[list[str], list[str]]:
    """Group each ``%Error``/``%Warning`` line with its indented context; errors first."""
    blocks: list[list[str]] = []
    for line in lines:
        if blocks and (line.startswith((" ", "\t", ":")) or not _ERROR_LINE.search(line)):
            blocks[-1].append(line)
        else:
            blocks.append([line])
    errors = [ln for b in blocks if _is_error(b[0]) for ln in b]
    rest = [ln for b in blocks if not _is_error(b[0]) for ln in b]
    return errors, rest


def _is_error(first: str) -> bool:
    return first.startswith("%Error") or " error:" in first or "Internal Error" in first


def bound(text: str, limit: int) -> str:
    """At most ``limit`` characters: head and tail with a marker of what was cut."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} characters cut ...]\n{text[-tail:]}"

