"""How often pyslang's verdict and Verilator's disagree: decides the pre-check whitelist.

For every variant of ``mutants.py`` (seeds as found plus their mutants) that passes the
evaluator's safety and structure checks, the files are written to a work dir as the
evaluator writes them, then

- pyslang: :func:`llm4cov.sim.safety.precheck.diagnose` (every error with its code), and
- Verilator: the evaluator's own Verilator step (``Evaluator.verilate_command``, the
  first half of every build, ``-Wno-fatal``): accepted iff it exits 0. A testbench
  that fails there is a ``compile_error`` of the evaluator; one that passes it could
  still fail in g++, so counting it as *accepted* is the conservative side.

A code is *sure* when it appeared among a testbench's errors only on testbenches
Verilator rejected, on at least ``--min-support`` of them. The report (Markdown) gives
per-code counts, the resulting whitelist, a two-fold cross-validation by design
(whitelist from one half, false rejections counted on the other), the pre-check's
recall, whether its first error names Verilator's file:line, and its latency.

    python benchmarks/precheck_agreement.py --jobs 2 \
        --rows runs/precheck_agreement.jsonl --report docs/results/precheck_agreement.md
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import mutants

from llm4cov.sim.analysis.structure import StructureError, plan_testbench
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.safety import precheck, workdirs
from llm4cov.sim.safety.process import run_limited
from llm4cov.sim.safety.static_check import check_testbench

_FIRST_ERROR = re.compile(r"%Error(?:-\w+)?: ([^:\s]+):(\d+):")
_EVALUATOR: Evaluator | None = None


def prepare(variant: mutants.Variant) -> tuple[str | None, object]:
    """``(None, plan)``, or ``(why, None)`` when the evaluator never compiles it:
    rejected as unsafe, no DUT instance, or the structure check raised."""
    task, tb = variant.seed.task, variant.tb
    if check_testbench(tb.content, tb.name):
        return "unsafe", None
    try:
        return None, plan_testbench(task.rtl_files, tb, task.dut_module_name, None)
    except StructureError:
        return "structure", None
    except Exception as exc:  # a crash of the structure check: reported, not measured
        return f"structure check raised {type(exc).__name__}: {exc}", None


def verilator_verdict(variant: mutants.Variant) -> dict:
    """Verilator's verdict (the evaluator's Verilator step) or why it was skipped."""
    global _EVALUATOR
    if _EVALUATOR is None:
        _EVALUATOR = Evaluator(SimConfig(result_cache=False))
    row = {"seed": variant.seed.name, "op": variant.op}
    skipped, plan = prepare(variant)
    if skipped:
        return {**row, "skipped": skipped}
    with _workdir(variant) as workdir:
        backend = _EVALUATOR.backend
        run = run_limited(backend.verilate_command(variant.seed.task, variant.tb, plan),
                          cwd=str(workdirs.sources(workdir)), env=backend.env(),
                          timeout_s=120)
    first = _FIRST_ERROR.search(run.output)
    return {
        **row,
        "verilator_ok": run.returncode == 0 and not run.timed_out,
        "verilator_first_error": f"{first.group(1)}:{first.group(2)}" if first else "",
        "internal_error": "Internal Error" in run.output,
    }


def with_pyslang(variant: mutants.Variant, verdict: dict) -> dict:
    """``verdict`` plus pyslang's findings and its time, measured here and now."""
    _, plan = prepare(variant)
    task = variant.seed.task
    with _workdir(variant) as workdir:
        dirs = sorted({(workdir / f.name).parent for f in task.rtl_files})
        t0 = time.perf_counter()
        found = precheck.diagnose(task.rtl_files, variant.tb, plan.tb_top, [workdir, *dirs])
        seconds = time.perf_counter() - t0
    return {**verdict, "tb": variant.tb.name, "findings": found, "pyslang_s": seconds}


@contextlib.contextmanager
def _workdir(variant: mutants.Variant):
    """A temporary work dir holding the RTL and the testbench in its sources folder,
    as the evaluator's (``sim/safety/workdirs.py``)."""
    workdir = Path(tempfile.mkdtemp(prefix="agree-"))
    try:
        for f in [*variant.seed.task.rtl_files, variant.tb]:
            path = workdirs.sources(workdir) / f.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f.content, errors="surrogateescape")
        yield workdir
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def tb_codes(row: dict) -> set[str]:
    """Error codes pyslang reported in the testbench, outside exempt constructs."""
    return {f.code for f in row["findings"] if f.file == row["tb"] and not f.exempt}


