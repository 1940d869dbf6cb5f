"""Simulator-call throughput: the plain Verilator flow against llm4cov's evaluator.

Both flows get the same calls, interleaved, in this one process:

- *first call on a design*: the design's reference testbench (``rtllm.jsonl``);
- *later calls on the same design*: ``--later`` new testbenches for it, as an agent's
  rounds produce them (the built-in random-stimulus policy, seeds 1..N, random vectors
  only, so that no two are identical);
- *broken testbenches*: ``--broken`` mutants of the reference testbench
  (``mutants.BREAKING``: a missing ``;``, a misspelt port, ...);
- *repeated identical testbenches*: the reference testbench again, ``--repeats`` times.

Plain flow, per call, in a fresh directory, ccache off (``OBJCACHE`` unset):
``python -m verilator --binary --timing --coverage-line --coverage-expr
--coverage-toggle --coverage-user -Wno-fatal --build-jobs <J> -MAKEFLAGS
CFG_CXXFLAGS_PCH_I=-include --top-module <tb top> -Mdir obj <rtl> <tb>``, then
``./obj/V<top>`` (``../shared/benchmarks/README.md``; ``J`` = the evaluator's make
jobs). Ours: ``Evaluator(SimConfig(...)).evaluate`` with its defaults, a fresh result
cache and ``CCACHE_DIR``; its build-artifact store (runtime PCH and objects) is warmed
by one call on a design outside the measured set, as it is on any machine after its
first call ever.

Latency is wall-clock per call; CPU is user+sys of this process and its children per
call; calls per core-hour = 3600 / mean CPU seconds. ``--ablation N`` also measures,
on N designs, later calls with each lever turned off in turn (new testbenches for every
configuration, so no compiler cache can serve them), and the run time of a long
simulation (500k clock cycles of random inputs) at ``-O0`` and at Verilator's
``-Os`` mix. The OS sandbox's cost is reported twice: the fixed cost of one sandboxed
step (``true`` under bubblewrap vs bare), and with ``--sandbox-pairs N`` later calls
with the sandbox on and off, interleaved call by call.

    python benchmarks/sim_throughput.py --designs 6 --later 3 --broken 4 --repeats 2 \
        --ablation 2 --out docs/results/sim_throughput.md
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from functools import partial
from pathlib import Path

import mutants

from llm4cov.policies.random_stimulus import random_testbench
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator

try:  # the layered sim/ (issue 43); sim_ab.py also loads this module against older trees
    from llm4cov.sim.analysis.structure import plan_testbench
    from llm4cov.sim.model.observation import Status
    from llm4cov.sim.safety import isolation
    from llm4cov.sim.safety.process import run_limited
except ImportError:
    from llm4cov.sim.observation import Status  # type: ignore[no-redef]
    from llm4cov.sim.process import run_limited  # type: ignore[no-redef]
    from llm4cov.sim.structure import plan_testbench  # type: ignore[no-redef]

    from llm4cov.sim import isolation  # type: ignore[no-redef]
from llm4cov.tasks.hdl import COMPILED_SUFFIXES, dut_ports
from llm4cov.tasks.loaders import load_tasks
from llm4cov.tasks.model import SourceFile, Task

CATEGORIES = ("first", "later", "broken", "repeat")
TITLES = {
    "first": "first call on a design",
    "later": "later calls on the same design",
    "broken": "broken testbenches",
    "repeat": "repeated identical testbenches",
}
LEVERS = {
    "all levers on": {},
    "no runtime PCH": {"runtime_pch": False},
    "no reused runtime objects": {"reuse_runtime": False},
    "model C++ at -O1 instead of -O0": {"cxx_opt": "-O1"},
    "model C++ at Verilator's -Os (fast) / none (slow)": {"cxx_opt": None},
    "no ld.gold": {"fast_linker": False},
    "one translation unit (Verilator's __ALL.cpp, no split)": {"split_units": False},
    "with ccache (off by default)": {"ccache": True},
    "make -j 1": {"build_jobs": 1},
    "no OS sandbox (--no-sandbox)": {"sandbox": False},
}
#: Sandboxed steps per simulated call: Verilator, make -n, make, the simulation.
SANDBOXED_STEPS = 4


def cpu_now() -> float:
    """CPU seconds (user+sys) of this process and its waited-for children."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@dataclasses.dataclass
