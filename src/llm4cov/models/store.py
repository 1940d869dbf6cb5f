"""Where fetched models live and how a ``--model`` value becomes a checkpoint path.

Layout: ``<cache root>/models/<name>/`` holds a transformers checkpoint
(``config.json``, ``model.safetensors``, tokenizer) and ``model.json`` (the card:
source, license, conversion). The cache root is the simulator cache's
(``$LLM4COV_CACHE_DIR``, else ``~/.cache/llm4cov``); ``$LLM4COV_MODELS_DIR`` overrides
the models folder alone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from llm4cov.models.registry import REGISTRY

MODELS_ENV = "LLM4COV_MODELS_DIR"
CARD_NAME = "model.json"


class ModelNotFetched(ValueError):
    """A registered model whose checkpoint is not in the models folder yet."""


def models_root() -> Path:
    """The models folder (``$LLM4COV_MODELS_DIR``, else ``<cache root>/models``)."""
    if os.environ.get(MODELS_ENV):
        return Path(os.environ[MODELS_ENV]).expanduser()
    from llm4cov.sim.cache import cache_root
    from llm4cov.sim.config import SimConfig

    return cache_root(SimConfig()) / "models"


def model_dir(name: str) -> Path:
    """The checkpoint folder of model ``name`` (it may not exist yet)."""
    return models_root() / name


def is_fetched(name: str) -> bool:
    """Whether ``name``'s checkpoint and card are complete on disk."""
    folder = model_dir(name)
    return (folder / CARD_NAME).is_file() and (folder / "config.json").is_file()


def read_card(name: str) -> dict[str, Any]:
    """The card (``model.json``) of fetched model ``name``."""
    return json.loads((model_dir(name) / CARD_NAME).read_text(encoding="utf-8"))


def resolve_model(model: str) -> str:
    """The checkpoint path for ``model`` when it is a registered name, else ``model``
    unchanged (a path or a model id).

    Raises:
        ModelNotFetched: a registered name whose checkpoint is missing.
    """
    if model not in REGISTRY:
        return model
    if not is_fetched(model):
        raise ModelNotFetched(f"model {model!r} is not fetched; run `llm4cov model get "
                              f"{model}` first (looked in {model_dir(model)})")
    return str(model_dir(model))
