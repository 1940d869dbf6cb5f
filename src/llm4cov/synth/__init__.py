"""Offline agentic data synthesis (paper, "Learning offline" and "Stages").

- :mod:`~llm4cov.synth.config`: settings per command with the paper's defaults per stage.
- :mod:`~llm4cov.synth.sources`: training repos from any task source
  (:mod:`llm4cov.tasks.sources`: task/CVDP/CodeV-R1 JSONL or directories).
- :mod:`~llm4cov.synth.contamination`: the ROUGE-L filter against benchmark repos.
- :mod:`~llm4cov.synth.selection`, :mod:`~llm4cov.synth.rejection`: the pure rules.
- :mod:`~llm4cov.synth.engine`: :class:`SynthRun`, the resumable run over repos.
- :mod:`~llm4cov.synth.curation`, :mod:`~llm4cov.synth.export`, :mod:`~llm4cov.synth.card`:
  Stage-0 rebalancing, the SFT chat JSONL and its dataset card.
"""

from llm4cov.synth.config import (
    ConfigError,
    ExportConfig,
    RebalanceConfig,
    RejectionConfig,
    SelectionConfig,
    SynthConfig,
    TraceType,
    export_preset,
    resolve,
    stage_preset,
)
from llm4cov.synth.contamination import ContaminationIndex, rouge_l, rouge_tokens
from llm4cov.synth.engine import RunDirError, SynthRun, run_summary
from llm4cov.synth.export import export_dataset
from llm4cov.synth.records import DataPoint, PointKind, RepoRow, Role, SampleRow, Verdict
from llm4cov.synth.rejection import judge_transitions
from llm4cov.synth.selection import select_states
from llm4cov.synth.sources import RepoItem, iter_repos

__all__ = [
    "ConfigError", "ContaminationIndex", "DataPoint", "ExportConfig", "PointKind",
    "RebalanceConfig", "RejectionConfig", "RepoItem", "RepoRow", "Role",
    "RunDirError", "SampleRow", "SelectionConfig", "SynthConfig", "SynthRun", "TraceType",
    "Verdict", "export_dataset", "export_preset", "iter_repos", "judge_transitions",
    "resolve", "rouge_l", "rouge_tokens", "run_summary", "select_states", "stage_preset",
]