def code_counts(rows: list[dict]) -> dict[str, tuple[int, int, int]]:
    """``{code: (testbenches with it, of them Verilator accepted, Verilator rejected
    with this as the only code)}``."""
    seen, accepted, alone = Counter(), Counter(), Counter()
    for row in rows:
        codes = tb_codes(row)
        for code in codes:
            seen[code] += 1
            accepted[code] += row["verilator_ok"]
        if len(codes) == 1 and not row["verilator_ok"]:
            alone[next(iter(codes))] += 1
    return {c: (seen[c], accepted[c], alone[c]) for c in seen}


def sure(counts: dict[str, tuple[int, int, int]], min_support: int) -> frozenset[str]:
    """Codes never seen on an accepted testbench and, on >= ``min_support`` rejected
    ones, the only code."""
    return frozenset(c for c, (_, ok, alone) in counts.items() if ok == 0 and alone >= min_support)


def rejected(row: dict, codes: frozenset[str]) -> bool:
    """Whether the pre-check's rule (``precheck.sure_errors``) rejects with ``codes``."""
    return bool(precheck.sure_errors(row["findings"], row["tb"], codes))


def fold(seed: str) -> int:
    design = seed.split(":", 1)[1]
    return hashlib.sha256(design.encode()).digest()[0] % 2


def report(all_rows: list[dict], min_support: int, command: str) -> str:
    """The Markdown report (see the module docstring)."""
    skipped = Counter(r["skipped"].split(":")[0] for r in all_rows if "skipped" in r)
    internal = [r for r in all_rows if r.get("internal_error")]
    rows = [r for r in all_rows if "skipped" not in r and not r["internal_error"]]
    counts = code_counts(rows)
    codes = sure(counts, min_support)
    accepted = [r for r in rows if r["verilator_ok"]]
    failing = [r for r in rows if not r["verilator_ok"]]
    caught = [r for r in failing if rejected(r, codes)]
    false = [r for r in accepted if rejected(r, codes)]
    same_line = [r for r in caught if _first_sure(r, codes) == r["verilator_first_error"]]
    cv = []
    for held_out in (0, 1):
        train = [r for r in rows if fold(r["seed"]) != held_out]
        test = [r for r in rows if fold(r["seed"]) == held_out]
        w = sure(code_counts(train), min_support)
        cv.append((held_out, len(w), sum(rejected(r, w) for r in test if r["verilator_ok"]),
                   sum(r["verilator_ok"] for r in test),
                   sum(rejected(r, w) for r in test if not r["verilator_ok"]),
                   sum(not r["verilator_ok"] for r in test)))
    times = sorted(r["pyslang_s"] for r in rows)
    by_op = defaultdict(lambda: [0, 0, 0])
    for r in rows:
        by_op[r["op"]][0] += 1
        by_op[r["op"]][1] += not r["verilator_ok"]
        by_op[r["op"]][2] += rejected(r, codes)
    lines = [
        "# Pre-check agreement: pyslang vs Verilator on broken testbenches",
        "",
        f"Command: `{command}`",
        "",
        f"Testbenches compiled: {len(rows)} ({len({r['seed'] for r in rows})} seeds as found "
        f"plus their mutants; see `benchmarks/mutants.py`). Verilator accepted "
        f"{len(accepted)}, rejected {len(failing)}. Not compiled: "
        + ", ".join(f"{n} {why}" for why, n in sorted(skipped.items()))
        + f"; left out: {len(internal)} Verilator internal errors (tool crashes).",
        "",
        f"Whitelist (codes never seen on a testbench Verilator accepted, and the only code "
        f"of >= {min_support} testbenches Verilator rejected): {len(codes)} codes. Findings "
        "inside covergroups, properties and sequences (and `AssignToNet` inside system-task "
        "arguments) do not count (`precheck.EXEMPT_REGIONS`).",
        "",
        "| result | value |",
        "|---|---|",
        f"| false rejections (pre-check rejects, Verilator accepts) | {len(false)} of "
        f"{len(accepted)} |",
        f"| Verilator-rejected testbenches the pre-check catches (recall) | {len(caught)} of "
        f"{len(failing)} ({100 * len(caught) / max(1, len(failing)):.1f}%) |",
        f"| caught, first pre-check error on Verilator's first error line | {len(same_line)} "
        f"of {len(caught)} |",
        f"| pyslang time per testbench: median / p90 / max | {_ms(times, 0.5)} / "
        f"{_ms(times, 0.9)} / {_ms(times, 1.0)} |",
        "",
        "Two-fold cross-validation by design (whitelist from one half of the designs, "
        "applied to the other):",
        "",
        "| held-out fold | whitelist size | false rejections | caught |",
        "|---|---|---|---|",
        *(f"| {h} | {n} | {fr} of {acc} accepted | {c} of {rej} rejected |"
          for h, n, fr, acc, c, rej in cv),
        "",
        "Per mutation operator:",
        "",
        "| operator | testbenches | Verilator rejects | pre-check rejects |",
        "|---|---|---|---|",
        *(f"| {op} | {n} | {bad} | {pre} |" for op, (n, bad, pre) in sorted(by_op.items())),
        "",
        "Every pyslang error code seen in a testbench (n = testbenches with it; alone = "
        "testbenches Verilator rejected where it was the only code):",
        "",
        "| code | n | Verilator accepted | alone | sure |",
        "|---|---|---|---|---|",
        *(f"| {c} | {n} | {bad} | {alone} | {'yes' if c in codes else ''} |"
          for c, (n, bad, alone) in sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))),
        "",
        "`SURE_CODES` for `src/llm4cov/sim/safety/precheck.py` (the code's current set "
        + ("matches" if codes == precheck.SURE_CODES else "DIFFERS; update it") + "):",
        "",
        "```python",
        "SURE_CODES = frozenset({",
        *(f'    "{c}",' for c in sorted(codes)),
        "})",
        "```",
    ]
    return "\n".join(lines) + "\n"


