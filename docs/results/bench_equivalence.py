"""Two run directories of the same command: identical results but for timing.

Usage: python docs/results/bench_equivalence.py BEFORE_DIR AFTER_DIR [--ignore KEY ...]

A bench run (``results.jsonl``): every row field by field, the full observation
included, and ``summary.json`` but for invocations and seconds. A ``gen`` run
(``rounds/``) or a ``close`` run (``steps.jsonl``): ``run.json``, every round or step
record, the best testbench and ``coverage.md``. Timing is left out everywhere: keys that
end in ``_s`` (seconds), ``cached`` and ``invocations``, and seconds in Markdown (``22 s``,
``4.52 s``). ``--ignore KEY`` leaves out a key
wherever it occurs too (a field a change added on purpose, e.g. ``typed`` and
``schema_version`` of issue 43's typed coverage). Exit 0 when all is identical.
Issue 14 acceptance: docs/results/refactor_equivalence.md; issue 43: the same file.
"""
import argparse
import json
import re
import sys
from pathlib import Path

DROPPED = {"cached", "invocations", "ended_at", "started_at"}
SECONDS = re.compile(r"\b\d+(\.\d+)? s\b")


def clean(value, ignore: set[str]):
    """``value`` without timing keys and ``ignore`` keys, at any depth."""
    if isinstance(value, dict):
        return {k: clean(v, ignore) for k, v in value.items()
                if not k.endswith("_s") and k not in DROPPED and k not in ignore}
    if isinstance(value, list):
        return [clean(v, ignore) for v in value]
    return value


def jsonl(path: Path, ignore: set[str]) -> list:
    return [clean(json.loads(line), ignore)
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def compare_bench(before: Path, after: Path, ignore: set[str]) -> bool:
    def rows(path: Path) -> dict:
        return {(r["arm"], r["task_id"], r["sample"], r["round"]): r
                for r in jsonl(path / "results.jsonl", ignore)}

    a, b = rows(before), rows(after)
    differing = sum(a[k] != b.get(k) for k in a)
    print(f"rows: {len(a)} before, {len(b)} after, same keys {a.keys() == b.keys()}, "
          f"differing rows {differing}")
    same_summary = (clean(json.loads((before / "summary.json").read_text()), ignore)
                    == clean(json.loads((after / "summary.json").read_text()), ignore))
    print("summary.json identical but for invocations and timing:", same_summary)
    return a.keys() == b.keys() and differing == 0 and same_summary


def compare_run(before: Path, after: Path, ignore: set[str]) -> bool:
    files = sorted({p.relative_to(before).as_posix() for p in before.rglob("*")
                    if p.suffix in (".json", ".jsonl", ".sv", ".md") and "html" not in p.parts})
    same = True
    for name in files:
        x, y = before / name, after / name
        if not y.is_file():
            print(f"{name}: missing after")
            same = False
            continue
        if x.suffix == ".json":
            equal = (clean(json.loads(x.read_text()), ignore)
                     == clean(json.loads(y.read_text()), ignore))
        elif x.suffix == ".jsonl":
            equal = jsonl(x, ignore) == jsonl(y, ignore)
        elif x.suffix == ".md":
            equal = SECONDS.sub("N s", x.read_text()) == SECONDS.sub("N s", y.read_text())
        else:
            equal = x.read_text() == y.read_text()
        same &= equal
        print(f"{name}: {'identical' if equal else 'DIFFERS'}")
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--ignore", action="append", default=[])
    args = parser.parse_args()
    ignore = set(args.ignore)
    if (args.before / "results.jsonl").is_file():
        same = compare_bench(args.before, args.after, ignore)
    else:
        same = compare_run(args.before, args.after, ignore)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
