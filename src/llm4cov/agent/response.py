"""Extracting the testbench from a model response (untrusted text).

Rules, in order: drop ``<think>...</think>`` sections (also an unterminated one);
collect fenced code blocks (```systemverilog, ```verilog, ```sv, plain ```); prefer a
block that declares a module and instantiates the DUT module (a block that only
declares the DUT, e.g. echoed RTL, does not count), then any block that
declares a module (the longest). Without fences, take the text from the first
`` `timescale``/``module`` to the last ``endmodule``. No module at all -> None.
"""

from __future__ import annotations

import re

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|$)", re.DOTALL)
_MODULE = re.compile(r"\bmodule\s+\w+")
_START = re.compile(r"(`timescale|\bmodule\s+\w+)")

NO_TESTBENCH = "no testbench in response"


def strip_thinking(text: str) -> str:
    """The response without reasoning sections."""
    return _THINK.sub("", text)


def extract_testbench(response: str, dut_module: str) -> str | None:
    """The testbench source in ``response``, or None when it holds no module."""
    text = strip_thinking(response or "")
    blocks = [body for lang, body in _FENCE.findall(text) if lang.lower() not in ("text", "log")]
    with_module = [b for b in blocks if _MODULE.search(b)]
    name = re.escape(dut_module)
    instantiating = [
        b for b in with_module
        if re.search(rf"\b{name}\b", re.sub(rf"\bmodule\s+{name}\b", "", b))
    ]
    for group in (instantiating, with_module):
        if group:
            return max(group, key=len).strip() + "\n"
    if "```" in text:
        return None
    start = _START.search(text)
    end = text.rfind("endmodule")
    if start is None or end < start.start():
        return None
    return text[start.start() : end + len("endmodule")].strip() + "\n"