class Call:
    """One timed call; ``index`` pairs a call of ours with the plain flow's."""

    index: int
    category: str
    flow: str
    wall_s: float
    cpu_s: float
    ok: bool
    detail: str = ""


def plain_call(task: Task, tb: SourceFile, aux: tuple[SourceFile, ...], jobs: int,
               verilator_root: Path) -> bool:
    """The plain Verilator flow; True when it built and ran to an exit code 0."""
    plan = plan_testbench(task.rtl_files, tb, task.dut_module_name, None)
    workdir = Path(tempfile.mkdtemp(prefix="plain-"))
    env = {k: v for k, v in os.environ.items() if k not in ("OBJCACHE", "MAKEFLAGS")}
    env["VERILATOR_ROOT"] = str(verilator_root)
    try:
        for f in [*task.rtl_files, *aux, tb]:
            (workdir / f.name).parent.mkdir(parents=True, exist_ok=True)
            (workdir / f.name).write_text(f.content)
        sources = [f.name for f in task.rtl_files if f.name.endswith(COMPILED_SUFFIXES)]
        build = run_limited(
            [sys.executable, "-m", "verilator", "--binary", "--timing", "--coverage-line",
             "--coverage-expr", "--coverage-toggle", "--coverage-user", "-Wno-fatal",
             "--build-jobs", str(jobs), "-MAKEFLAGS", "CFG_CXXFLAGS_PCH_I=-include",
             "--top-module", plan.tb_top, "-Mdir", "obj", *sources, tb.name],
            cwd=str(workdir), env=env, timeout_s=600)
        if build.returncode != 0:
            return False
        run = run_limited([f"./obj/V{plan.tb_top}"], cwd=str(workdir), env=env, timeout_s=60)
        return run.returncode == 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def timed(index: int, category: str, flow: str, fn) -> Call:
    c0, t0 = cpu_now(), time.monotonic()
    result = fn()
    wall, cpu = time.monotonic() - t0, cpu_now() - c0
    if flow == "plain":
        return Call(index, category, flow, wall, cpu, result)
    detail = ("cached" if result.cached else
              "pre-check" if any("pre-check" in n for n in result.notes) else "")
    return Call(index, category, flow, wall, cpu, result.status is Status.SUCCESS, detail)


def workload(task: Task, later: int, broken: int, repeats: int):
    """``(category, testbench, aux files)`` of one design, in call order."""
    ref = task.reference_tb
    ref_tb = SourceFile(name=ref.name, content=ref.content)
    aux = tuple(ref.aux_files)
    yield "first", ref_tb, aux
    for seed in range(1, later + 1):
        yield "later", SourceFile(name="tb.sv", content=new_testbench(task, seed)), ()
    seed_obj = mutants.Seed(task.id, task, ref_tb, aux)
    ops = {name: mutants.OPERATORS[name] for name in mutants.BREAKING}
    bad = [v for v in mutants.variants(seed_obj, ops) if v.op != "original"]
    for variant in bad[:broken]:
        yield "broken", variant.tb, aux
    for _ in range(repeats):
        yield "repeat", ref_tb, aux


def new_testbench(task: Task, seed: int) -> str:
    """A random-stimulus testbench that differs for every seed (no exhaustive mode)."""
    return random_testbench(task, seed=seed, exhaustive_bits=0)


