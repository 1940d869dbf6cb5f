"""docs/results/bench_equivalence.py: two run dirs are equal but for timing and the keys
named with --ignore; any other difference is found (exit 1)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import REPO

SCRIPT = REPO / "docs" / "results" / "bench_equivalence.py"


def _bench(path: Path, coverage: float, wall_s: float, typed: bool) -> Path:
    path.mkdir()
    item = {"kind": "line", "line": 3, **({"typed": {"kind": "block"}} if typed else {})}
    row = {"arm": "random", "task_id": "t", "sample": 0, "round": 1, "wall_s": wall_s,
           "observation": {"coverage": coverage, "build_s": wall_s, "cached": typed,
                           "uncovered": [item]}}
    (path / "results.jsonl").write_text(json.dumps(row) + "\n")
    (path / "summary.json").write_text(json.dumps({
        "invocations": [{"wall_s": wall_s}], "arms": {"random": {"spent": {"gen_s": wall_s},
                                                                 "cov_pass": coverage}}}))
    return path


def _run(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True,
                          text=True, check=False)


def test_timing_and_ignored_keys_are_left_out_and_a_real_difference_is_found(tmp_path):
    before = _bench(tmp_path / "before", 75.0, 1.5, typed=False)
    after = _bench(tmp_path / "after", 75.0, 9.25, typed=True)
    assert _run(before, after).returncode == 1  # the added "typed" key differs
    same = _run(before, after, "--ignore", "typed")
    assert same.returncode == 0, same.stdout
    assert "rows: 1 before, 1 after, same keys True, differing rows 0" in same.stdout
    other = _bench(tmp_path / "other", 80.0, 1.5, typed=False)
    differs = _run(before, other)
    assert differs.returncode == 1 and "differing rows 1" in differs.stdout


def test_a_gen_run_dir_is_compared_file_by_file(tmp_path):
    for name, text in (("before", "module tb; endmodule\n"), ("after", "module tb;endmodule\n")):
        (tmp_path / name / "rounds").mkdir(parents=True)
        (tmp_path / name / "tb.sv").write_text(text)
        (tmp_path / name / "run.json").write_text(json.dumps({"wall_s": len(name), "best": 2}))
    out = _run(tmp_path / "before", tmp_path / "after")
    assert out.returncode == 1
    assert "run.json: identical" in out.stdout and "tb.sv: DIFFERS" in out.stdout
