"""Reports of a scored run: a Markdown summary ready to paste, and an HTML page with plots.

Both render the same tables (:func:`tables`) from ``summary.json``; numbers are percent.
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from typing import Any

from llm4cov.bench.answer_checks import CHECKS
from llm4cov.bench.formal_notes import VERDICTS, unreachable_lines
from llm4cov.util.escape import md_block, md_text

CALIBRATION_TEXT = {
    "other_simulator": "CVDP thresholds, calibrated on Cadence Xcelium/IMC's composite score",
    "other_version": "set from the reference testbench under another or an unrecorded "
                     "Verilator version",
    "default": "a default target (the reference testbench failed or is missing)",
    "no_target": "no target (Cov Pass = Sim Pass)",
    "unknown": "of unknown origin",
}
MARK = "†"


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def _max_k(summary: dict[str, Any]) -> int:
    return max((int(k) for a in summary["arms"].values() if a["headline"]
                for k in a["headline"]["pass_at_k"]), default=1)


def _main_table(summary: dict[str, Any]) -> Table:
    ks = range(2, _max_k(summary) + 1)
    header = ["arm", "tasks", "samples/task", "rounds", "Sim Pass", "Cov Pass (pass@1)",
              "Avg Cov", "best-of-n Cov", *(f"pass@{k}" for k in ks), "tool failures",
              "RTL errors"]
    rows = []
    for name, arm in summary["arms"].items():
        h = arm["headline"] or {}
        tasks = f"{arm['tasks_scored']}/{arm['tasks_planned']}"
        rows.append([name, tasks, str(arm["samples"]), str(arm["rounds"]),
                     _pct(h.get("sim_pass")), _pct(h.get("cov_pass")), _pct(h.get("avg_cov")),
                     _pct(h.get("best_of_n")),
                     *(_pct(h.get("pass_at_k", {}).get(str(k))) for k in ks),
                     str(arm.get("tool_failures", 0)), str(arm.get("rtl_errors", 0))])
    return Table("Results", header, rows)


def _round_table(summary: dict[str, Any]) -> Table | None:
    rows = []
    for name, arm in summary["arms"].items():
        if arm["rounds"] < 2:
            continue
        for r, h in enumerate(arm["per_round"], 1):
            h = h or {}
            rows.append([name, str(r), _pct(h.get("sim_pass")), _pct(h.get("cov_pass")),
                         _pct(h.get("avg_cov"))])
    if not rows:
        return None
    return Table("Per round (each sample's best state after round r)",
                 ["arm", "round", "Sim Pass", "Cov Pass", "Avg Cov"], rows)


def _breakdown(summary: dict[str, Any], key: str, label: str) -> Table:
    rows = []
    for name, arm in summary["arms"].items():
        for group, h in arm[key].items():
            h = h or {"tasks": 0}  # None: only tool failures or RTL errors in the group
            rows.append([name, group, str(h["tasks"]), _pct(h.get("sim_pass")),
                         _pct(h.get("cov_pass")), _pct(h.get("avg_cov"))])
    return Table(f"By {label}", ["arm", label, "tasks", "Sim Pass", "Cov Pass", "Avg Cov"], rows)


def _spent_table(summary: dict[str, Any]) -> Table:
    rows = []
    for name, arm in summary["arms"].items():
        s = arm["spent"]
        rows.append([name, f"{arm['samples_finished']}/{arm['samples_planned']}",
                     f"{s['sim_calls']} ({s['sim_cached']} cached)", str(s["prompt_tokens"]),
                     str(s["completion_tokens"]),
                     f"{s['gen_s']:.0f}", f"{s['sim_build_s']:.0f}", f"{s['sim_run_s']:.0f}"])
    notes = []
    for inv in summary["invocations"]:
        budget = inv.get("budget", {})
        stop = f", stopped by the {budget['exhausted']} budget" if budget.get("exhausted") else ""
        notes.append(f"invocation {inv['started']}: {inv['wall_s']:.0f} s wall, "
                     f"{inv['new_rows']} new rows, {inv['workers']} workers{stop}")
    return Table("Spent", ["arm", "samples finished", "sim calls", "prompt tokens",
                           "completion tokens", "model s", "build s", "run s"], rows, notes)


def _checks_table(summary: dict[str, Any]) -> Table | None:
    """The copy checks of every answer, per arm that has answers (percent of answers)."""
    arms = {n: a for n, a in summary["arms"].items() if a.get("answer_checks")}
    if not arms:
        return None

    def row(label: str, c: dict[str, int]) -> list[str]:
        return [label, str(c["answers"]),
                *(_pct(100.0 * c[k] / c["answers"]) if c["answers"] else "-" for k in CHECKS)]

    rows = []
    for name, arm in arms.items():
        repeats = arm.get("repeated_testbench_by_round", {})
        rows.append([*row(name, arm["answer_checks"]), "-"])
        for k, rc in arm.get("answer_checks_by_round", {}).items():
            rep = repeats.get(k)
            rows.append([*row(f"{name}, round {k}", rc),
                         f"{rep['repeated']} of {rep['answers']}" if rep else "-"])
    unparsed = [f"{name}: {arm['answer_checks']['unparsed']}" for name, arm in arms.items()
                if arm["answer_checks"].get("unparsed")]
    notes = ["Pins are read on the DUT instance with the right name, else the first "
             "one; 'pins valid': every named pin is a DUT port and no more positional "
             "pins than ports."]
    if unparsed:
        notes.append("Answers whose testbench pyslang could not parse (nesting too deep, "
                     "or past the bounds of the parse of an answer that uses the "
                     "preprocessor), counted as holding a module but no DUT instance: "
                     + ", ".join(unparsed) + ".")
    return Table("Answer checks (every answer of every round, then round by round; read "
                 "from the answer's text)",
                 ["arm", "answers", "holds a module", "instantiates the DUT module",
                  "right instance name", "pins valid", "all pins connected",
                  "same testbench as the round before"], rows, notes)


def _task_table(summary: dict[str, Any]) -> Table:
    arms = summary["arms"]
    per: dict[str, dict[str, dict]] = {}
    targets: dict[str, tuple[float | None, str]] = {}
    for name, arm in arms.items():
        for t in arm["per_task"]:
            per.setdefault(t["task_id"], {})[name] = t
            targets[t["task_id"]] = (t["target"], t["calibration"])
    header = ["task", "target"]
    for name in arms:
        header += [f"{name} mean cov", f"{name} Cov Pass"]
    rows = []
    for task_id, by_arm in per.items():
        target, cal = targets[task_id]
        mark = "" if cal == "this_simulator" else MARK
        row = [task_id, ("-" if target is None else f"{target:g}") + mark]
        for name in arms:
            t = by_arm.get(name)
            row += ([_pct(t["mean_cov"]), f"{t['cov_pass_count']}/{t['n']}"] if t else ["-", "-"])
        rows.append(row)
    return Table("Per task", header, rows)


def _formal_tables(summary: dict[str, Any]) -> list[Table]:
    """Per arm with formal verdicts: goals per task, best coverage beside the best with
    proven-unreachable points excluded, and the proven-unreachable items as notes."""
    out = []
    for name, arm in summary["arms"].items():
        if "formal" not in arm:
            continue
        total = arm["formal"]
        rows = [[t["task_id"], *(str(t.get("formal", {}).get(v, 0)) for v in VERDICTS),
                 _pct(t["best_cov"]),
                 _pct(t["formal"]["best_cov_unreachable_excluded"] if "formal" in t else None)]
                for t in arm["per_task"]]
        rows.append(["all tasks", *(str(total[v]) for v in VERDICTS), "",
                     _pct(total["avg_best_cov_unreachable_excluded"]) + " (mean)"])
        notes = ["A separate figure: the headline metrics above are the evaluator's, "
                 "unchanged; each proven-unreachable goal leaves one point out of its "
                 "metric's total.", *(f"proven unreachable: {line}"
                                      for line in unreachable_lines(arm["per_task"]))]
        out.append(Table(f"Formal closure ({name})",
                         ["task", "reached", "proven unreachable", "unknown", "best cov",
                          "best cov, unreachable excluded"], rows, notes))
    return out


def tables(summary: dict[str, Any]) -> list[Table]:
    """The report's tables in order: results, per round, answer checks, by difficulty,
    by source, spent, per task, then formal closure (arms whose policy reported formal
    verdicts)."""
    out = [_main_table(summary)]
    if (rounds := _round_table(summary)) is not None:
        out.append(rounds)
    if (checks := _checks_table(summary)) is not None:
        out.append(checks)
    out += [_breakdown(summary, "by_difficulty", "difficulty"),
            _breakdown(summary, "by_source", "source"), _spent_table(summary),
            _task_table(summary), *_formal_tables(summary)]
    return out


def facts(summary: dict[str, Any]) -> list[str]:
    """The statements every report carries: simulator and version, the metrics behind
    ``overall``, the pass@k estimator, threshold calibration, completeness."""
    metrics = ", ".join("line (basic blocks)" if m == "line" else m
                        for m in summary["overall_metrics"])
    th = summary["thresholds"]
    out = [
        f"Simulator: {summary['simulator']} (coverage options: "
        f"{' '.join(summary['coverage_options'])}).",
        f"`overall` = mean of the {metrics} percentages of the DUT instance and everything "
        "below it, over the metrics that have points (Cadence IMC \"Overall Average\" "
        "semantics); a failed simulation scores 0.",
        f"pass@k: {summary['estimator_label']}, averaged over tasks; Cov Pass and Sim Pass "
        "are pass@1 (CVDP's headline). Avg Cov = mean over tasks of the mean sample coverage.",
        "Agentic samples are scored by their best round (Sim Pass, then Cov Pass, then "
        "coverage), as the agent keeps its best state.",
    ]
    if th["calibrated_count"]:
        out.append(f"{th['calibrated_count']} of {summary['tasks']} thresholds were calibrated "
                   f"for this simulator (reference testbench under "
                   f"{', '.join(th['calibrated_on'])}).")
    for cal, ids in th["not_calibrated"].items():
        out.append(f"{MARK} {len(ids)} of {summary['tasks']} thresholds were NOT calibrated "
                   f"for this simulator: {CALIBRATION_TEXT.get(cal, cal)}.")
    drift, compared = th["reference_drift"], th["reference_compared"]
    if compared:
        below = [d["task_id"] for d in drift if d["below_target"]]
        worst = max((abs(d["measured"] - d["calibration"]) for d in drift), default=0.0)
        out.append(
            f"The reference testbench scores as in the calibration run on "
            f"{compared - len(drift)} of {compared} tasks; it differs on {len(drift)} "
            f"(largest difference {worst:.2f} percentage points)"
            + (f" and misses its own target on {len(below)}: {', '.join(below)}."
               if below else "."))
    failures = {name: arm.get("tool_failures", 0) for name, arm in summary["arms"].items()}
    if any(failures.values()):
        counted = any(a.get("tool_failures_included") for a in summary["arms"].values())
        listed = ", ".join(f"{n} {name}" for name, n in failures.items() if n)
        out.append(f"Tool failures (the simulator failed, not the model): {listed} "
                   "sample(s); " + ("counted as failed samples." if counted else
                                    "left out of every metric's denominator."))
    else:
        out.append("Tool failures (the simulator failed, not the model): none.")
    broken = {name: arm for name, arm in summary["arms"].items() if arm.get("rtl_errors")}
    if broken:
        tasks = sorted({t for arm in broken.values() for t in arm.get("rtl_error_tasks", [])})
        listed = ", ".join(f"{arm['rtl_errors']} {name}" for name, arm in broken.items())
        out.append(f"RTL errors (the task's RTL does not compile on its own, not the "
                   f"model's failure): {listed} sample(s), tasks {', '.join(tasks)}; left "
                   "out of every metric's denominator.")
    if not summary["complete"]:
        out.append("**INCOMPLETE RUN**: some samples are not finished (see Spent); metrics "
                   "cover finished samples only.")
    return out


def _md_table(t: Table) -> str:
    """A table in Markdown, every title, header, cell and note literal text
    (:func:`~llm4cov.util.escape.md_text`): cells carry task fields of the task file
    (``source``, ``difficulty``), which must not open markup, HTML or a row."""
    lines = [f"## {md_text(t.title)}", "", "| " + " | ".join(map(md_text, t.header)) + " |",
             "|" + "---|" * len(t.header)]
    lines += ["| " + " | ".join(map(md_text, row)) + " |" for row in t.rows]
    if t.notes:
        lines += [""] + [f"- {md_text(n)}" for n in t.notes]
    return "\n".join(lines)


def _title(summary: dict[str, Any]) -> str:
    return f"llm4cov bench: {summary['tasks_file']} ({summary['tasks']} tasks), {summary['mode']}"


def markdown(summary: dict[str, Any]) -> str:
    """The Markdown report: title, command, facts, then every table."""
    parts = [f"# {md_text(_title(summary))}", "", "Command (from the repository root):", "",
             md_block(summary["command"], "bash"), ""]
    parts += [f"- {f}" for f in facts(summary)]
    parts += ["", "\n\n".join(_md_table(t) for t in tables(summary)), ""]
    return "\n".join(parts)


def _html_table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in t.header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
                   for row in t.rows)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in t.notes)
    return (f"<h2>{html.escape(t.title)}</h2><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>" + (f"<ul>{notes}</ul>" if notes else ""))


def html_report(summary: dict[str, Any], plots: dict[str, bytes],
                links: dict[str, str] | None = None) -> str:
    """A self-contained HTML page: facts, plots (PNG, embedded), every table and, with
    ``links`` (task id -> relative path, ``llm4cov.report.bench_links``), links to the
    annotated coverage report of each task's best testbench."""
    coverage = "".join(f"<li><a href='{html.escape(path)}'>{html.escape(task_id)}</a></li>"
                       for task_id, path in (links or {}).items())
    images = "".join(
        f"<figure><img alt='{html.escape(name)}' src='data:image/png;base64,"
        f"{base64.b64encode(png).decode()}'/><figcaption>{html.escape(name)}</figcaption>"
        "</figure>" for name, png in plots.items())
    facts_html = "".join(f"<li>{html.escape(f)}</li>" for f in facts(summary))
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto}"
             "table{border-collapse:collapse;margin-bottom:1em}"
             "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}"
             "td:first-child,th:first-child{text-align:left}img{max-width:100%}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>"
            f"{html.escape(_title(summary))}</title><style>{style}</style></head><body>"
            f"<h1>{html.escape(_title(summary))}</h1>"
            f"<pre>{html.escape(summary['command'])}</pre><ul>{facts_html}</ul>{images}"
            + "".join(_html_table(t) for t in tables(summary))
            + (f"<h2>Coverage of each task's best testbench</h2><ul>{coverage}</ul>"
               if coverage else "") + "</body></html>")
