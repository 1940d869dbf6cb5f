"""Models as inputs: a registry of fetchable models, the local store of converted
checkpoints, and name resolution for every ``--model``/``--init`` option."""

from llm4cov.models.registry import REGISTRY, ModelSpec, spec_for
from llm4cov.models.store import (
    ModelNotFetched,
    is_fetched,
    model_dir,
    models_root,
    read_card,
    resolve_model,
)

__all__ = ["REGISTRY", "ModelNotFetched", "ModelSpec", "is_fetched", "model_dir",
           "models_root", "read_card", "resolve_model", "spec_for"]
