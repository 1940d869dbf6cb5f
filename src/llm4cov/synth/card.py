"""The dataset card (Markdown) of an SFT export.

Counts by trace type, stage and kind; verdicts and statuses of every candidate point;
a coverage-gain histogram (percentage points); token lengths; repo outcomes; the
commands and the settings that produced the data.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable
from itertools import pairwise
from pathlib import Path
from typing import Any

from llm4cov.synth.engine import run_summary
from llm4cov.synth.records import DataPoint

GAIN_BINS_PP = (0.0, 1.0, 5.0, 10.0, 25.0, 50.0)
"""Left edges (percentage points) of the gain histogram after the ``< 0`` bin."""


def _table(header: tuple[str, ...], rows: Iterable[tuple[Any, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _counts(values: Iterable[str], label: str) -> str:
    counts = Counter(values)
    return _table((label, "count"), sorted(counts.items())) if counts else "(none)"


def gain_bin(gain_pp: float) -> str:
    """The histogram bin of a gain in percentage points, e.g. ``[1, 5)`` or ``>= 50``."""
    if gain_pp < GAIN_BINS_PP[0]:
        return "< 0"
    for lo, hi in pairwise(GAIN_BINS_PP):
        if gain_pp < hi:
            return f"[{lo:g}, {hi:g})"
    return f">= {GAIN_BINS_PP[-1]:g}"


def _histogram(all_pp: list[float], exported_pp: list[float]) -> str:
    labels = ["< 0"] + [gain_bin(e) for e in GAIN_BINS_PP]
    a, e = Counter(map(gain_bin, all_pp)), Counter(map(gain_bin, exported_pp))
    return _table(("gain (pp)", "simulated candidates", "exported"),
                  ((lab, a[lab], e[lab]) for lab in labels))


def _lengths(metas: list[dict[str, Any]]) -> str:
    rows = []
    for key in ("context_tokens", "prompt_tokens", "response_tokens"):
        vals = [m[key] for m in metas]
        if vals:
            rows.append((key, min(vals), f"{statistics.median(vals):g}",
                         f"{statistics.fmean(vals):.0f}", max(vals)))
    return _table(("tokens", "min", "median", "mean", "max"), rows) if rows else "(none)"


def _state_label(meta: dict[str, Any]) -> str:
    if meta["state_id"] == "s0":
        return "s_0 (direct inference)"
    return f"{meta['selected_as']} ({meta['state_status']})"


def _rebalance_text(rb: dict[str, Any]) -> str:
    return (f"repos <= {rb['short_tokens']} tokens: keep {rb['short_direct_keep']:.3g} of "
            f"direct, {rb['short_agentic_keep']:.3g} of agentic points (seed {rb['seed']})")


def render_card(
    name: str,
    run: dict[str, Any],
    run_dir: Path,
    points: list[DataPoint],
    metas: list[dict[str, Any]],
    curation: dict[str, Any],
    commands: list[str],
) -> str:
    """The card of dataset ``name``: ``run`` is ``run.json``, ``points`` every candidate
    point of the run, ``metas`` the ``meta`` of every exported sample."""
    summary = run_summary(run_dir)
    cfg = run["config"]
    sel, rej = cfg["selection"], cfg["rejection"]
    models = run["identity"]["models"]
    settings = [
        ("stage", cfg["stage"]), ("trace type", cfg["trace_type"]),
        ("M_int / M_trans", f"{models['int']} / {models['trans']}"),
        ("K candidates, M transitions", f"{sel['candidates']}, {cfg['transitions']}"),
        ("selection", f"{sel['strategy']} (failure state: {sel['include_failure']}, "
                      f"median margin {sel['median_margin']}, max {sel['max_states']})"),
        ("rejection", f"gain >= {rej['tau_delta']} (fraction), overall >= "
                      f"{rej['min_overall_percent']}%"),
        ("direct points", cfg["direct_points"]), ("syntax rules (generation only)",
                                                   cfg["syntax_rules"]),
        ("rebalancing", _rebalance_text(curation["rebalance"])),
        ("token counter", curation["token_counter"]),
    ]
    simulated = [p for p in points if p.next.testbench is not None]
    parts = [
        f"# {name}\n",
        "Supervised fine-tuning data for coverage-driven testbench generation, synthesized "
        "by `llm4cov synth` (LLM4Cov, offline agentic data synthesis) and scored by the "
        "Verilator evaluator. Format: chat JSONL (`messages` = system, user, assistant; "
        "`meta`), loadable with `datasets.load_dataset(\"json\", ...)`, TRL's "
        "conversational format and LlamaFactory (`dataset_info.json`). The generation-time "
        "syntax rules are not in the prompts.\n",
        "## Commands\n", "```\n" + "\n".join(commands or ["(not recorded)"]) + "\n```\n",
        "## Settings\n", _table(("setting", "value"), settings) + "\n",
        f"## Budget spent\n\nSimulator calls: {summary['sim_calls']}; policy tokens "
        f"(prompt + completion): {summary['tokens']}.\n",
        "## Repos\n", _table(("outcome", "repos"), summary["repos"].items()) + "\n",
        "## Candidate data points (every sampled transition)\n",
        _table(("kind", "verdict", "points"),
               ((k, v, n) for (k, v), n in sorted(
                   Counter((p.kind.value, p.verdict.value) for p in points).items()))) + "\n",
        "By the state they start from (`broken:<kind>`: a repair state, "
        "`synth/repair.py`):\n",
        _table(("state selected as", "verdict", "points"),
               ((k, v, n) for (k, v), n in sorted(
                   Counter((p.state.selected_as, p.verdict.value) for p in points).items())))
        + "\n",
        "Status of the new testbench `o_{t+1}`:\n",
        _counts((p.next.observation.status.value for p in points), "status") + "\n",
        "Status of the state `o_t` the transition started from:\n",
        _counts((p.state.observation.status.value if p.state.observation else "initial (s_0)"
                 for p in points), "state status") + "\n",
        f"## Exported samples: {len(metas)}\n",
        _table(("stage", "trace type", "kind", "samples"),
               ((s, t, k, n) for (s, t, k), n in sorted(Counter(
                   (m["stage"], m["trace_type"], m["kind"]) for m in metas).items()))) + "\n",
        "States the exported transitions start from:\n",
        _counts((_state_label(m) for m in metas), "state (selected as, status)") + "\n",
        "Curation (kept points by kind and context length, before and after rebalancing):\n",
        _table(("group", "before", "after"),
               ((g, n, curation["kept_after"].get(g, 0))
                for g, n in curation["kept_before"].items())) + "\n",
        "## Coverage gain `Cov(o_{t+1}) - Cov(o_t)` (percentage points)\n",
        _histogram([100 * p.gain for p in simulated], [100 * m["gain"] for m in metas]) + "\n",
        f"## Token lengths ({curation['token_counter']})\n",
        _lengths(metas) + "\n",
    ]
    return "\n".join(parts)
