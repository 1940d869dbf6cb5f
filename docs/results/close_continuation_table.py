"""The table of docs/results/realip_close.md's "Continuation" section: `llm4cov close`
with and without its continuation step, from the kept run files.

    python docs/results/close_continuation_table.py experiments/close_continuation

The folder holds ``with/<core>/`` and ``without/<core>/``, each with the run's
``run.json.gz`` and ``steps.jsonl.gz`` (gzipped copies of the run directory's files).
Per core: merged coverage and closure (percent) of each arm, the steps, and what the
continuation step added (points, seconds) beside what the formal analyses after the
first added in the arm without it.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path


def _read(folder: Path) -> tuple[dict, list[dict]]:
    run = json.loads(gzip.decompress((folder / "run.json.gz").read_bytes()))
    steps = [json.loads(line) for line in
             gzip.decompress((folder / "steps.jsonl.gz").read_bytes()).decode().splitlines()]
    return run, steps


def _added(steps: list[dict], phase: str, skip: int = 0) -> tuple[int, float]:
    """Points added and seconds spent by the steps of ``phase`` (after the first ``skip``)."""
    chosen = [s for s in steps if s.get("phase") == phase][skip:]
    return sum(s["added"] for s in chosen if s["kept"]), sum(s["wall_s"] for s in chosen)


def table(root: Path) -> str:
    rows = ["| core | budget s | merged % with / without | closure % with / without "
            "| steps with / without | continuation: points (s) | later analyses without "
            "it: points (s) |", "|---|---|---|---|---|---|---|"]
    for folder in sorted((root / "with").iterdir()):
        other = root / "without" / folder.name
        if not other.is_dir():
            continue
        (run, steps), (base, base_steps) = _read(folder), _read(other)
        cont, cont_s = _added(steps, "continue")
        later, later_s = _added(base_steps, "formal", skip=1)
        rows.append(
            f"| {folder.name} | {run['settings'].get('budget_s', '-')} | "
            f"{run['merged']['overall']:.2f} / {base['merged']['overall']:.2f} | "
            f"{run['closure']:.2f} / {base['closure']:.2f} | {run['steps']} / "
            f"{base['steps']} | +{cont} ({cont_s:.0f}) | +{later} ({later_s:.0f}) |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(table(Path(sys.argv[1])), end="")