def long_testbench(task: Task, cycles: int) -> str:
    """``cycles`` clock periods of random inputs in a loop (a long run, short code)."""
    ports = dut_ports(task.rtl_files, task.dut_module_name)
    inputs = [p for p in ports if p.direction == "input"]
    clocks = [p for p in inputs if p.width == 1 and re.search("clk|clock", p.name, re.I)]
    conns = ", ".join(f".{p.name}({p.name})" for p in ports)
    return "\n".join([
        "module tb;",
        *(f"  logic [{p.width - 1}:0] {p.name};" for p in ports),
        f"  {task.dut_module_name} {task.dut_instance_name} ({conns});",
        *(f"  initial {c.name} = 0;\n  always #5 {c.name} = ~{c.name};" for c in clocks),
        f"  initial begin\n    repeat ({cycles}) begin",
        *(f"      {p.name} = $urandom;" for p in inputs if p not in clocks),
        "      #10;\n    end\n    $finish;\n  end",
        "endmodule\n",
    ])


def throughput(tasks: list[Task], args, ours: Evaluator) -> list[Call]:
    calls = []
    for task in tasks:
        for category, tb, aux in workload(task, args.later, args.broken, args.repeats):
            index = len({c.index for c in calls})
            mine = partial(ours.evaluate, task, tb.content, tb.name, aux, any_instance=True)
            calls.append(timed(index, category, "ours", mine))
            if not args.no_plain:
                plain = partial(plain_call, task, tb, aux, ours.config.jobs(),
                                ours.backend.toolchain.verilator_root)
                calls.append(timed(index, category, "plain", plain))
            last = calls[-1]
            print(f"{task.id} {category}: {last.flow} {last.wall_s:.2f}s ok={last.ok}",
                  file=sys.stderr, flush=True)
    return calls


def ablation(tasks: list[Task], cache_dir: str) -> list[str]:
    """Later-call cost with each lever off in turn, and a long run at -O0 vs -Os."""
    rows = ["| configuration | later calls | median wall s | median CPU s |", "|---|---|---|---|"]
    for n, (label, change) in enumerate(LEVERS.items()):
        ev = Evaluator(SimConfig(cache_dir=cache_dir, result_cache=False, **change))
        ev.evaluate(tasks[0], new_testbench(tasks[0], 1000 + n))  # warm this flag set
        calls = [timed(0, "later", "ours", partial(ev.evaluate, t, new_testbench(t, s)))
                 for t in tasks for s in (100 * n + 11, 100 * n + 12)]
        rows.append(f"| {label} | {len(calls)} | "
                    f"{statistics.median(c.wall_s for c in calls):.2f} | "
                    f"{statistics.median(c.cpu_s for c in calls):.2f} |")
    long_task = next(t for t in tasks if "clk" in " ".join(f.content for f in t.rtl_files))
    rows += ["", f"Long simulation ({long_task.id}, 500k clock cycles of random inputs):", "",
             "| optimization | build s | run s | status |", "|---|---|---|---|"]
    for label, opt in (("-O0 (default)", "-O0"), ("-O1", "-O1"), ("Verilator's -Os", None)):
        ev = Evaluator(SimConfig(cache_dir=cache_dir, result_cache=False, cxx_opt=opt))
        obs = ev.evaluate(long_task, long_testbench(long_task, 500_000))
        rows.append(f"| {label} | {obs.build_s:.2f} | {obs.run_s:.2f} | {obs.status.value} |")
    return rows


def sandbox_cost(repeats: int = 50) -> list[str]:
    """The fixed cost of one sandboxed step: ``true`` bare vs under bubblewrap with the
    build steps' mounts (median of ``repeats`` each, interleaved)."""
    workdir = Path(tempfile.mkdtemp(prefix="sandbox-cost-"))
    wrapped = isolation.wrap(["true"], workdir=workdir, readonly=isolation.python_paths())
    bare_s, boxed_s = [], []
    for _ in range(repeats):
        for cmd, times in ((["true"], bare_s), (wrapped, boxed_s)):
            t0 = time.monotonic()
            subprocess.run(cmd, check=True)
            times.append(time.monotonic() - t0)
    shutil.rmtree(workdir, ignore_errors=True)
    step = statistics.median(boxed_s) - statistics.median(bare_s)
    return [
        f"Sandbox cost: `true` takes {statistics.median(bare_s) * 1000:.1f} ms bare and "
        f"{statistics.median(boxed_s) * 1000:.1f} ms under bubblewrap (median of {repeats}): "
        f"{step * 1000:.1f} ms per sandboxed step, {SANDBOXED_STEPS} steps per simulated "
        f"call = {SANDBOXED_STEPS * step * 1000:.0f} ms per call.",
    ]


