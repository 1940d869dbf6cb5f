"""The pre-registered claims of the SmolLM2-135M CPU runs, recomputed from committed files.

Usage (from the repository root):

    python docs/results/learning_claims.py             # the generated tables of learning.md
    python docs/results/learning_claims.py --per-task  # and every comparison task by task
    python docs/results/learning_claims.py --write     # rewrite learning.md's generated blocks
    python docs/results/learning_claims.py --check     # exit 1 if learning.md's blocks differ

Reads only the bench summaries committed under ``docs/results/runs/*/summary.json`` (their
``per_task`` rows: samples ``n``, Sim Pass and Cov Pass counts, tool failures, mean
coverage, and per round). The comparisons, metrics, test and correction are the ones fixed
in ``experiments/smollm2_cpu/preregistration.md``:

- per task, pass@1 of each arm by the unbiased estimator of Chen et al. 2021 (k = 1:
  c / n over the task's scored samples; samples that failed in the tool are not scored,
  and a task with no scored sample in either arm leaves the pair);
- paired over tasks: a win where the claim's arm has the higher pass@1, a loss where it
  has the lower one; the exact two-sided sign test on wins and losses (ties dropped). With
  one sample per task this is the exact McNemar test on the discordant tasks;
- Holm's step-down adjustment over the whole pre-registered list (C1-C5 x Sim Pass and
  Cov Pass = 10 hypotheses), family-wise alpha 0.05; a hypothesis without data keeps its
  place in the list with p = 1;
- Wilson 95 % intervals for rates (over scored samples: tasks when n = 1);
- every table also by family, from the task id's prefix (``rtllm/``, ``realbench/``,
  ``verilog_eval/``: RTLLM, RealBench dev and the VerilogEval designs the contamination
  filter held out of training, whose 90 % targets are a default, not calibrated).

A claim is decided by its planned runs (n = 5 samples at T 0.7, top-p 0.8) once all their
summaries are committed; until then by the existing greedy runs, labelled so, and the
planned runs are listed as not run, with the reason.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
RUNS = HERE / "runs"
DOC = HERE / "learning.md"
ALPHA = 0.05
Z95 = 1.959963984540054
METRICS = (("sim", "Sim Pass"), ("cov", "Cov Pass"))
FAMILIES = {"rtllm": "RTLLM", "realbench": "RealBench dev",
            "verilog_eval": "VerilogEval held-out"}
BASELINE_ARMS = ("random", "reference")
SCRIPT = "python docs/results/learning_claims.py"


# --------------------------------------------------------------------------- statistics

def pass_at_k(n: int, c: int, k: int = 1) -> float:
    """Unbiased pass@k of one task from ``n`` samples of which ``c`` pass (Chen et al.
    2021): 1 - C(n - c, k) / C(n, k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@{k} needs 0 <= c <= n and 1 <= k <= n (n {n}, c {c})")
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test (binomial, p = 1/2) on ``wins`` and ``losses``; ties are
    not counted. With one sample per task it is the exact McNemar test."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values, in the input order. ``None`` (no data) counts
    in the family as p = 1 and stays ``None``."""
    m = len(pvalues)
    filled = [1.0 if p is None else p for p in pvalues]
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(sorted(range(m), key=lambda j: filled[j])):
        running = max(running, min(1.0, (m - rank) * filled[i]))
        adjusted[i] = running
    return [None if p is None else a for p, a in zip(pvalues, adjusted, strict=True)]


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of the rate k / n (fractions)."""
    if n == 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


# --------------------------------------------------------------------------- data

def family(task_id: str) -> str:
    """The evaluation family of a task id (its prefix)."""
    prefix = task_id.split("/", 1)[0]
    if prefix not in FAMILIES:
        raise ValueError(f"task {task_id!r}: unknown family {prefix!r}; known: "
                         f"{', '.join(FAMILIES)}")
    return FAMILIES[prefix]


@dataclass(frozen=True)
class Outcome:
    """One arm on one task: scored samples and how many passed (seeds pooled)."""

    n: int
    sim: int
    cov: int
    cov_sum: float
    """Sum over scored samples of the coverage (mean_cov x n)."""

    def rate(self, metric: str) -> float:
        return pass_at_k(self.n, getattr(self, metric), 1)

    def __add__(self, other: Outcome) -> Outcome:
        return Outcome(self.n + other.n, self.sim + other.sim, self.cov + other.cov,
                       self.cov_sum + other.cov_sum)


@dataclass(frozen=True)
class Arm:
    """A checkpoint in a mode: one bench summary per training seed (pooled per task).
    ``round`` 1 reads an agentic bench's first round, which is the direct answer."""

    label: str
    summaries: tuple[str, ...]
    round: int | None = None


@dataclass(frozen=True)
class Comparison:
    """A claim 'new beats old', decided on the planned pair once committed, else on the
    existing one (None: not run)."""

    cid: str
    claim: str
    new: Arm | None
    old: Arm | None
    planned: tuple[Arm, Arm] | None = None
    missing: str = ""
    """Why the existing data cannot decide it (shown when ``new``/``old`` are None)."""
    planned_note: str = ""
    """Which planned runs decide it (preregistration.md)."""


def _model_arm(summary: dict, path: Path) -> dict:
    arms = {k: v for k, v in summary["arms"].items() if k not in BASELINE_ARMS}
    if len(arms) != 1:
        raise ValueError(f"{path}: expected one model arm, found {sorted(arms)}")
    return next(iter(arms.values()))


def read_summary(path: Path, round_: int | None = None) -> dict[str, Outcome]:
    """Per task outcome of the model arm of one bench summary (of round ``round_`` only
    when given); samples that failed in the tool are not scored."""
    summary = json.loads(path.read_text(encoding="utf-8"))
    out = {}
    for task in _model_arm(summary, path)["per_task"]:
        row = task if round_ is None else task["rounds"][round_ - 1]
        scored = row["n"] - row.get("tool_failure_count", 0)
        out[task["task_id"]] = Outcome(scored, row["sim_pass_count"], row["cov_pass_count"],
                                       row["mean_cov"] * scored)
    return out


def committed(arm: Arm, runs: Path) -> bool:
    return all((runs / s / "summary.json").is_file() for s in arm.summaries)


def load(arm: Arm, runs: Path) -> dict[str, Outcome]:
    """The arm's outcome per task, its seeds' samples pooled."""
    pooled: dict[str, Outcome] = {}
    for name in arm.summaries:
        for task, outcome in read_summary(runs / name / "summary.json", arm.round).items():
            pooled[task] = pooled[task] + outcome if task in pooled else outcome
    return pooled


def decoding(arm: Arm, runs: Path) -> str:
    """How the arm's answers were drawn, from its summaries' recorded commands."""
    labels = set()
    for name in arm.summaries:
        summary = json.loads((runs / name / "summary.json").read_text(encoding="utf-8"))
        words = shlex.split(summary.get("command", ""))
        flag = {w: words[i + 1] for i, w in enumerate(words[:-1]) if w.startswith("--")}
        n = _model_arm(summary, runs / name)["samples"]
        temp = float(flag.get("--temperature", 0.7))
        labels.add("greedy" if temp == 0 else
                   f"T {temp:g}, top-p {float(flag.get('--top-p', 0.8)):g}, n = {n}")
    seeds = f", {len(arm.summaries)} seeds" if len(arm.summaries) > 1 else ", 1 seed"
    return " / ".join(sorted(labels)) + seeds


# --------------------------------------------------------------------------- pairs

@dataclass
class Pair:
    """Two arms paired task by task on one metric."""

    rows: list[tuple[str, Outcome, Outcome]]
    metric: str
    wins: int = 0
    losses: int = 0
    by_family: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def p(self) -> float:
        return sign_test(self.wins, self.losses)

    @property
    def tasks(self) -> int:
        return len(self.rows)


def pair(new: dict[str, Outcome], old: dict[str, Outcome], metric: str) -> Pair:
    """``new`` against ``old`` on the tasks both scored."""
    rows = [(t, new[t], old[t]) for t in new if t in old and new[t].n and old[t].n]
    result = Pair(rows, metric)
    counts: dict[str, list[int]] = {f: [0, 0] for f in FAMILIES.values()}
    for task, a, b in rows:
        diff = a.rate(metric) - b.rate(metric)
        if diff:
            side = 0 if diff > 0 else 1
            counts[family(task)][side] += 1
            if side == 0:
                result.wins += 1
            else:
                result.losses += 1
    result.by_family = {f: (won, lost) for f, (won, lost) in counts.items()}
    return result


def deciding(comparison: Comparison, runs: Path) -> tuple[Arm, Arm] | None:
    """The arms that decide the claim today: the planned pair when all its summaries are
    committed, else the existing pair (None: neither)."""
    if comparison.planned and all(committed(a, runs) for a in comparison.planned):
        return comparison.planned
    if comparison.new and comparison.old:
        return comparison.new, comparison.old
    return None


# --------------------------------------------------------------------------- registry

def _arm(label: str, *summaries: str, round_: int | None = None) -> Arm:
    return Arm(label, tuple(summaries), round_)


BASE_D = _arm("base, direct (its agentic bench's round 1)",
              "smollm2_base_agentic", round_=1)
BASE_A = _arm("base, agentic", "smollm2_base_agentic")
V6_1D = _arm("v6 ckpt 1 (stage 0), direct", "smollm2v5_stage0_direct")
V6_1A = _arm("v6 ckpt 1 (stage 0), agentic", "smollm2v6r_stage0_agentic")
V6_2D = _arm("v6 ckpt 2 (stage 1), direct", "smollm2v6_stage1_direct")
V6_2A = _arm("v6 ckpt 2 (stage 1), agentic", "smollm2v6r_stage1_agentic")
V6_3D = _arm("v6 ckpt 3 (stage 2, final), direct", "smollm2v6r_stage2_60_direct")
V6_3A = _arm("v6 ckpt 3 (stage 2, final), agentic", "smollm2v6r_stage2_60_agentic")
V6_ND = _arm("v6 naive, direct", "smollm2v6_naive_direct")
V6_NA = _arm("v6 naive, agentic", "smollm2v6r_naive_agentic")
V4_1D = _arm("v4 ckpt 1 (stage 0), direct (v3's agentic round 1)",
             "smollm2v3_stage0_agentic", round_=1)
V4_2D = _arm("v4 ckpt 2 (stage 1), direct", "smollm2v4_stage1_direct")
V4_ND = _arm("v4 naive, direct", "smollm2v4_naive_direct")
V5_2D = _arm("v5 ckpt 2 (stage 1, 2 steps), direct", "smollm2v5_stage1_direct")
V6_3x = _arm("v6 ckpt 3 (stage 2, one step), direct", "smollm2v6r_stage2_direct")

SEEDS = (0, 1, 2)
C4_PROG = Arm("progressive ckpt 2, lr 2e-4, direct",
              tuple(f"smollm2c4_progressive_s{s}_direct_n5" for s in SEEDS))
C4_NAIVE = Arm("naive, lr 2e-4, direct", tuple(f"smollm2c4_naive_s{s}_direct_n5" for s in SEEDS))
C4_PROG_G = Arm("progressive ckpt 2, lr 2e-4, direct, greedy",
                tuple(f"smollm2c4_progressive_s{s}_direct_greedy" for s in SEEDS))
C4_NAIVE_G = Arm("naive, lr 2e-4, direct, greedy",
                 tuple(f"smollm2c4_naive_s{s}_direct_greedy" for s in SEEDS))
P2 = {name: _arm(f"rebuilt {name}, n = 5", f"smollm2p2_{name}_n5") for name in (
    "base_direct", "stage0_direct", "stage1_direct", "stage2_direct", "stage2_agentic")}
PHASE1 = "phase 1 (equal-lr control on v6's data, 3 seeds x 2 arms, n = 5)"
PHASE2 = "phase 2 (the v6 lineage rebuilt, n = 5)"

CLAIMS: tuple[Comparison, ...] = (
    Comparison("C1", "student (final checkpoint) beats base", V6_3D, BASE_D,
               (P2["stage2_direct"], P2["base_direct"]), planned_note=PHASE2),
    Comparison("C2", "stage 1 beats stage 0", V6_2D, V6_1D,
               (P2["stage1_direct"], P2["stage0_direct"]), planned_note=PHASE2),
    Comparison("C3", "stage 2 beats stage 1", V6_3D, V6_2D,
               (P2["stage2_direct"], P2["stage1_direct"]), planned_note=PHASE2),
    Comparison("C4", "progressive beats naive (equal lr, equal data)", V4_2D, V4_ND,
               (C4_PROG, C4_NAIVE), planned_note=PHASE1),
    Comparison("C5", "agentic beats direct (final checkpoint)", V6_3A, V6_3D,
               (P2["stage2_agentic"], P2["stage2_direct"]), planned_note=PHASE2),
)
"""The pre-registered list (experiments/smollm2_cpu/preregistration.md), in its order."""

EXPLORATORY: tuple[tuple[str, Arm, Arm], ...] = (
    ("C4 at unequal lr: v6 stage 1 (5e-5) vs v6 naive (2e-4), direct", V6_2D, V6_ND),
    ("C4 at unequal lr: v6 stage 1 (5e-5) vs v6 naive (2e-4), agentic", V6_2A, V6_NA),
    ("v6 stage 2 (final) vs v6 naive, direct", V6_3D, V6_ND),
    ("C1 agentic: v6 ckpt 3 vs base", V6_3A, BASE_A),
    ("C2 agentic: v6 ckpt 2 vs ckpt 1", V6_2A, V6_1A),
    ("C3 agentic: v6 ckpt 3 vs ckpt 2", V6_3A, V6_2A),
    ("C5 on ckpt 2: agentic vs direct", V6_2A, V6_2D),
    ("v4 stage 1 vs v4 stage 0 (lr 2e-4), direct", V4_2D, V4_1D),
    ("collapse: v5 stage 1 (2 steps at 2e-4) vs v5/v6 stage 0, direct", V5_2D, V6_1D),
    ("collapse: v6 stage 2 on 18 designs (1 step) vs stage 1, direct", V6_3x, V6_2D),
    ("C4's second view (phase 1): greedy, 3 seeds", C4_PROG_G, C4_NAIVE_G),
)
"""Comparisons the notebook reported that are not in the list: no claim rests on them."""

FINAL: tuple[Arm, ...] = (BASE_D, BASE_A, V6_3D, V6_3A, V6_ND, V6_NA)
"""The final checkpoints: the base model, progressive's last (v6 stage 2) and naive (v6)."""


# --------------------------------------------------------------------------- rendering

def fmt_p(p: float | None) -> str:
    if p is None:
        return "-"
    if p >= 0.9995:
        return "1"
    if p >= 0.01:
        return f"{p:.3f}"
    if p >= 0.001:
        return f"{p:.4f}"
    return f"{p:.1e}"


def fmt_rate(k: int, n: int) -> str:
    lo, hi = wilson(k, n)
    return f"{k}/{n}: {100 * k / n:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]" if n else "-"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _rates(outcomes: dict[str, Outcome]) -> tuple[int, str, str, str]:
    total = Outcome(0, 0, 0, 0.0)
    for o in outcomes.values():
        total = total + o
    scored = [o for o in outcomes.values() if o.n]
    avg = sum(o.cov_sum / o.n for o in scored) / len(scored) if scored else 0.0
    return (len(scored), fmt_rate(total.sim, total.n), fmt_rate(total.cov, total.n),
            f"{avg:.1f}")


def final_table(runs: Path, arms: Sequence[Arm] = FINAL) -> str:
    """Rates of the final checkpoints, all tasks and by family, with Wilson intervals."""
    rows = []
    for arm in arms:
        outcomes = load(arm, runs)
        groups = [("all", outcomes)] + [
            (f, {t: o for t, o in outcomes.items() if family(t) == f})
            for f in FAMILIES.values()]
        for name, group in groups:
            tasks, sim, cov, avg = _rates(group)
            rows.append([arm.label, name, str(tasks), sim, cov, avg])
    return _table(["checkpoint, mode", "family", "tasks", "Sim Pass k/n: % [95% CI]",
                   "Cov Pass k/n: % [95% CI]", "Avg Cov %"], rows)


@dataclass
class Decision:
    comparison: Comparison
    metric: str
    arms: tuple[Arm, Arm] | None
    pair: Pair | None
    data: str
    holm_p: float | None = None

    @property
    def verdict(self) -> str:
        if self.pair is None:
            return "not run"
        if self.holm_p is not None and self.holm_p < ALPHA:
            return "supported" if self.pair.wins > self.pair.losses else "reversed"
        return "not shown"


def decide(claims: Sequence[Comparison], runs: Path) -> list[Decision]:
    """Every hypothesis of the list (claim x metric), Holm-adjusted together."""
    decisions = []
    for c in claims:
        arms = deciding(c, runs)
        for metric, _ in METRICS:
            if arms is None:
                decisions.append(Decision(c, metric, None, None, ""))
                continue
            new, old = (load(a, runs) for a in arms)
            how = [decoding(a, runs) for a in arms]
            label = how[0] if how[0] == how[1] else f"{how[0]} vs {how[1]}"
            decisions.append(Decision(c, metric, arms, pair(new, old, metric), label))
    for d, adj in zip(decisions, holm([d.pair.p if d.pair else None for d in decisions]),
                      strict=True):
        d.holm_p = adj
    return decisions


def _metric_name(metric: str) -> str:
    return dict(METRICS)[metric]


def claims_table(decisions: Sequence[Decision]) -> str:
    rows = []
    for d in decisions:
        c = d.comparison
        if d.pair is None or d.arms is None:
            rows.append([c.cid, c.claim, _metric_name(d.metric), "-", "-", "-", "-", "-", "-",
                         f"not run: {c.missing}" if c.missing else "not run"])
            continue
        rows.append([c.cid, c.claim, _metric_name(d.metric),
                     f"{d.arms[0].label} vs {d.arms[1].label}", d.data, str(d.pair.tasks),
                     f"{d.pair.wins}/{d.pair.losses}", fmt_p(d.pair.p), fmt_p(d.holm_p),
                     d.verdict])
    return _table(["", "claim", "metric", "new vs old", "decoding", "tasks", "wins/losses",
                   "p (exact, two-sided)", f"Holm p ({len(decisions)} hypotheses)",
                   f"verdict at {ALPHA:g}"], rows)


def planned_table(claims: Sequence[Comparison], runs: Path) -> str:
    rows = []
    for c in claims:
        if c.planned is None:
            rows.append([c.cid, "-", "none planned"])
            continue
        present = [sum((runs / s / "summary.json").is_file() for s in a.summaries)
                   for a in c.planned]
        needed = [len(a.summaries) for a in c.planned]
        names = " vs ".join(", ".join(f"`{s}`" for s in a.summaries) for a in c.planned)
        if present == needed:
            status = "committed: decides the claim"
        else:
            status = (f"not run: {c.planned_note}; {sum(present)} of {sum(needed)} "
                      "summaries committed")
        rows.append([c.cid, names, status])
    return _table(["", "planned summaries (docs/results/runs/)", "status"], rows)


def families_table(decisions: Sequence[Decision]) -> str:
    rows = []
    for d in decisions:
        cells = ["-"] * (1 + len(FAMILIES))
        if d.pair is not None:
            cells = [f"{d.pair.wins}/{d.pair.losses} (p {fmt_p(d.pair.p)})"] + [
                f"{won}/{lost} (p {fmt_p(sign_test(won, lost))})"
                for won, lost in d.pair.by_family.values()]
        rows.append([d.comparison.cid, _metric_name(d.metric), *cells])
    return _table(["", "metric", "all: wins/losses (p)",
                   *(f"{f}: wins/losses (p)" for f in FAMILIES.values())], rows)


def exploratory_table(runs: Path, decisions: Sequence[Decision],
                      pairs: Sequence[tuple[str, Arm, Arm]] = EXPLORATORY) -> str:
    """Comparisons outside the list, with plain p and, as a robustness figure, Holm over
    every test in this file (the list's and these). A pair whose summaries are not all
    committed is shown as not run."""
    ran = [(label, a, b) for label, a, b in pairs if committed(a, runs) and committed(b, runs)]
    results = {(label, m): pair(load(a, runs), load(b, runs), m)
               for label, a, b in ran for m, _ in METRICS}
    listed = [d.pair.p if d.pair else None for d in decisions]
    adjusted = dict(zip(results, holm(listed + [r.p for r in results.values()])[len(listed):],
                        strict=True))
    total = len(listed) + len(results)
    rows = []
    for label, a, b in pairs:
        if (label, METRICS[0][0]) not in results:
            missing = sum(not (runs / s / "summary.json").is_file()
                          for s in a.summaries + b.summaries)
            rows.append([label, "-", f"not run ({missing} summaries missing)", "-", "-",
                         "-", "-", "-"])
            continue
        cells = []
        for m, _ in METRICS:
            r = results[label, m]
            cells += [f"{r.wins}/{r.losses}", fmt_p(r.p), fmt_p(adjusted[label, m])]
        rows.append([label, str(results[label, METRICS[0][0]].tasks), *cells])
    return _table(["comparison (new vs old)", "tasks",
                   "Sim Pass w/l", "p", f"Holm p (all {total})",
                   "Cov Pass w/l", "p", f"Holm p (all {total})"], rows)


def per_task_table(title: str, new: Arm, old: Arm, runs: Path) -> str:
    a, b = load(new, runs), load(old, runs)
    rows = []
    for task in a:
        if task not in b:
            continue
        x, y = a[task], b[task]
        if not (x.n and y.n):
            rows.append([task, family(task), "not scored", "not scored", "-", "-"])
            continue
        rows.append([task, family(task),
                     f"{x.rate('sim'):.2f} / {x.rate('cov'):.2f} / {x.cov_sum / x.n:.1f}",
                     f"{y.rate('sim'):.2f} / {y.rate('cov'):.2f} / {y.cov_sum / y.n:.1f}",
                     f"{x.rate('sim') - y.rate('sim'):+.2f}",
                     f"{x.rate('cov') - y.rate('cov'):+.2f}"])
    return f"### {title}\n\n{new.label} vs {old.label}\n\n" + _table(
        ["task", "family", "new: Sim / Cov pass@1 / cov %", "old: Sim / Cov pass@1 / cov %",
         "Sim diff", "Cov diff"], rows)


BLOCK_NAMES = ("final", "claims", "planned", "families", "exploratory")


def blocks(runs: Path = RUNS, claims: Sequence[Comparison] = CLAIMS) -> dict[str, str]:
    """The generated tables of learning.md, by block name."""
    decisions = decide(claims, runs)
    return {"final": final_table(runs), "claims": claims_table(decisions),
            "planned": planned_table(claims, runs), "families": families_table(decisions),
            "exploratory": exploratory_table(runs, decisions)}


def begin(name: str) -> str:
    return f"<!-- generated by `{SCRIPT}`: {name} -->"


def end(name: str) -> str:
    return f"<!-- end of generated {name} -->"


def read_blocks(text: str) -> dict[str, str]:
    """The generated blocks of a document (between :func:`begin` and :func:`end`)."""
    out = {}
    for name in BLOCK_NAMES:
        start, stop = text.find(begin(name)), text.find(end(name))
        if start >= 0 and stop > start:
            out[name] = text[start + len(begin(name)):stop].strip("\n")
    return out


def write_blocks(text: str, generated: dict[str, str]) -> str:
    for name, body in generated.items():
        start, stop = text.find(begin(name)), text.find(end(name))
        if start < 0 or stop < start:
            raise ValueError(f"learning.md has no generated block {name!r}")
        text = text[:start + len(begin(name))] + "\n" + body + "\n" + text[stop:]
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--per-task", action="store_true",
                        help="also print every comparison task by task")
    parser.add_argument("--write", action="store_true", help=f"rewrite {DOC.name}'s blocks")
    parser.add_argument("--check", action="store_true",
                        help=f"exit 1 if {DOC.name}'s blocks differ from the output")
    args = parser.parse_args(argv)
    generated = blocks()
    if args.write:
        DOC.write_text(write_blocks(DOC.read_text(encoding="utf-8"), generated),
                       encoding="utf-8")
        print(f"{DOC}: {len(generated)} generated blocks written")
        return 0
    if args.check:
        stale = [n for n, body in generated.items()
                 if read_blocks(DOC.read_text(encoding="utf-8")).get(n) != body]
        if stale:
            print(f"{DOC}: generated blocks out of date: {', '.join(stale)} "
                  f"(run {SCRIPT} --write)", file=sys.stderr)
            return 1
        return 0
    for name, body in generated.items():
        print(f"## {name}\n\n{body}\n")
    if args.per_task:
        for d in decide(CLAIMS, RUNS)[::len(METRICS)]:
            if d.arms:
                print(per_task_table(f"{d.comparison.cid}: {d.comparison.claim}",
                                     *d.arms, RUNS) + "\n")
        for label, a, b in EXPLORATORY:
            if committed(a, RUNS) and committed(b, RUNS):
                print(per_task_table(label, a, b, RUNS) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
