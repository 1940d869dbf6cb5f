"""Results table and loss plot of a `llm4cov pipeline` run directory (progressive + naive).

Usage: python docs/results/learning_table.py RUN_DIR [LOSS_PNG]

Rows: checkpoint 0 (``base``), checkpoint k+1 of every stage, ``naive``, each in every
bench mode found, plus the bench baselines (``random``, ``reference``) of the first bench;
columns are the bench's own headline metrics (percent; 1 sample per task, so pass@1 =
Cov Pass), tasks scored, tasks whose prompt exceeded the model's context, generated tokens,
the bench's model seconds and the evaluator status of every answer (every round; why the
student's testbenches fail: ``rejected`` = no testbench in the answer), then a second
table counting every answer by :func:`failure_kind` (an agentic bench also round by
round: its round 1 is direct inference), a third with the bench's per-answer copy checks
(right module name, instance name, pins; ``repeated``: answers of that round whose
testbench is the round before's, unchanged), and a fourth with every stage's SFT samples by
the state they start from (``broken:<kind>``: a planted repair state), exported and
trained (the rest were longer than the training ``max_length``). With LOSS_PNG,
the training loss per optimizer step of every trained checkpoint is plotted there
(matplotlib).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path


def _rows(path: Path):
    """The JSONL rows of ``path``; none while a bench has not written its first row."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _statuses(rows: list[dict]) -> str:
    """Counts of the rows' final statuses, most frequent first (``success 3, rejected 9``)."""
    counts = Counter(r["status"] for r in rows)
    return ", ".join(f"{status} {n}" for status, n in counts.most_common())


def _benches(run: Path) -> list[tuple[str, Path]]:
    """(checkpoint label, bench run dir) in loop order. A stage run with another paper
    preset than its index (``stages[k].preset`` in ``run.json``, e.g. a run started from
    an earlier run's checkpoint) is numbered by the preset: paper stage p makes
    checkpoint p + 1, whatever the stage's index in this run."""
    config = json.loads((run / "run.json").read_text())["config"] \
        if (run / "run.json").is_file() else {}
    presets = [s.get("preset") for s in config.get("stages", [])]
    out = [("ckpt 0 (base)", run / "base")]
    k = 0
    while (run / f"stage{k}").is_dir():
        preset = presets[k] if k < len(presets) else None
        label = f"ckpt {k + 1} (stage {k} SFT)" if preset in (None, k) else \
            f"ckpt {preset + 1} (paper stage {preset} SFT; this run's stage {k})"
        out.append((label, run / f"stage{k}"))
        k += 1
    out.append(("naive (union, one SFT)", run / "naive"))
    return out


def _mode_dirs(run: Path):
    """(checkpoint label, bench mode dir) of every bench of ``run``, in loop order."""
    for label, root in _benches(run):
        if (root / "bench").is_dir():
            for mode_dir in sorted((root / "bench").glob("*")):
                yield label, mode_dir


def table(run: Path) -> str:
    lines = ["| checkpoint | mode | tasks | Sim Pass | Cov Pass = pass@1 | Avg Cov | "
             "context exceeded | generated tokens | model s | status per answer |",
             "|" + "---|" * 10]
    baselines: dict[str, dict] = {}
    for label, mode_dir in _mode_dirs(run):
        summary_file = mode_dir / "summary.json"
        if not summary_file.is_file():
            lines.append(f"| {label} | {mode_dir.name} | not finished | | | | | | | |")
            continue
        summary = json.loads(summary_file.read_text())
        rows = _rows(mode_dir / "results.jsonl")
        for name, arm in summary["arms"].items():
            if name in ("random", "reference"):
                baselines.setdefault(f"{name} | {mode_dir.name}", arm)
                continue
            h = arm["headline"] or {}
            mine = [r for r in rows if r["arm"] == name]
            exceeded = {r["task_id"] for r in mine if r["prompt_tokens"] and
                        not r["completion_tokens"] and r["response"] == ""}
            lines.append(
                f"| {label} | {mode_dir.name} | {arm['tasks_scored']}/{arm['tasks_planned']} "
                f"| {h.get('sim_pass', 0):.1f} | {h.get('cov_pass', 0):.1f} "
                f"| {h.get('avg_cov', 0):.1f} | {len(exceeded)} "
                f"| {sum(r['completion_tokens'] for r in mine)} "
                f"| {sum(r['gen_s'] for r in mine):.0f} | {_statuses(mine)} |")
    for key, arm in baselines.items():
        h = arm["headline"] or {}
        lines.append(f"| {key} | {arm['tasks_scored']}/{arm['tasks_planned']} "
                     f"| {h.get('sim_pass', 0):.1f} | {h.get('cov_pass', 0):.1f} "
                     f"| {h.get('avg_cov', 0):.1f} | - | - | - | - |")
    return "\n".join(lines)