def sandbox_pairs(tasks: list[Task], cache_dir: str, pairs: int) -> list[str]:
    """Later calls with the OS sandbox on and off, interleaved call by call (so load
    changes hit both alike), each on a new testbench, result cache off."""
    flows = {on: Evaluator(SimConfig(cache_dir=cache_dir, result_cache=False, sandbox=on))
             for on in (True, False)}
    for on, ev in flows.items():  # warm both flag sets
        ev.evaluate(tasks[0], new_testbench(tasks[0], 5000 + on))
    times: dict[bool, list[Call]] = {True: [], False: []}
    for n in range(pairs):
        task = tasks[n % len(tasks)]
        for on in (n % 2 == 0, n % 2 != 0):  # alternate which goes first
            tb = new_testbench(task, 6000 + 2 * n + on)
            times[on].append(timed(n, "later", "ours", partial(flows[on].evaluate, task, tb)))
    on, off = (statistics.median(c.wall_s for c in times[k]) for k in (True, False))
    ok = sum(c.ok for k in times for c in times[k])
    return [
        f"OS sandbox on vs off, later calls interleaved ({pairs} each, "
        f"{ok} of {2 * pairs} succeeded): median {on:.3f} s vs {off:.3f} s, "
        f"on/off = {on / off:.3f}.",
    ]


def summary(calls: list[Call], sandboxed: bool = False) -> list[str]:
    """The Markdown table and target lines. A broken-category call counts only when the
    plain flow rejected that testbench (some mutants stay legal: they are listed apart).
    ``sandboxed``: our calls ran in the OS sandbox, whose CPU this process cannot see
    (their calls per core-hour are then left out)."""
    plain_ok = {c.index for c in calls if c.flow == "plain" and c.ok}
    legal = [c for c in calls if c.category == "broken" and c.index in plain_ok]
    by = defaultdict(list)
    for c in calls:
        if c not in legal:
            by[(c.category, c.flow)].append(c)
    rows = ["| calls | n | plain median / p90 s | ours median / p90 s | ours/plain "
            "(median) | plain calls per core-hour | ours calls per core-hour |",
            "|---|---|---|---|---|---|---|"]
    for cat in CATEGORIES:
        mine, plain = by[(cat, "ours")], by[(cat, "plain")]
        if not mine:
            continue
        ratio = (f"{_q(mine, 0.5) / _q(plain, 0.5):.3f}" if plain else "-")
        rows.append(
            f"| {TITLES[cat]} | {len(mine)} | {_fmt(plain)} | {_fmt(mine)} | {ratio} | "
            f"{_per_core_hour(plain)} | {'n/a' if sandboxed else _per_core_hour(mine)} |")
    caught = [c for c in by[("broken", "ours")] if c.detail == "pre-check"]
    cached = [c for c in by[("repeat", "ours")] if c.detail == "cached"]
    rows += [
        "",
        *(["Our calls per core-hour: n/a, the sandboxed steps' CPU is not seen by this "
           "process (`RUSAGE_CHILDREN` stops at the sandbox's PID namespace)."]
          if sandboxed else []),
        f"Broken testbenches rejected by the pre-check: {len(caught)} of "
        f"{len(by[('broken', 'ours')])}; latency median {_q(caught, 0.5):.4f} s, "
        f"max {_q(caught, 1.0):.4f} s." if caught else "No broken testbench was pre-checked.",
        f"Identical repeats served from the result cache: {len(cached)} of "
        f"{len(by[('repeat', 'ours')])}; latency median {_q(cached, 0.5):.4f} s, "
        f"max {_q(cached, 1.0):.4f} s." if cached else "No repeat was served from the cache.",
        f"Mutants meant to be broken that the plain flow built and ran (left out of the "
        f"broken row): {len(legal) // 2}.",
        "Verdicts: ours success "
        f"{sum(c.ok for c in calls if c.flow == 'ours')}, plain exit 0 "
        f"{sum(c.ok for c in calls if c.flow == 'plain')} (of "
        f"{sum(c.flow == 'ours' for c in calls)} calls each).",
    ]
    return rows


