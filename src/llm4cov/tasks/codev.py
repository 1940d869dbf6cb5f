"""CodeV-R1-style JSONL (task format ``codev``), one design per line: an id
(``problem_id`` or ``id``), a spec text (``question``, ``instruction``, ``problem``,
``prompt`` or ``spec``) and the reference RTL (``reference``, ``answer``,
``ground_truth``, ``solution``, ``code``, ``output`` or ``response``; fenced code and
``<think>`` sections are handled). The DUT is the single top module, or among several
the one the spec names. Task ids are ``codev/<id>``.
"""

from __future__ import annotations

import re
from typing import Any

from llm4cov.agent.response import strip_thinking
from llm4cov.tasks.hdl import module_decls, top_modules
from llm4cov.tasks.model import SourceFile, Task
from llm4cov.tasks.sources import RecordSkip, TaskSource

CODEV_ID_KEYS = ("problem_id", "id")
CODEV_SPEC_KEYS = ("question", "instruction", "problem", "prompt", "spec")
CODEV_RTL_KEYS = ("reference", "answer", "ground_truth", "solution", "code", "output",
                  "response")
_FENCED = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)
_MODULE = re.compile(r"\bmodule\s+\w+")


def first_field(record: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The value of the first of ``keys`` that ``record`` has, not None nor empty."""
    return next((record[k] for k in keys if record.get(k) not in (None, "")), None)


def rtl_from_answer(text: str) -> str:
    """The Verilog of an answer text: every fenced block that declares a module (joined),
    else the text from the first ``module`` to the last ``endmodule``; "" if none."""
    text = strip_thinking(text)
    blocks = [b.strip() for b in _FENCED.findall(text) if _MODULE.search(b)]
    if blocks:
        return "\n\n".join(blocks) + "\n"
    start, end = _MODULE.search(text), text.rfind("endmodule")
    if start is None or end < start.start():
        return ""
    return text[start.start() : end + len("endmodule")] + "\n"


def detect_top(rtl_files: list[SourceFile], spec: str = "") -> str:
    """The DUT module: the single top module, else the only top the spec names.

    Raises:
        RecordSkip: ``no_module`` or ``ambiguous_top``.
    """
    tops = top_modules(module_decls(rtl_files))
    if not tops:
        raise RecordSkip("no_module", "no module declaration in the RTL")
    if len(tops) == 1:
        return tops[0]
    named = [t for t in tops if re.search(rf"\b{re.escape(t)}\b", spec)]
    if len(named) == 1:
        return named[0]
    raise RecordSkip("ambiguous_top", f"several top modules: {', '.join(tops)}")


def codev_task(record: dict[str, Any]) -> Task:
    """The task of one CodeV-R1-style record (module docstring for the field names).

    Raises:
        RecordSkip: ``invalid_record`` (no id), ``no_rtl``, ``no_module``,
            ``ambiguous_top``.
    """
    pid = first_field(record, CODEV_ID_KEYS)
    if pid is None:
        raise RecordSkip("invalid_record", f"no id field ({', '.join(CODEV_ID_KEYS)})")
    repo_id = f"codev/{pid}"
    spec = str(first_field(record, CODEV_SPEC_KEYS) or "")
    rtl = rtl_from_answer(str(first_field(record, CODEV_RTL_KEYS) or ""))
    if not rtl:
        raise RecordSkip("no_rtl", f"no Verilog module in {', '.join(CODEV_RTL_KEYS)}",
                         repo_id)
    try:
        top = detect_top([SourceFile(name="design.v", content=rtl)], spec)
    except RecordSkip as exc:
        raise RecordSkip(exc.reason, exc.detail, repo_id) from exc
    return Task(
        id=repo_id,
        source="codev",
        spec_files=[SourceFile(name="spec.md", content=spec)] if spec else [],
        rtl_files=[SourceFile(name=f"{top}.v", content=rtl)],
        dut_module_name=top,
        meta={"upstream_id": str(pid)},
    )


def is_codev(record: dict[str, Any]) -> bool:
    """A record with ``problem_id``, or with an RTL answer field and none of the other
    task formats' keys (``rtl_files``, ``harness``)."""
    return "problem_id" in record or (
        "rtl_files" not in record and "harness" not in record
        and first_field(record, CODEV_RTL_KEYS) is not None)


SOURCE = TaskSource("codev", is_codev, codev_task)
"""The ``codev`` task source (:mod:`llm4cov.tasks.sources`)."""

__all__ = ["CODEV_ID_KEYS", "CODEV_RTL_KEYS", "CODEV_SPEC_KEYS", "SOURCE", "codev_task",
           "detect_top", "first_field", "is_codev", "rtl_from_answer"]