def _first_sure(row: dict, codes: frozenset[str]) -> str:
    found = precheck.sure_errors(row["findings"], row["tb"], codes)
    return f"{found[0].file}:{found[0].line}" if found else ""


def _ms(sorted_s: list[float], q: float) -> str:
    if not sorted_s:
        return "-"
    return f"{1000 * sorted_s[min(len(sorted_s) - 1, int(q * len(sorted_s)))]:.1f} ms"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=Path, default=Path("runs/precheck_agreement.jsonl"),
                    help="Verilator's verdict per testbench, reused when present (pyslang "
                         "is always run afresh); delete it to re-run Verilator.")
    ap.add_argument("--report", type=Path, default=Path("docs/results/precheck_agreement.md"))
    ap.add_argument("--jobs", type=int, default=2, help="Parallel Verilator runs.")
    ap.add_argument("--min-support", type=int, default=3)
    ap.add_argument("--limit", type=int, default=0, help="Use only the first N seeds.")
    args = ap.parse_args(argv)
    found = mutants.seeds()[: args.limit or None]
    todo = [v for s in found for v in mutants.variants(s)]
    known = {}
    if args.rows.exists():
        for line in args.rows.read_text().splitlines():
            row = json.loads(line)
            known[(row.get("seed"), row.get("op"))] = row
    missing = [v for v in todo if (v.seed.name, v.op) not in known]
    args.rows.parent.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(args.jobs) as pool, args.rows.open("a") as out:
        for i, row in enumerate(pool.map(verilator_verdict, missing, chunksize=4)):
            out.write(json.dumps(row) + "\n")
            known[(row["seed"], row["op"])] = row
            if i % 100 == 0:
                print(f"Verilator: {i}/{len(missing)}", file=sys.stderr, flush=True)
    rows = []
    for variant in todo:
        verdict = known[(variant.seed.name, variant.op)]
        skip = "skipped" in verdict or verdict["internal_error"]
        rows.append(verdict if skip else with_pyslang(variant, verdict))
    command = "python benchmarks/precheck_agreement.py " + " ".join(argv or sys.argv[1:])
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(report(rows, args.min_support, command.strip()))
    print(args.report.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