def _q(calls: list[Call], q: float) -> float:
    values = sorted(c.wall_s for c in calls)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def _fmt(calls: list[Call]) -> str:
    return f"{_q(calls, 0.5):.3f} / {_q(calls, 0.9):.3f}" if calls else "-"


def _per_core_hour(calls: list[Call]) -> str:
    if not calls:
        return "-"
    return f"{3600 / max(1e-6, statistics.fmean(c.cpu_s for c in calls)):,.0f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=Path, default=mutants.SHARED / "benchmarks/rtllm.jsonl")
    ap.add_argument("--designs", type=int, default=6,
                    help="How many designs (every k-th of the file, k = total // N); 0 = "
                         "only the lever table.")
    ap.add_argument("--later", type=int, default=3)
    ap.add_argument("--broken", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--ablation", type=int, default=0, help="Designs for the lever table.")
    ap.add_argument("--no-plain", action="store_true", help="Only our flow.")
    ap.add_argument("--sandbox-pairs", type=int, default=0,
                    help="Later calls with the OS sandbox on and off, interleaved.")
    ap.add_argument("--out", type=Path, default=None, help="Write the Markdown report here.")
    ap.add_argument("--raw", type=Path, default=None, help="Write every call as JSON lines.")
    args = ap.parse_args(argv)

    all_tasks = [t for t in load_tasks(args.tasks) if t.reference_tb is not None]
    wanted = max(args.designs, args.ablation, 1)
    tasks = all_tasks[:: max(1, len(all_tasks) // wanted)][:wanted]
    scratch = Path(tempfile.mkdtemp(prefix="throughput-"))
    os.environ["CCACHE_DIR"] = str(scratch / "ccache")
    cache_dir = str(scratch / "llm4cov")
    ours = Evaluator(SimConfig(cache_dir=cache_dir))
    warm = next(t for t in all_tasks if t not in tasks)
    ours.evaluate(warm, random_testbench(warm, seed=0))  # fills the artifact store
    load0, t0 = os.getloadavg()[0], time.monotonic()
    calls = throughput(tasks[: args.designs], args, ours)
    if args.raw:
        args.raw.write_text("".join(json.dumps(dataclasses.asdict(c)) + "\n" for c in calls))
    lines = [
        "# Simulator-call throughput: the plain Verilator flow vs llm4cov's evaluator",
        "",
        "Command: `python benchmarks/sim_throughput.py " + " ".join(argv or sys.argv[1:]) + "`",
        "",
        f"Designs ({args.designs}): " + ", ".join(t.id for t in tasks[: args.designs]) + ".",
        f"Machine: {os.cpu_count()} CPUs; 1-min load average {load0:.1f} at the start and "
        f"{os.getloadavg()[0]:.1f} at the end ({time.monotonic() - t0:.0f} s); "
        f"make jobs {ours.config.jobs()}.",
        "",
        *summary(calls, sandboxed=ours.config.sandbox),
        "",
        *sandbox_cost(),
    ]
    if args.sandbox_pairs:
        lines += sandbox_pairs(tasks[: max(1, args.designs)], cache_dir, args.sandbox_pairs)
    if args.ablation:
        lines += ["", "Levers (later calls, result cache off):", "",
                  *ablation(tasks[: args.ablation], cache_dir)]
    shutil.rmtree(scratch, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
