"""How fast the command line starts, and what a later ``llm4cov sim`` call costs as a
process, against plain Verilator and against the same call inside one process.

Measured in one run, interleaved call by call (the order rotating):

- ``llm4cov --version`` and ``llm4cov --help`` as processes (start-up alone);
- a later ``llm4cov sim DESIGN --tb NEW.sv --no-cache`` as a process (a new testbench
  each time, so no cache serves it; the build store is warm), and the same with
  ``--cxx clang++`` where clang is installed;
- plain Verilator on the same design and a new testbench: ``python -m verilator
  --binary --coverage`` then the binary (no sandbox, no checks, no build store: what a
  user would type);
- the same evaluator call inside one process (``Evaluator.evaluate``, result cache off),
  with clang too where installed;
- a process that only imports the ``sim`` command (Python's share of a process's start).

Reported: each side's median and p90 in seconds, and the ratios of the medians.

    python benchmarks/cli_startup.py --calls 8 --out docs/results/cli_startup.md
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DESIGN = """module counter(input logic clk, input logic rst, input logic en,
               output logic [7:0] q);
  always_ff @(posedge clk) if (rst) q <= '0; else if (en) q <= q + 8'd1;
endmodule
"""
TB = """module tb;
  logic clk = 0, rst = 1, en = 0; logic [7:0] q;
  counter dut(.clk(clk), .rst(rst), .en(en), .q(q));
  always #5 clk = ~clk;
  initial begin #12 rst = 0; repeat ({n}) begin @(negedge clk); en = ~en; end $finish; end
endmodule
"""
LLM4COV = [sys.executable, "-c", "from llm4cov.cli.app import main; raise SystemExit(main())"]


#: The processes' environment: Python's byte-code cache on, as an installed command has
#: it (``PYTHONDONTWRITEBYTECODE`` would compile every module of the package per call).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], cwd: Path | None = None) -> float:
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   cwd=cwd, env=CHILD_ENV)
    return time.monotonic() - t0


def plain_verilator(root: Path, tb: Path) -> float:
    """``python -m verilator --binary --coverage`` and the run, in a fresh dir."""
    work = Path(tempfile.mkdtemp(dir=root))
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "verilator", "--binary", "--coverage", "--timing",
                    "-Wno-fatal", "--top-module", "tb", str(root / "counter.sv"), str(tb),
                    "--Mdir", str(work / "obj")], check=True, cwd=work,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run([str(work / "obj" / "Vtb")], check=True, cwd=work,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.monotonic() - t0
    shutil.rmtree(work, ignore_errors=True)
    return elapsed


def stats(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"{statistics.median(values):.3f} | {p90:.3f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=8)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from llm4cov.sim.config import SimConfig
    from llm4cov.sim.evaluator import Evaluator
    from llm4cov.tasks.loaders import task_from_paths

    root = Path(tempfile.mkdtemp(prefix="llm4cov-startup-"))
    (root / "counter.sv").write_text(DESIGN)
    task = task_from_paths([root / "counter.sv"], top="counter")
    evaluator = Evaluator(SimConfig(result_cache=False))
    clang = (Evaluator(SimConfig(result_cache=False, cxx="clang++"))
             if shutil.which("clang++") else None)
    counter = iter(range(1000, 100000))

    def new_tb() -> Path:
        n = next(counter)
        path = root / f"tb_{n}.sv"
        path.write_text(TB.format(n=n))
        return path

    sides = {
        "llm4cov --version": lambda: timed([*LLM4COV, "--version"]),
        "llm4cov --help": lambda: timed([*LLM4COV, "--help"]),
        "llm4cov sim (process, later call)": lambda: timed(
            [*LLM4COV, "sim", str(root / "counter.sv"), "--tb", str(new_tb()), "--no-cache"]),
        **({"llm4cov sim --cxx clang++ (process, later call)": lambda: timed(
            [*LLM4COV, "sim", str(root / "counter.sv"), "--tb", str(new_tb()), "--no-cache",
             "--cxx", "clang++"])} if shutil.which("clang++") else {}),
        "import of the sim command (process)": lambda: timed(
            [sys.executable, "-c", "import llm4cov.cli.app, llm4cov.cli.sim_cmd"]),
        "Evaluator.evaluate (in process)": lambda: _in_process(evaluator, task, new_tb()),
        **({"Evaluator.evaluate, clang++ (in process)": lambda: _in_process(
            clang, task, new_tb())} if clang else {}),
        "plain Verilator (build + run)": lambda: plain_verilator(root, new_tb()),
    }
    load = (os.getloadavg()[0], 0.0)
    for side in sides.values():  # warm-up: the build store, the page cache
        side()
    times: dict[str, list[float]] = {name: [] for name in sides}
    names = list(sides)
    for i in range(args.calls):
        for name in names[i % len(names):] + names[:i % len(names)]:
            times[name].append(sides[name]())
    shutil.rmtree(root, ignore_errors=True)
    load = (load[0], os.getloadavg()[0])
    sim = statistics.median(times["llm4cov sim (process, later call)"])
    rows = ["| what | median s | p90 s | llm4cov sim / this |", "|---|---|---|---|"]
    for name, values in times.items():
        rows.append(f"| {name} | {stats(values)} | {sim / statistics.median(values):.2f} |")
    text = "\n".join(rows) + "\n"
    print(text)
    if args.out:
        args.out.write_text(_page(text, args.calls, load))
    return 0


def _page(table: str, calls: int, load: tuple[float, float]) -> str:
    """The results page: what was run, where, the table, and issue 43's goals."""
    import datetime
    import platform

    return (
        "# Command start-up and a later `llm4cov sim` call as a process\n\n"
        "Generated by `python benchmarks/cli_startup.py --calls "
        f"{calls} --out docs/results/cli_startup.md` on {datetime.date.today()} "
        f"({platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"load average {load[0]:.2f} before, {load[1]:.2f} after). Each side {calls} "
        "calls, interleaved, after one warm-up call each; the last column is the later "
        "`llm4cov sim` process's median over this row's.\n\n"
        f"{table}\n"
        "Issue 43's goals: `--version` at most 0.3 s on an idle machine, a later `llm4cov "
        "sim` call at most 1.0 s as a process. The processes run with Python's byte-code "
        "cache on, as an installed command does. The difference between the process and "
        "the in-process call is the process's own start and end: the imports of the "
        "`sim` command (their own row, a process that only imports them: the "
        "interpreter's start and its teardown of those modules at exit included, the "
        "teardown alone 0.05-0.09 s), its flags, and the evaluator's construction (the build "
        "store's check of its precompiled header: a SHA-256 of the file only where its "
        "stat signature changed since the last check, by any process; the tools' "
        "`--version` lines, the sandbox probe and make's dry run are remembered across "
        "processes, `src/llm4cov/util/remembered.py`). Most of a "
        "call is the C++ compile of the model against the precompiled runtime header: "
        "with g++ every translation unit redoes the header's template instantiations "
        "(0.30 s for an empty unit), which clang does once, in the header (`--cxx "
        "clang++`: `docs/evaluator_speed.md`, \"The compiler\").\n")


def _in_process(evaluator, task, tb: Path) -> float:
    t0 = time.monotonic()
    evaluator.evaluate(task, tb.read_text())
    return time.monotonic() - t0


if __name__ == "__main__":
    sys.exit(main())
