"""Compact vs vectors random testbenches, per task: coverage and answer length.

Usage: python docs/results/random_styles_table.py RUNS_DIR > docs/results/random_styles.md

RUNS_DIR holds one bench run per benchmark and style, ``<bench>-random`` (compact) and
``<bench>-random-vectors``, made by (same seeds, 3 samples, direct):

    llm4cov bench --tasks ../shared/benchmarks/<bench>.jsonl --model random \
        --mode direct --samples 3 --baselines "" --no-plots --quiet \
        --out RUNS_DIR/<bench>-random
    (the same with --model random-vectors and --out RUNS_DIR/<bench>-random-vectors)

Answer lengths are SmolLM2-135M tokens (``llm4cov model get smollm2-135m``) of the
sample-0 answer, the length a student model must write.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from transformers import AutoTokenizer

from llm4cov.models.store import resolve_model

STYLES = ("random", "random-vectors")
tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m"))


def _load(run: Path) -> tuple[dict, dict[str, int]]:
    summary = json.loads((run / "summary.json").read_text())
    arm = next(iter(summary["arms"].values()))
    lengths = {}
    for line in (run / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["sample"] == 0 and row["response"]:
            lengths[row["task_id"]] = len(tokenizer(row["response"])["input_ids"])
    return {t["task_id"]: t for t in arm["per_task"]}, lengths, arm["headline"]


def table(runs: Path, bench: str) -> str:
    (compact, c_len, c_head), (vectors, v_len, v_head) = (
        _load(runs / f"{bench}-{style}") for style in STYLES)
    lines = [f"### {bench}", "",
             "| task | target % | compact: mean cov % (Cov Pass of 3) | vectors: mean cov % "
             "(Cov Pass of 3) | compact tokens | vectors tokens |", "|---|---|---|---|---|---|"]
    worse = []
    for task_id in sorted(compact):
        c, v = compact[task_id], vectors[task_id]
        if c["mean_cov"] < v["mean_cov"] - 1e-9:
            worse.append(f"{task_id} ({c['mean_cov']:.1f} vs {v['mean_cov']:.1f})")
        lines.append(f"| {task_id} | {c['target']} | {c['mean_cov']:.1f} ({c['cov_pass_count']}) "
                     f"| {v['mean_cov']:.1f} ({v['cov_pass_count']}) | {c_len.get(task_id, '')} "
                     f"| {v_len.get(task_id, '')} |")
    lines += ["", "| style | Sim Pass | Cov Pass (pass@1) | Avg Cov | median tokens | max tokens |",
              "|---|---|---|---|---|---|"]
    for name, head, lens in (("compact", c_head, c_len), ("vectors", v_head, v_len)):
        lines.append(f"| {name} | {head['sim_pass']:.1f} | {head['cov_pass']:.1f} | "
                     f"{head['avg_cov']:.1f} | {statistics.median(lens.values()):.0f} | "
                     f"{max(lens.values())} |")
    better = sum(compact[t]["mean_cov"] > vectors[t]["mean_cov"] + 1e-9 for t in compact)
    lines += ["", f"Compact higher on {better} tasks, lower on {len(worse)}"
              + (f": {', '.join(worse)}." if worse else "."), ""]
    return "\n".join(lines)


if __name__ == "__main__":
    root = Path(sys.argv[1])
    for bench in ("rtllm", "realbench_dev"):
        print(table(root, bench))
