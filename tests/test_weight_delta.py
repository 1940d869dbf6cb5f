"""docs/results/weight_delta.py: Adam's first step is a sign step, and the random-sign
control keeps every weight's step size (results, "v6 stage 2, agentic, and what broke it")."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
from safetensors.torch import load_file, save_file  # noqa: E402

pytestmark = pytest.mark.requires_train

SCRIPT = Path(__file__).resolve().parents[1] / "docs" / "results" / "weight_delta.py"
spec = importlib.util.spec_from_file_location("weight_delta", SCRIPT)
weight_delta = importlib.util.module_from_spec(spec)
spec.loader.exec_module(weight_delta)


def _checkpoint(folder: Path, tensors: dict) -> Path:
    folder.mkdir()
    save_file({k: v.detach().contiguous() for k, v in tensors.items()},
              folder / "model.safetensors")
    return folder


def test_adams_first_step_moves_every_weight_by_the_learning_rate(tmp_path, capsys):
    torch.manual_seed(0)
    weight = torch.nn.Parameter(torch.randn(64, 32))
    before = _checkpoint(tmp_path / "before", {"w": weight})
    # gradients spanning six orders of magnitude: Adam's first step ignores their size
    weight.grad = torch.randn(64, 32) * torch.logspace(-4, 1, 32)
    torch.optim.AdamW([weight], lr=1e-3, weight_decay=0.0).step()
    after = _checkpoint(tmp_path / "after", {"w": weight})

    weight_delta.stats(before, after, 1e-3)
    out = capsys.readouterr().out
    assert "weights: 2,048; unchanged 0.00%; |delta| within 0.5-1.5 x lr: 100.00%" in out
    assert "[1.0, 1.0, 1.0, 1.0, 1.0, 1.0]" in out  # every quantile of |delta| / lr

    weight_delta.sign_control(before, after, tmp_path / "control", seed=3)
    a, b = load_file(before / "model.safetensors"), load_file(after / "model.safetensors")
    c = load_file(tmp_path / "control" / "model.safetensors")
    step, control = b["w"] - a["w"], c["w"] - a["w"]
    assert torch.allclose(control.abs(), step.abs(), rtol=0, atol=1e-6)  # size per weight
    flipped = float((torch.sign(control) != torch.sign(step)).float().mean())
    assert 0.4 < flipped < 0.6  # random directions: about half the signs differ