FAILURE_KINDS = ("no module", "context exceeded", "no DUT instance", "other compile error",
                 "simulated")


def failure_kind(row: dict) -> str:
    """What became of one answer (one of :data:`FAILURE_KINDS`)."""
    log = (row.get("observation") or {}).get("log", "") or ""
    if "does not instantiate" in log:
        return "no DUT instance"
    if row["status"] == "rejected":
        return "context exceeded" if row["completion_tokens"] == 0 else "no module"
    return "other compile error" if row["status"] == "compile_error" else "simulated"


def failures(run: Path) -> str:
    """Every model answer of every bench of ``run`` counted by :func:`failure_kind`, and
    an agentic bench's answers round by round."""
    lines = ["| checkpoint | mode | answers | " + " | ".join(FAILURE_KINDS) + " |",
             "|" + "---|" * (3 + len(FAILURE_KINDS))]
    for label, mode_dir in _mode_dirs(run):
        mine = [r for r in _rows(mode_dir / "results.jsonl")
                if r["arm"] not in ("random", "reference")]
        done = "" if (mode_dir / "summary.json").is_file() else " (unfinished)"
        rounds = sorted({r["round"] for r in mine})
        groups = [(mode_dir.name, mine)] + ([] if len(rounds) < 2 else [
            (f"{mode_dir.name}, round {k + 1}", [r for r in mine if r["round"] == k])
            for k in rounds])
        for mode, rows in groups:
            counts = Counter(failure_kind(r) for r in rows)
            lines.append(f"| {label} | {mode} | {len(rows)}{done} | "
                         + " | ".join(str(counts[k]) for k in FAILURE_KINDS) + " |")
    return "\n".join(lines)


def datasets(run: Path) -> str:
    """Every stage's exported SFT samples (``stage<k>/data/sft.jsonl``) by the state they
    start from (``meta.selected_as``), and how many were trained on (not in the training
    report's ``dropped``)."""
    lines = ["| stage | state selected as | exported | trained |", "|---|---|---|---|"]
    k = 0
    while (run / f"stage{k}" / "data" / "sft.jsonl").is_file():
        exported = Counter(r["meta"]["selected_as"]
                           for r in _rows(run / f"stage{k}" / "data" / "sft.jsonl"))
        report = run / f"stage{k}" / "checkpoint" / "train_report.json"
        dropped = Counter(d["meta"]["selected_as"] for d in
                          json.loads(report.read_text())["dropped"]) if report.is_file() \
            else None
        for state, n in sorted(exported.items()):
            trained = "-" if dropped is None else str(n - dropped[state])
            lines.append(f"| {k} | {state} | {n} | {trained} |")
        k += 1
    return "\n".join(lines)


def copy_checks(run: Path) -> str:
    """The bench's per-answer copy checks (``answer_checks`` of each ``summary.json``,
    :mod:`llm4cov.bench.answer_checks`) of every checkpoint, percent of its answers."""
    from llm4cov.bench.answer_checks import CHECKS

    lines = ["| checkpoint | mode | answers | " + " | ".join(CHECKS) + " | repeated |",
             "|" + "---|" * (4 + len(CHECKS))]
    for label, mode_dir in _mode_dirs(run):
        summary_file = mode_dir / "summary.json"
        if not summary_file.is_file():
            continue
        for name, arm in json.loads(summary_file.read_text())["arms"].items():
            c = arm.get("answer_checks")
            if name in ("random", "reference") or not c or not c["answers"]:
                continue
            repeats = arm.get("repeated_testbench_by_round", {})
            parts = [(mode_dir.name, c, None)] + [
                (f"{mode_dir.name}, round {k}", rc, repeats.get(k))
                for k, rc in arm.get("answer_checks_by_round", {}).items()]
            for mode, counts, rep in parts:
                lines.append(f"| {label} | {mode} | {counts['answers']} | " + " | ".join(
                    f"{100.0 * counts[k] / counts['answers']:.1f}" for k in CHECKS)
                    + f" | {rep['repeated'] if rep else '-'} |")
    return "\n".join(lines)


def plot(run: Path, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.5))
    for label, root in _benches(run)[1:]:
        report = root / "checkpoint" / "train_report.json"
        if report.is_file():
            losses = json.loads(report.read_text())["losses"]
            ax.plot([r["step"] for r in losses], [r["loss"] for r in losses], ".-", label=label)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("train loss (testbench tokens)")
    ax.set_title(f"SFT on CPU: {run}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=100)


if __name__ == "__main__":
    run_dir = Path(sys.argv[1])
    print(table(run_dir))
    print()
    print(failures(run_dir))
    print()
    print(copy_checks(run_dir))
    print()
    print(datasets(run_dir))
    if len(sys.argv) > 2:
        plot(run_dir, Path(sys.argv[2]))
