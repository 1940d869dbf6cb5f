"""CVDP task formats: NVIDIA's raw benchmark JSONL and the CVDP-ECov release.

- Raw CVDP (``nvidia/cvdp-benchmark-dataset``, NVlabs/cvdp_benchmark ``example_dataset``):
  one record per line with ``id``, ``categories``, ``input.prompt``, ``input.context``,
  ``harness.files`` and ``output.context``. Only category ``cid012`` (testbench stimulus
  generation, the CVDP-ECov category) is a coverage task; other records are skipped.
  For cid012 the RTL is the harness's ``src/*.sv``/``src/*.v``, the threshold is
  ``TARGET`` in ``src/.env`` (CVDP's harness compares it with Cadence IMC's "Average" of
  the instance), and the reference testbench is ``output.context``. The reference goes to
  :attr:`Task.reference_tb` only: the spec shown to the model is the prompt (as
  ``prompt.md``) plus the non-HDL files of ``input.context``
  (``../shared/benchmarks/README.md``, "Task schema").
- CVDP-ECov (the LLM4Cov paper's release, ``hez2024/cvdp_ecov_eval``): ``id``,
  ``spec_files``, ``rtl_files``, ``dut_module_name``, ``dut_instance_name``,
  ``instruction``, ``targets``, ``difficulty``, ``is_agentic``.

Task ids get the ``cvdp/`` prefix of our task schema (``meta["upstream_id"]`` keeps the
original). Every CVDP threshold has ``meta["target_source"] = "cvdp_official"``: it was
calibrated on Xcelium/IMC, not on Verilator.

Both are task sources (:data:`RAW_SOURCE`, :data:`ECOV_SOURCE`) of the registry in
:mod:`llm4cov.tasks.sources`, which also holds the loader of any format
(:func:`~llm4cov.tasks.sources.load_any_tasks`, importable from here too).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from llm4cov.tasks.filelist import parse_args
from llm4cov.tasks.hdl import (
    COMPILED_SUFFIXES,
    HDL_SUFFIXES,
    module_decls,
    text_decls,
    top_modules,
)
from llm4cov.tasks.model import ReferenceTestbench, SourceFile, Target, Task, TaskError
from llm4cov.tasks.sources import NotATask, TaskSource, detect, load_any_tasks, read_file

CID = "cid012"
DIFFICULTIES = ("easy", "medium", "hard")
TARGET_SOURCE = "cvdp_official"

# "The `gf_multiplier` module is instantiated as `uut`", "... with the instance name `dut`";
# the name must be quoted, so "instantiated as a submodule" is no match
_PROMPT_INSTANCE = (
    re.compile(r"instantiated\s+as\s+[`'\"*]+(\w+)", re.IGNORECASE),
    re.compile(r"instance\s+name\s+(?:of\s+)?[`'\"*]+(\w+)", re.IGNORECASE),
)
# CVDP's harness check: assert metrics ["uut"]["Average"] >= float(os.getenv("TARGET"))
_HARNESS_INSTANCE = re.compile(r"metrics\s*\[\s*[\"'](\w+)[\"']\s*\]\s*\[\s*[\"']Average")
# process.py: cmd = "xrun -coverage all /src/gf_multiplier.sv /code/verif/tb.sv ..."
_XRUN = re.compile(r"""["']((?:xrun|irun|vcs|verilator)\s[^"']*)["']""")
_ENV_LINE = re.compile(r"^\s*(\w+)\s*=\s*(.*?)\s*$", re.MULTILINE)


class TaskFormat(StrEnum):
    """Three of the registered task formats, as :func:`detect_format` names them (kept
    for its callers; :func:`llm4cov.tasks.sources.format_names` lists every format)."""

    TASKS = "tasks"  # our schema (../shared/benchmarks/README.md)
    CVDP_RAW = "cvdp_raw"
    CVDP_ECOV = "cvdp_ecov"


def _task_id(upstream_id: str) -> str:
    return upstream_id if upstream_id.startswith("cvdp/") else f"cvdp/{upstream_id}"


def _difficulty(categories: list[str]) -> str | None:
    return next((c for c in categories if c in DIFFICULTIES), None)


def parse_env(text: str) -> dict[str, str]:
    """``KEY = VALUE`` lines of a CVDP ``src/.env`` file."""
    return {k: v for k, v in _ENV_LINE.findall(text)}


def _instance_from_text(text: str) -> str | None:
    for pattern in _PROMPT_INSTANCE:
        if m := pattern.search(text):
            return m.group(1)
    return None


def _reference_tb(
    context: dict[str, str], rtl_modules: set[str]
) -> tuple[ReferenceTestbench | None, list[tuple[str, str]]]:
    """The reference testbench in ``output.context`` and the ``(module, instance)`` pairs
    of RTL modules it instantiates. The main file is the HDL file that instantiates an
    RTL module; the other files travel as ``aux_files``."""
    hdl = [SourceFile(name=PurePosixPath(n).name, content=c) for n, c in context.items()
           if n.lower().endswith(HDL_SUFFIXES) and c.strip()]
    if not hdl:
        return None, []
    found = ((f, [p for d in text_decls(f.content, f.name) for p in d.instances
                  if p[0] in rtl_modules])
             for f in hdl)
    main, pairs = next(((f, p) for f, p in found if p), (hdl[0], []))
    aux = [SourceFile(name=PurePosixPath(n).name, content=c) for n, c in context.items()
           if PurePosixPath(n).name != main.name]
    return ReferenceTestbench(name=main.name, content=main.content, aux_files=aux), pairs


def harness_build(harness: dict[str, str], rtl_names: set[str]) -> dict[str, Any]:
    """The build fields of a raw CVDP task from the harness's ``xrun`` command line
    (``+incdir+``, ``+define+``/``-define``, ``-pvalue+``/``-G`` and the order of the
    ``/src/...`` sources; ``filelist.parse_args``): ``{}`` when there is none."""
    match = next((m for name, text in sorted(harness.items()) if name.endswith(".py")
                  for m in [_XRUN.search(text)] if m), None)
    if match is None:
        return {}
    fl = parse_args(shlex.split(match.group(1))[1:], Path("/"), origin="harness xrun command")

    def in_src(path: Path) -> str | None:
        text = path.as_posix()
        return "." if text == "/src" else (text[5:] if text.startswith("/src/") else None)

    return {
        "include_dirs": [d for p in fl.include_dirs if (d := in_src(p))],
        "defines": fl.defines,
        "parameters": fl.parameters,
        "compile_files": [n for p in fl.sources if (n := in_src(p)) in rtl_names],
    }


def cvdp_raw_task(record: dict[str, Any]) -> Task:
    """The task of one raw CVDP cid012 record (see the module docstring).

    The DUT module is the RTL module the reference testbench instantiates, else the
    single top module of the RTL. The instance name comes from the prompt
    ("instantiated as `uut`"), else from the harness's check, else from the reference
    testbench.

    Raises:
        TaskError: not a cid012 record, no RTL under ``src/``, no ``TARGET`` in
            ``src/.env``, or the DUT module or instance name cannot be determined.
    """
    rid = str(record.get("id", "?"))
    categories = list(record.get("categories") or [])
    if CID not in categories:
        raise TaskError(f"{rid}: category {categories} is not {CID} (testbench stimulus)")
    try:
        prompt = record["input"]["prompt"]
        harness = record["harness"]["files"]
    except (KeyError, TypeError) as exc:
        raise TaskError(f"{rid}: not a raw CVDP record (missing {exc})") from exc
    in_context = record["input"].get("context") or {}
    out_context = (record.get("output") or {}).get("context") or {}

    rtl = [SourceFile(name=name.removeprefix("src/"), content=content)
           for name, content in sorted(harness.items())
           if name.startswith("src/") and name.lower().endswith(HDL_SUFFIXES)]
    if not any(f.name.lower().endswith(COMPILED_SUFFIXES) for f in rtl):
        raise TaskError(f"{rid}: the harness has no src/*.sv or src/*.v files")
    build = harness_build(harness, {f.name for f in rtl})
    env = parse_env(harness.get("src/.env", ""))
    try:
        target = float(env["TARGET"])
    except (KeyError, ValueError) as exc:
        raise TaskError(f"{rid}: no numeric TARGET in src/.env") from exc

    decls = module_decls(rtl, build.get("include_dirs", ()), build.get("defines"))
    ref, ref_pairs = _reference_tb(out_context, {d.name for d in decls})
    ref_modules = sorted({m for m, _ in ref_pairs})
    tops = top_modules(decls)
    if len(ref_modules) == 1:
        dut = ref_modules[0]
    elif len(tops) == 1:
        dut = tops[0]
    else:
        raise TaskError(f"{rid}: cannot tell the DUT module (RTL tops: {', '.join(tops)})")
    ref_instance = next((i for m, i in ref_pairs if m == dut), None)
    harness_check = "\n".join(c for n, c in harness.items() if n.endswith(".py"))
    m = _HARNESS_INSTANCE.search(harness_check)
    instance = _instance_from_text(prompt) or (m.group(1) if m else None) or ref_instance
    if instance is None:
        raise TaskError(f"{rid}: no instance name in the prompt, harness or reference")

    spec = [SourceFile(name="prompt.md", content=prompt)]
    spec += [SourceFile(name=n, content=c) for n, c in sorted(in_context.items())
             if not n.lower().endswith(HDL_SUFFIXES)]
    notes = ["spec = the cid012 prompt (input.prompt) plus the non-HDL files of input.context"]
    if ref_instance and ref_instance != instance:
        notes.append(f"the reference testbench names the instance {ref_instance!r}")
    return Task(
        id=_task_id(rid),
        source="cvdp",
        spec_files=spec,
        rtl_files=rtl,
        dut_module_name=dut,
        dut_instance_name=instance,
        targets=[Target(inst_name=instance, metric="overall", target_percentage=target)],
        reference_tb=ref,
        **build,
        difficulty=_difficulty(categories),
        is_agentic=False,
        meta={
            "upstream_id": rid,
            "categories": categories,
            "official_target": target,
            "target_source": TARGET_SOURCE,
            "reference_dut_instance": ref_instance,
            "upstream_files": {"rtl": [f"src/{f.name}" for f in rtl],
                               "reference_tb": sorted(out_context)},
            "notes": notes,
        },
    )


def raw_record_task(record: dict[str, Any]) -> Task:
    """The task of one raw CVDP record of any category (the ``cvdp_raw`` source's read).

    Raises:
        NotATask: ``not_cid012``, a record of another category.
        TaskError, ValidationError: see :func:`cvdp_raw_task`.
    """
    if CID not in (record.get("categories") or []):
        raise NotATask("not_cid012", f"categories {record.get('categories')}")
    return cvdp_raw_task(record)


RAW_SOURCE = TaskSource("cvdp_raw", lambda r: "input" in r and "harness" in r,
                        raw_record_task)
"""Raw CVDP JSONL: records with ``input`` and ``harness``."""


def iter_cvdp_raw(path: Path | str) -> Iterator[Task]:
    """Tasks of a raw CVDP JSONL file; records of other categories than cid012 are
    skipped (counted in a log message).

    Raises:
        TaskError: a line is not JSON, or a cid012 record cannot be used (names the line).
    """
    return read_file(path, RAW_SOURCE)


def cvdp_ecov_task(record: dict[str, Any]) -> Task:
    """The task of one CVDP-ECov record.

    Raises:
        TaskError: a required field is missing or invalid.
    """
    rid = str(record.get("id", "?"))
    missing = [k for k in ("id", "rtl_files", "dut_module_name", "dut_instance_name", "targets")
               if k not in record]
    if missing:
        raise TaskError(f"{rid}: not a CVDP-ECov record (missing {', '.join(missing)})")
    fields = {k: record[k] for k in ("spec_files", "rtl_files", "dut_module_name",
                                     "dut_instance_name", "instruction", "targets",
                                     "difficulty", "is_agentic", "include_dirs", "defines",
                                     "parameters", "compile_files") if k in record}
    try:
        return Task(id=_task_id(rid), source="cvdp", **fields,
                    meta={"upstream_id": rid, "target_source": TARGET_SOURCE})
    except ValidationError as exc:
        raise TaskError(f"{rid}: invalid CVDP-ECov record: {exc}") from exc


ECOV_SOURCE = TaskSource(
    "cvdp_ecov",
    lambda r: "rtl_files" in r and "dut_instance_name" in r and "source" not in r,
    cvdp_ecov_task)
"""CVDP-ECov JSONL: records with ``rtl_files`` and ``dut_instance_name``, no ``source``."""


def iter_cvdp_ecov(path: Path | str) -> Iterator[Task]:
    """Tasks of a CVDP-ECov JSONL file.

    Raises:
        TaskError: a line is not JSON or not a valid record (names the line).
    """
    return read_file(path, ECOV_SOURCE)


def detect_format(record: dict[str, Any]) -> TaskFormat:
    """The format of one record as the registry detects it
    (:func:`llm4cov.tasks.sources.detect`): raw CVDP has ``input`` and ``harness``; our
    schema has ``source``; CVDP-ECov has ``rtl_files`` and ``dut_instance_name`` but no
    ``source``.

    Raises:
        TaskError: none of the three (a record of another registered format too).
    """
    name = detect(record).name
    if name not in tuple(TaskFormat):
        raise TaskError(f"a {name} record, not one of {', '.join(TaskFormat)}")
    return TaskFormat(name)


__all__ = ["CID", "ECOV_SOURCE", "RAW_SOURCE", "TaskFormat", "cvdp_ecov_task",
           "cvdp_raw_task", "detect_format", "harness_build", "iter_cvdp_ecov",
           "iter_cvdp_raw", "load_any_tasks", "parse_env", "raw_record_task"]
