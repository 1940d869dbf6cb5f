"""Timing of the contamination filter (``llm4cov.synth.contamination``) at corpus scale.

Indexes every file (spec, RTL, reference testbench) of the benchmark task files, then
checks ``--repos`` synthetic training repos against it. Each synthetic repo has a spec
and an RTL file: most are random Verilog written from a small grammar (keywords,
random identifiers, realistic lengths), ``--near`` of them are copies of a benchmark
RTL file with identifiers renamed and lines dropped at random rates, so some land above
and some below the threshold. Reports the time of the index, of the filter (tokenize,
prefilter, exact LCS), how many pairs reached the exact LCS, how many repos matched,
and the time rouge-score's own scorer needs for all pairs of ``--naive`` repos,
extrapolated to the whole corpus.

    python benchmarks/contamination_timing.py --repos 20000
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path

from rouge_score import rouge_scorer

from llm4cov.synth.contamination import PHASES, ContaminationIndex, task_files
from llm4cov.tasks.cvdp import load_any_tasks

SHARED = Path(__file__).resolve().parents[2] / "shared" / "benchmarks"
KEYWORDS = ("wire", "reg", "logic", "assign", "always", "posedge", "begin", "end", "if",
            "else", "case", "endcase", "default", "localparam")


def _ident(rng: random.Random) -> str:
    return "".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(2, 9)))


def random_verilog(rng: random.Random) -> str:
    """A plausible, random module: ports, declarations, assigns and clocked blocks."""
    name, ports = _ident(rng), [_ident(rng) for _ in range(rng.randint(2, 8))]
    lines = [f"module {name} (input clk, input rst_n, "
             + ", ".join(f"input [{rng.randint(1, 31)}:0] {p}" for p in ports) + ");"]
    sigs = [_ident(rng) for _ in range(rng.randint(3, 12))]
    lines += [f"  {rng.choice(KEYWORDS[:3])} [{rng.randint(1, 31)}:0] {s};" for s in sigs]
    for _ in range(rng.randint(5, 40)):
        a, b, c = rng.choice(sigs), rng.choice(sigs + ports), rng.choice(sigs + ports)
        op = rng.choice("+-&|^")
        if rng.random() < 0.5:
            lines.append(f"  assign {a} = {b} {op} {c};")
        else:
            lines += [f"  always @(posedge clk) begin if (!rst_n) {a} <= 0; "
                      f"else {a} <= {b} {op} {rng.randint(0, 255)}; end"]
    return "\n".join([*lines, "endmodule"]) + "\n"


def near_copy(rng: random.Random, text: str) -> str:
    """A benchmark file with identifiers renamed and a random share of lines dropped."""
    drop, rename = rng.uniform(0.0, 0.8), rng.uniform(0.0, 0.6)
    names: dict[str, str] = {}

    def swap(m: re.Match) -> str:
        word = m.group(0)
        if word not in names:
            names[word] = _ident(rng) if rng.random() < rename else word
        return names[word]

    kept = [ln for ln in text.splitlines() if rng.random() >= drop]
    return re.sub(r"\b[a-z_]\w*\b", swap, "\n".join(kept))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", action="append", type=Path)
    ap.add_argument("--repos", type=int, default=20000)
    ap.add_argument("--near", type=float, default=0.1, help="share of near-copy repos")
    ap.add_argument("--naive", type=int, default=10, help="repos timed with rouge-score")
    ap.add_argument("--threshold", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    bench = args.bench or [SHARED / "rtllm.jsonl", SHARED / "cvdp_example.jsonl"]

    tasks = [t for p in bench for t in load_any_tasks(p)]
    bench_files = [f for t in tasks for f in task_files(t, include_reference=True)]
    rtl = [f.content for t in tasks for f in t.rtl_files]
    rng = random.Random(args.seed)
    repos = []
    for _ in range(args.repos):
        body = near_copy(rng, rng.choice(rtl)) if rng.random() < args.near else (
            random_verilog(rng))
        repos.append([("spec.md", f"Design {_ident(rng)}: " + " ".join(
            _ident(rng) for _ in range(rng.randint(20, 120)))), ("design.v", body)])

    t0 = time.perf_counter()
    index = ContaminationIndex(bench_files, args.threshold)
    t1 = time.perf_counter()
    matched = sum(index.check(files) is not None for files in repos)
    t2 = time.perf_counter()

    scorer = rouge_scorer.RougeScorer(["rougeL"])
    t3 = time.perf_counter()
    for files in repos[: args.naive]:
        for _, text in files:
            for _, bench_text in bench_files:
                scorer.score(bench_text, text)
    naive_per_repo = (time.perf_counter() - t3) / max(1, args.naive)
    s = index.stats
    print(json.dumps({
        "benchmark_repos": len(tasks), "benchmark_files": len(index.labels),
        "training_repos": args.repos, "training_files": s.files,
        "file_pairs": s.pairs, "exact_lcs_pairs": s.exact, "contaminated_repos": matched,
        "index_s": round(t1 - t0, 3), "filter_s": round(t2 - t1, 2),
        **{f"{phase}_s": round(s.seconds[phase], 2) for phase in PHASES},
        "repos_per_s": round(args.repos / (t2 - t1), 1),
        "naive_rouge_score_s_per_repo": round(naive_per_repo, 3),
        "naive_rouge_score_s_extrapolated": round(naive_per_repo * args.repos),
    }, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
