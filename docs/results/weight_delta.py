"""How far one SFT stage moved the weights, and a same-size random control.

Usage:
  python docs/results/weight_delta.py stats BEFORE AFTER LR
  python docs/results/weight_delta.py sign-control BEFORE AFTER OUT [SEED]

BEFORE and AFTER are checkpoint folders (``model.safetensors``, one shard); LR is the
stage's peak learning rate. ``stats`` prints the fraction of weights left unchanged, the
fraction whose change |after - before| lies within 0.5-1.5 x LR, quantiles of
|after - before| / LR (10,000 weights sampled per tensor) and the relative size
||after - before|| / ||before|| (Frobenius norm over every tensor). Adam's first step
from fresh moments is m/sqrt(v) = g/|g| (Kingma & Ba 2015, bias-corrected, eps
negligible): every weight with a gradient moves by exactly the learning rate, which
``stats`` shows as quantiles of 1.0.

``sign-control`` writes OUT: BEFORE's folder with every weight moved by its own
|after - before| in a random direction (sign drawn per weight, torch generator seeded
with SEED, default 0). It has the stage's exact per-weight step sizes and norm but not
its direction, so benching it separates "a step this large" from "this step".
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file


def _load(folder: Path) -> dict[str, torch.Tensor]:
    """The float32 tensors of ``folder/model.safetensors``."""
    return {k: v.float() for k, v in load_file(folder / "model.safetensors").items()}


def _norm(tensors: dict[str, torch.Tensor]) -> float:
    """Frobenius norm over all tensors together."""
    return sum(float(t.norm() ** 2) for t in tensors.values()) ** 0.5


def _step(before: Path, after: Path) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """BEFORE's tensors and the stage's step ``after - before``, tensor by tensor."""
    a, b = _load(before), _load(after)
    return a, {k: b[k] - a[k] for k in a}


def stats(before: Path, after: Path, lr: float) -> None:
    """Print the step-size statistics described in the module docstring."""
    a, deltas = _step(before, after)
    total = sum(d.numel() for d in deltas.values())
    unchanged = sum(int((d == 0).sum()) for d in deltas.values())
    in_band = sum(int(((d.abs() > 0.5 * lr) & (d.abs() < 1.5 * lr)).sum()) for d in deltas.values())
    g = torch.Generator().manual_seed(0)
    sample = torch.cat([
        d.abs().flatten()[torch.randint(0, d.numel(), (min(d.numel(), 10_000),), generator=g)]
        for d in deltas.values()
    ])
    levels = torch.tensor([0.1, 0.25, 0.5, 0.75, 0.9, 0.99])
    quantiles = [round(float(q) / lr, 3) for q in torch.quantile(sample, levels)]
    print(f"weights: {total:,}; unchanged {unchanged / total:.2%}; "
          f"|delta| within 0.5-1.5 x lr: {in_band / total:.2%}")
    print(f"|delta| / lr at quantiles 10, 25, 50, 75, 90, 99 %: {quantiles}")
    print(f"||delta|| / ||before|| = {_norm(deltas) / _norm(a):.3e}")


def sign_control(before: Path, after: Path, out: Path, seed: int = 0) -> None:
    """Write the random-direction control checkpoint described in the module docstring."""
    a, step = _step(before, after)
    g = torch.Generator().manual_seed(seed)
    moved = {}
    for k in a:
        size = step[k].abs()
        sign = torch.randint(0, 2, size.shape, generator=g).float() * 2 - 1
        moved[k] = (a[k] + sign * size).contiguous()
    skip = shutil.ignore_patterns("checkpoint-*", "train_report.json", "training_args.bin")
    shutil.copytree(before, out, ignore=skip)
    save_file(moved, out / "model.safetensors", metadata={"format": "pt"})
    control = {k: moved[k] - a[k] for k in a}
    print(f"wrote {out}: ||delta|| = {_norm(control):.6f} "
          f"(the stage's: {_norm(step):.6f})")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "stats":
        stats(Path(sys.argv[2]), Path(sys.argv[3]), float(sys.argv[4]))
    elif len(sys.argv) in (5, 6) and sys.argv[1] == "sign-control":
        before, after, out = (Path(arg) for arg in sys.argv[2:5])
        sign_control(before, after, out, *map(int, sys.argv[5:]))
    else:
        sys.exit(__doc__)
