"""The table of the register-bus length change (README.md here) from its run files.

    python experiments/close_bus_length/table.py

One row per variant and core: merged and closure coverage (percent), the command's
wall time (seconds), and what each 5,000 and 20,000-cycle random step did (points it
added, or its status when not a success).
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
VARIANTS = ("before", "after", "varb", "final")


def rungs(steps: Path) -> str:
    out = []
    for line in steps.read_text().splitlines():
        step = json.loads(line)
        length = (step.get("origin") or {}).get("length")
        if step.get("phase") == "random" and length in (5000, 20000):
            what = f"+{step['added']}" if step["status"] == "success" else step["status"]
            out.append(f"{length // 1000}k {what}")
    return ", ".join(out)


def main() -> str:
    rows = ["| variant | core | merged % | closure % | wall s | 5k/20k random steps |",
            "|---|---|---|---|---|---|"]
    for variant in VARIANTS:
        walls = {}
        walls_file = HERE / variant / "walls.txt"
        if walls_file.exists():
            for line in walls_file.read_text().splitlines():
                core, *fields = line.split()
                walls[core] = dict(f.split("=", 1) for f in fields).get("wall", "")
        for run_json in sorted((HERE / variant).glob("*/run.json")):
            core = run_json.parent.name
            run = json.loads(run_json.read_text())
            rows.append(f"| {variant} | {core} | {run['merged']['overall']:.2f} | "
                        f"{run['closure']:.2f} | {walls.get(core, '')} | "
                        f"{rungs(run_json.parent / 'steps.jsonl')} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(main())
