"""The table of the strobe and burst change (README.md here) from its run files.

    python experiments/close_strobes_bursts/table.py

One row per variant and core: merged and closure coverage (percent), the covered and
total points of the merged regression, and the command's wall time (seconds).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
VARIANTS = ("base", "strobe", "both")


def row(variant: str, run_file: Path, walls: dict[tuple[str, str], str]) -> str:
    """One core's row: ``run.json.gz`` of ``llm4cov close``."""
    run = json.loads(gzip.decompress(run_file.read_bytes()))
    m, core = run["merged"], run_file.parent.name
    cells = [variant, core, f"{m['overall']:.2f}", f"{run['closure']:.2f}",
             f"{m['covered_points']} / {m['total_points']}", walls.get((variant, core), "")]
    return "| " + " | ".join(cells) + " |"


def main() -> str:
    lines = [line.split() for line in (HERE / "walls.txt").read_text().splitlines()]
    walls = {(w[0], w[1]): w[2] for w in lines if len(w) == 3}
    rows = ["| variant | core | merged % | closure % | points covered / total | wall s |",
            "|---|---|---|---|---|---|"]
    rows += [row(v, f, walls) for v in VARIANTS for f in sorted((HERE / v).glob("*/run.json.gz"))]
    return "\n".join(rows)


if __name__ == "__main__":
    print(main())
