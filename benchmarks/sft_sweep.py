"""Pick SFT learning rate, batch size and epochs on a held-out slice of the training repos.

Splits an exported stage dataset (``llm4cov synth export``: ``sft.jsonl``, one sample per
line with ``meta.repo_id``) by repo: ``--heldout`` repos (every k-th repo id in sorted
order) are held out, the rest train. For every learning rate x batch size it runs
``llm4cov train`` (resumable: a finished run is reused) with a checkpoint at the end of
every epoch (``--evaluate-only``: trains nothing, measures what a stopped sweep
saved), then measures the held-out SFT loss (``llm4cov.train.heldout``: nats per
testbench token) of each epoch's checkpoint, and prints a Markdown table (also written to
``--table``). Lower held-out loss is better; the lead picks from it.

    python benchmarks/sft_sweep.py --data runs/smollm2v2/d0_sft/sft.jsonl \
        --init smollm2-135m --out runs/smollm2v2/sweep --kinds direct \
        --runs 5e-5:8:all,3e-4:8:all,3e-4:8:15 --epochs 2 --max-length 2048 \
        --table docs/results/sft_sweep_smollm2.md
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

from llm4cov.models.store import resolve_model
from llm4cov.train.data import load_split
from llm4cov.train.heldout import heldout_loss


def split(data: Path, out: Path, heldout: int, kinds: set[str]) -> tuple[Path, Path, list]:
    """Write ``out/train.jsonl`` (samples of ``kinds`` from the training repos) and
    ``out/heldout.jsonl`` (every sample of the held-out repos); return both and the
    held-out repo ids."""
    rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    repos = sorted({r["meta"]["repo_id"] for r in rows})
    step = max(1, len(repos) // heldout)
    held = set(repos[::step][:heldout])
    out.mkdir(parents=True, exist_ok=True)
    train, test = out / "train.jsonl", out / "heldout.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in rows
                             if r["meta"]["repo_id"] not in held
                             and r["meta"]["kind"] in kinds), encoding="utf-8")
    test.write_text("".join(json.dumps(r) + "\n" for r in rows
                            if r["meta"]["repo_id"] in held), encoding="utf-8")
    return train, test, sorted(held)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--init", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--heldout", type=int, default=20, help="held-out repos")
    ap.add_argument("--kinds", default="direct,agentic", help="sample kinds to train on")
    ap.add_argument("--lrs", default="5e-5,2e-4,5e-4")
    ap.add_argument("--batches", default="8")
    ap.add_argument("--trainable-layers", default="all",
                    help="comma list: 'all' (full fine-tune) or N (only the top N layers)")
    ap.add_argument("--runs", help="explicit grid instead of the product: comma list of "
                    "LR:BATCH:LAYERS, e.g. 5e-5:8:all,3e-4:8:15")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--max-length", type=int, default=2048)
    ap.add_argument("--table", type=Path)
    ap.add_argument("--evaluate-only", action="store_true",
                    help="train nothing: measure the checkpoints the runs already saved "
                    "(an unfinished run's rows say so)")
    args = ap.parse_args(argv)

    train, test, held = split(args.data, args.out, args.heldout, set(args.kinds.split(",")))
    init = resolve_model(args.init)
    _tok, total, kept = load_split(train, init, args.max_length)
    lines = [f"Held-out repos ({len(held)}): {', '.join(held)}", "",
             f"Training samples: {len(kept.kept)} of {total} ({len(kept.dropped)} longer "
             f"than {args.max_length} tokens dropped); kinds: {args.kinds}.", "",
             "| lr | batch | layers trained | epoch | step | train loss (last step) | "
             "held-out loss (nats/token) | held-out tokens | wall s |",
             "|---|---|---|---|---|---|---|---|---|"]
    grid = ([(lr, int(b), layers) for lr, b, layers in
             (run.split(":") for run in args.runs.split(","))] if args.runs else
            [(lr, batch, layers) for lr in args.lrs.split(",")
             for batch in map(int, args.batches.split(","))
             for layers in args.trainable_layers.split(",")])
    for lr, batch, layers in grid:
        steps = math.ceil(len(kept.kept) / batch)
        run = args.out / (f"lr{lr}_b{batch}" + ("" if layers == "all" else f"_top{layers}"))
        cmd = ["llm4cov", "train", "--data", str(train), "--init", args.init,
               "--out", str(run), "--lr", lr, "--batch-size", str(batch),
               "--per-device-batch-size", str(min(batch, 2)),
               "--epochs", str(args.epochs), "--max-length", str(args.max_length),
               "--save-steps", str(steps), "--warmup-ratio", "0.05",
               "--logging-steps", "1", "--no-gradient-checkpointing",
               *([] if layers == "all" else ["--trainable-layers", layers])]
        start = time.monotonic()
        if not args.evaluate_only and subprocess.run(cmd).returncode != 0:
            print(f"training failed: {' '.join(cmd)}", file=sys.stderr)
            return 1
        wall = time.monotonic() - start
        for row in _rows(run, steps, args.epochs, test, args.max_length):
            lines.append(f"| {lr} | {batch} | {layers} | {row} |")
            print(lines[-1], flush=True)
        print(f"(lr {lr} batch {batch} layers {layers}: {wall:.0f} s this invocation)",
              flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.table:
        args.table.write_text(text, encoding="utf-8")
    return 0


def _rows(run: Path, steps_per_epoch: int, epochs: int, test: Path, max_length: int
          ) -> list[str]:
    """Table cells from ``epoch`` on, one row per saved checkpoint of ``run`` (the final
    model of a finished run; the epoch checkpoints of an unfinished one, marked)."""
    done = (run / "train_report.json").exists()
    report = json.loads((run / "train_report.json").read_text()) if done else {}
    saved = sorted((int(p.name.split("-")[1]), p) for p in run.glob("checkpoint-*"))
    history = (report.get("losses", []) if done else json.loads(
        (saved[-1][1] / "trainer_state.json").read_text())["log_history"] if saved else [])
    losses = {r["step"]: r["loss"] for r in history if "loss" in r}
    last = report.get("steps")
    points = [*((s, p) for s, p in saved if last is None or s < last),
              *([(last, run)] if done else [])]
    rows = []
    for step, ckpt in points:
        epoch = round(step / steps_per_epoch)
        h = heldout_loss(ckpt, test, max_length)
        trained = f"{losses[step]:.3f}" if step in losses else "-"
        wall = report["wall_s"] if done and epoch == epochs else (
            "" if done else f"stopped at epoch {epoch} of {epochs}")
        rows.append(f"{epoch} | {step} | {trained} | {h.loss:.4f} | {h.tokens} | {wall}")
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
