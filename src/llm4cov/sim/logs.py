"""Bounded, readable simulator logs in terms of the repo's own file names."""

from __future__ import annotations

import re

_MAKE_NOISE = re.compile(
    r"^(make(\[\d+\])?: |ccache |c\+\+ |g\+\+ |/usr/bin/|rm |echo |ar |python3? |\s*$|"
    r"- V e r i l a t i o n|- Verilator: (Built|Walltime)|"
    r"\s*\.\.\. (For (warning|error) description see|Use \"/\* verilator lint_off|"
    r"See the manual at))"
)
_ERROR_LINE = re.compile(r"(%Error|%Warning|error:|Error|Internal Error)")


def scrub_paths(text: str, workdir: str) -> str:
    """Replace the temporary work dir (and ``obj/``) so paths read as the repo's own."""
    text = text.replace(workdir.rstrip("/") + "/", "").replace(workdir, ".")
    return text.replace("obj/../", "")


def clean_build_log(text: str, workdir: str) -> str:
    """Verilator/g++ diagnostics without make/compiler command noise, errors first."""
    lines = [ln for ln in scrub_paths(text, workdir).splitlines() if not _MAKE_NOISE.match(ln)]
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

