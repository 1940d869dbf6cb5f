"""Staged SFT (paper, "Stages"): ``theta(k+1)`` = SFT of ``theta(k)`` on ``D(k)``.

``train_stage(TrainConfig) -> TrainResult`` runs one stage on TRL's ``SFTTrainer``;
``export_llamafactory`` writes the same stage for LlamaFactory; ``tiny`` builds a random
toy Qwen3 checkpoint for CPU smoke runs. Heavy libraries (torch, transformers, trl) are
imported only when a function runs.
"""

from importlib.resources import files
from pathlib import Path

from llm4cov.train.config import TrainConfig
from llm4cov.train.data import DatasetError, DroppedSample
from llm4cov.train.llamafactory import LlamaFactoryExport, export_llamafactory
from llm4cov.train.result import TrainResult
from llm4cov.train.sft import prepare_stage, train_stage


def configs_dir() -> Path:
    """The shipped launcher and stage configs (``accelerate_ddp.yaml``,
    ``accelerate_zero3.yaml``, ``ds_zero3.json``, ``stage.yaml``)."""
    return Path(str(files("llm4cov.train") / "configs"))


__all__ = [
    "DatasetError",
    "DroppedSample",
    "LlamaFactoryExport",
    "TrainConfig",
    "TrainResult",
    "configs_dir",
    "export_llamafactory",
    "prepare_stage",
    "train_stage",
]
