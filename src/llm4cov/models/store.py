"""Where fetched models live and how a ``--model`` value becomes a checkpoint path.

Layout: ``<cache root>/models/<name>/`` holds a transformers checkpoint
(``config.json``, ``model.safetensors``, tokenizer) and ``model.json`` (the card:
source, license, conversion). The cache root is the simulator cache's
(``$LLM4COV_CACHE_DIR``, else ``~/.cache/llm4cov``); ``$LLM4COV_MODELS_DIR`` overrides
the models folder alone.
"""

from __future__ import annotations

from llm4cov.models.registry import REGISTRY
from llm4cov.util.fetched import FetchedStore

MODELS_ENV = "LLM4COV_MODELS_DIR"
CARD_NAME = "model.json"
STORE = FetchedStore(MODELS_ENV, "models", CARD_NAME, required=("config.json",))
"""The models folder (``$LLM4COV_MODELS_DIR``, else ``<cache root>/models``):
``<name>/`` is complete with its card and ``config.json``."""


class ModelNotFetched(ValueError):
    """A registered model whose checkpoint is not in the models folder yet."""


# the models folder, the checkpoint folder of a model (it may not exist yet), whether
# its checkpoint and card are complete on disk, its card
models_root, model_dir, is_fetched, read_card = (STORE.root, STORE.dir, STORE.is_fetched,
                                                 STORE.read_card)


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
