"""The stage loop of verification-conditioned progressive learning (paper, "Stages").

``run_pipeline(load_config("stages.yaml"))`` runs K stages of synthesize ``D(k)`` with
checkpoint k -> export -> train checkpoint k+1 from checkpoint k -> evaluate it, or, in
mode ``naive``, one SFT on the union of the stage datasets (the Fig. 6 baseline).

- :mod:`~llm4cov.pipeline.config`: :class:`PipelineConfig` (YAML, validated at load).
- :mod:`~llm4cov.pipeline.serving`: checkpoints as ``local:`` policies or served by vLLM.
- :mod:`~llm4cov.pipeline.records`: ``run.json``, ``steps.jsonl``, ``stages.jsonl``.
- :mod:`~llm4cov.pipeline.steps`, :mod:`~llm4cov.pipeline.runner`: the steps and the loop.
"""

from llm4cov.pipeline.config import PipelineConfig, PipelineConfigError, load_config
from llm4cov.pipeline.records import PipelineDirError
from llm4cov.pipeline.runner import PipelineResult, PipelineStatus, naive_datasets, run_pipeline
from llm4cov.pipeline.serving import ServerNotReady, wait_until_served
from llm4cov.pipeline.steps import PipelineError

__all__ = [
    "PipelineConfig", "PipelineConfigError", "PipelineDirError", "PipelineError",
    "PipelineResult", "PipelineStatus", "ServerNotReady", "load_config", "naive_datasets",
    "run_pipeline", "wait_until_served",
]
