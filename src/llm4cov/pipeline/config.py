"""Settings of ``llm4cov pipeline``: one model read from YAML, validated at load.

Defaults are the paper's (``../shared/docs/paper.md``, "Stages"): three stages whose
synthesis and export settings are synth's stage presets 0, 1 and 2
(:func:`llm4cov.synth.stage_preset`, :func:`llm4cov.synth.export_preset`) and whose
training settings are :class:`llm4cov.train.TrainConfig`'s (the paper's SFT recipe).
The ``synth``, ``export`` and ``train`` mappings override those, for every stage at
the top level and for one stage under ``stages[k]``; they are checked against the
target settings when the file is loaded. Unknown keys and wrong types are errors
everywhere (:mod:`llm4cov.util.settings`, the one config layer). ``sim`` is the
simulator settings of every synth and bench step (executor, address, workers, ...);
``policies`` the options of the teacher's, the student's and the bench arms' policies
(by registered policy name, :mod:`llm4cov.policies.registry`).
Relative paths are relative to the current directory, as in every other command.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Self

from pydantic import Field, field_validator, model_validator

from llm4cov.bench.config import NOT_IDENTITY, BenchConfig, BenchSettings, Mode
from llm4cov.exec.settings import SimSettings
from llm4cov.policies.options import Dtype
from llm4cov.policies.registry import PolicyOptionsMap
from llm4cov.synth.config import (
    STAGES,
    ExportConfig,
    SynthConfig,
    export_preset,
    stage_preset,
)
from llm4cov.tasks.sources import AUTO, check_format
from llm4cov.train.config import REQUIRED as TRAIN_SET_BY_PIPELINE
from llm4cov.train.config import deciding
from llm4cov.util.settings import (
    ConfigError,
    Settings,
    load,
    merge,
    to_mapping,
)

TINY = "tiny"


class PipelineConfigError(ConfigError):
    """An unusable pipeline config (the message names the key and the valid ones)."""


class TinyInit(Settings):
    """A tiny random Qwen3 as checkpoint 0 (:mod:`llm4cov.train.tiny`), for CPU smoke runs.
    Built once into ``OUT/init``; the defaults are ``llm4cov train-tiny``'s."""

    corpus: str
    """Chat JSONL whose message texts train the BPE tokenizer."""
    vocab_size: int = Field(512, ge=300)
    hidden_size: int = Field(64, ge=16)
    layers: int = Field(2, ge=1)
    seed: int = 0


class Teacher(Settings):
    """The teacher ``M_teacher``: ``random`` (the built-in baseline), ``local:PATH``, or a
    model name served by an OpenAI-compatible endpoint at ``base_url``."""

    model: str = "random"
    base_url: str | None = None


class Student(Settings):
    """How checkpoint k is run as the student (synthesis) and as the model under test.

    ``local``: loaded in this process with transformers (``local:PATH``). ``vllm``: served
    by the user at ``base_url`` under ``served_name`` (``{k}`` = checkpoint index; 0 is
    ``init``); the pipeline prints the ``vllm serve`` command and polls ``/models`` until
    that name is listed.
    """

    serve: Literal["local", "vllm"] = "local"
    dtype: Dtype = "auto"
    """Weights of a ``local`` student in synthesis (the ``local`` policy's ``dtype``,
    :class:`~llm4cov.policies.options.LocalOptions`, for the student only; give it here
    or as ``policies.local.dtype``, not both): auto = bf16 on a GPU that has it, else
    fp32; int8 = dynamic int8 quantization on the CPU (about 2x faster generation)."""
    base_url: str | None = None
    served_name: str = "llm4cov-ckpt{k}"
    wait_s: float = Field(3600.0, ge=0)
    """Seconds to wait for the served checkpoint before stopping (a rerun resumes)."""
    poll_s: float = Field(10.0, gt=0)
    """Seconds between two polls of ``/models``."""

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.serve == "vllm" and not self.base_url:
            raise ValueError("student.serve vllm needs student.base_url (e.g. "
                             "http://localhost:8000/v1)")
        if "{k}" not in self.served_name:
            raise ValueError("student.served_name must contain {k} (one name per checkpoint)")
        return self


class StageSpec(Settings):
    """One stage ``k``: the synth/export preset and this stage's overrides."""

    preset: int | None = None
    """Paper stage whose synth and export presets apply (0, 1, 2); None = the stage
    index (the paper's K = 3 stages)."""
    repos: str | None = None
    """Synthesis repos of this stage; None = the top-level ``repos``."""
    limit: int | None = Field(None, ge=1)
    """Only the first N repos in this stage (after ``skip``); None = the top-level
    ``limit``."""
    skip: int = Field(0, ge=0)
    """Leave out the first N repos (file order, before the contamination filter): with
    the same ``repos``, stage 0 ``limit: 80`` and stage 1 ``skip: 80`` read disjoint
    designs, so the student's stage-1 states come from designs it has not trained on."""
    synth: dict[str, Any] = Field(default_factory=dict)
    export: dict[str, Any] = Field(default_factory=dict)
    train: dict[str, Any] = Field(default_factory=dict)


class BenchSpec(BenchSettings):
    """Evaluation of every trained checkpoint with ``llm4cov bench`` on ``tasks``, once
    per mode, with the bench protocol settings (:class:`~llm4cov.bench.config.
    BenchSettings`: ``samples``, ``rounds``, ``baselines``, ``max_tokens``, ...); the
    model, the mode and the simulator settings (the pipeline's ``sim``) are set by the
    pipeline."""

    tasks: str
    """Task JSONL of the benchmark."""
    modes: tuple[Mode, ...] = (Mode.AGENTIC,)
    """Bench modes, each its own run: agentic, direct."""
    plots: bool = True
    """Write ``report.html`` with plots (matplotlib) for every bench run."""
    checkpoint0: bool = True
    """Progressive mode: also evaluate checkpoint 0 (``init``, the base row) before stage
    0, into ``OUT/base/bench/<mode>/``."""
    checkpoints: tuple[int, ...] | None = None
    """Progressive mode: the trained checkpoints to evaluate (k + 1 is stage k's; 1 ..
    K); None = every one. Not part of the run's identity: a rerun that adds a checkpoint
    evaluates it, a finished stage's too, so a slow machine can evaluate only the last
    checkpoint first and the others later."""

    @model_validator(mode="after")
    def _valid_modes(self) -> Self:
        if not self.modes:
            raise ValueError("bench.modes must name at least one mode")
        return self

    def config(self, mode: Mode, model: str, base_url: str | None = None,
               sim: SimSettings | None = None,
               policies: dict[str, dict[str, Any]] | None = None) -> BenchConfig:
        """The bench run of ``model`` in ``mode`` on the simulator settings ``sim``, with
        the policy options ``policies`` (a ``policies:`` section)."""
        protocol = {name: getattr(self, name) for name in BenchSettings.model_fields}
        return BenchConfig(tasks=self.tasks, model=model, base_url=base_url, mode=mode,
                           sim=sim or SimSettings(), policies=policies or {}, **protocol)

    def identity(self) -> dict[str, Any]:
        """The tasks, the modes and the protocol settings given in the file that decide
        results."""
        given = (self.model_fields_set & set(BenchSettings.model_fields)) - set(NOT_IDENTITY)
        settings = to_mapping(self)
        return {"tasks": self.tasks, "modes": settings["modes"],
                **{k: v for k, v in settings.items() if k in given}}


class NaiveSpec(Settings):
    """Mode ``naive`` (paper Fig. 6 baseline): one SFT from ``init`` on the union of
    stage datasets."""

    datasets: tuple[str, ...] = ()
    """``sft.jsonl`` files or export directories; empty = the stage datasets of the
    progressive run in ``out`` (its export steps must be finished)."""


class PipelineConfig(Settings):
    """``llm4cov pipeline --config stages.yaml``: K stages of synthesize -> export ->
    train -> evaluate, or mode ``naive``."""

    out: str
    """Pipeline run directory (a rerun resumes it)."""
    init: str
    """Checkpoint 0: a model id or checkpoint directory, or ``tiny`` (needs ``tiny:``)."""
    repos: str
    """Synthesis repos (task/CVDP/CodeV-R1 JSONL or a directory of repo directories)."""
    bench: BenchSpec | None
    """Evaluation settings; null = do not evaluate."""
    mode: Literal["progressive", "naive"] = "progressive"
    tiny: TinyInit | None = None
    repos_format: str = AUTO
    """Format of ``repos``: auto or a format of llm4cov.tasks.sources (tasks, cvdp_raw,
    cvdp_ecov, codev, dirs, ...)."""
    limit: int | None = Field(None, ge=1)
    """Only the first N repos of every stage."""
    benchmarks: tuple[str, ...] = ()
    """Benchmark task files for synth's contamination filter."""
    teacher: Teacher = Field(default_factory=Teacher)
    student: Student = Field(default_factory=Student)
    stages: tuple[StageSpec, ...] = (StageSpec(), StageSpec(), StageSpec())
    """K stages (paper: 3)."""
    synth: dict[str, Any] = Field(default_factory=dict)
    export: dict[str, Any] = Field(default_factory=dict)
    train: dict[str, Any] = Field(default_factory=dict)
    train_launcher: tuple[str, ...] = ()
    """Empty: train in this process. Else the command that runs
    ``-m llm4cov.train --config STAGE.yaml`` (e.g. ``[accelerate, launch, --config_file,
    "{train_configs}/accelerate_zero3.yaml", --num_processes, "8"]``); ``{train_configs}``
    is the folder of the shipped configs."""
    naive: NaiveSpec = Field(default_factory=NaiveSpec)
    sim: SimSettings = Field(default_factory=SimSettings)
    """Simulator settings of every synth and bench step (executor, address, workers,
    timeouts, seed, fsm, cache, sandbox)."""
    policies: PolicyOptionsMap = Field(default_factory=dict)

    @field_validator("repos_format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        return check_format(value)

    def trust_notes(self, env: Mapping[str, str]) -> list[str]:
        """What this file makes the run do beyond llm4cov's own code and containment, in
        words (a pipeline file is code: a shared one is read before it is run): a
        training command it runs, simulation without the OS sandbox, the environment's
        API key sent to a server it names (``env``: the environment)."""
        notes = []
        if self.train_launcher:
            notes.append(f"every SFT stage runs the command `{' '.join(self.train_launcher)}`"
                         " (train_launcher)")
        if not self.sim.sandbox:
            notes.append("testbenches are simulated without the OS sandbox (sim.sandbox: "
                         "false): for trusted testbenches only")
        key = next((k for k in ("LLM4COV_API_KEY", "OPENAI_API_KEY") if env.get(k)), None)
        for role, url in (("teacher", self.teacher.base_url), ("student", self.student.base_url)):
            if url and key:
                notes.append(f"${key} is sent to {url} ({role}.base_url)")
        return notes

    @model_validator(mode="after")
    def _check(self) -> Self:
        if (self.init == TINY) != (self.tiny is not None):
            raise ValueError("init: tiny goes with a tiny: section (and a tiny: section "
                             "with init: tiny)")
        if not self.stages:
            raise ValueError("stages: give at least one stage")
        if "dtype" in self.student.model_fields_set and "dtype" in self.policies.get("local", {}):
            raise ValueError("give the student's dtype once: student.dtype or "
                             "policies.local.dtype")
        for k in range(len(self.stages)):
            self.stage(k)
            self.train_settings(k)
        wrong = sorted(set(self.bench.checkpoints or ()) - set(range(1, len(self.stages) + 1))
                       ) if self.bench else []
        if wrong:
            raise ValueError(f"bench.checkpoints: {', '.join(map(str, wrong))} not trained "
                             f"here; valid: 1 .. {len(self.stages)} (checkpoint k + 1 is "
                             "stage k's; bench.checkpoint0 evaluates checkpoint 0)")
        return self

    def stage(self, k: int) -> StagePlan:
        """The resolved synthesis and export settings of stage ``k``.

        Raises:
            ConfigError: an override names an unknown key or an invalid value.
        """
        spec = self.stages[k]
        preset = k if spec.preset is None else spec.preset
        where = f"stages[{k}]"
        if preset not in STAGES:
            raise ConfigError(f"{where}: preset {preset} is not a paper stage; valid: "
                              f"{', '.join(map(str, STAGES))} (give stages[{k}].preset)")
        synth = merge(merge(stage_preset(preset), self.synth, "synth"), spec.synth,
                      f"{where}.synth")
        export = merge(merge(export_preset(preset), self.export, "export"), spec.export,
                       f"{where}.export")
        return StagePlan(k, preset, spec.repos or self.repos, synth, export,
                         spec.limit or self.limit, spec.skip)

    def train_settings(self, k: int | None) -> dict[str, Any]:
        """TrainConfig settings of stage ``k`` (None: the top-level ones, used by mode
        naive), without data/init/out.

        Raises:
            ConfigError: unknown keys, wrong types or invalid values (named).
        """
        values = {**self.train, **(self.stages[k].train if k is not None else {})}
        taken = sorted(set(values) & set(TRAIN_SET_BY_PIPELINE))
        if taken:
            raise ValueError(f"train: remove {', '.join(taken)} (the pipeline sets "
                             f"{', '.join(TRAIN_SET_BY_PIPELINE)})")
        from llm4cov.train.config import TrainConfig

        where = f"stages[{k}].train" if k is not None else "train"
        checked = TrainConfig.from_mapping(
            {**values, **dict.fromkeys(TRAIN_SET_BY_PIPELINE, "-")}, source=where).as_dict()
        return {k_: v for k_, v in checked.items() if k_ not in TRAIN_SET_BY_PIPELINE}

    def stage_identity(self, k: int) -> dict[str, Any]:
        """What decides stage ``k``'s results (a finished stage with another identity is
        refused); budgets, concurrency, URLs and workers are left out, and so are the
        train settings that change no weight (``NOT_DECIDING``: saves), so a run can be
        made resumable after it started."""
        plan = self.stage(k)
        return {"preset": plan.preset, "repos": plan.repos, "limit": plan.limit,
                **({"skip": plan.skip} if plan.skip else {}),
                "synth": plan.synth.identity(),
                "export": to_mapping(plan.export),
                "train": deciding(self.train_settings(k))}

    def student_policies(self) -> dict[str, dict[str, Any]]:
        """The ``policies`` of a ``local`` student: ``student.dtype``, when given, as
        the ``local`` policy's ``dtype``."""
        if "dtype" not in self.student.model_fields_set:
            return self.policies
        local = {**self.policies.get("local", {}), "dtype": self.student.dtype}
        return {**self.policies, "local": local}

    def global_identity(self) -> dict[str, Any]:
        """What decides every stage's results: checkpoint 0, the repos' format and
        limit, the benchmarks, the roles, the bench, the simulator and (when any option
        is given) the policies' options."""
        return {
            "init": self.init, "tiny": self.tiny.model_dump() if self.tiny else None,
            "repos_format": self.repos_format, "limit": self.limit,
            "benchmarks": list(self.benchmarks), "teacher": self.teacher.model,
            "student": {"serve": self.student.serve, "served_name": self.student.served_name,
                        **({"dtype": self.student.dtype} if self.student.dtype != "auto"
                           else {})},
            "bench": self.bench.identity() if self.bench else None,
            "sim": self.sim.identity(),
            **({"policies": self.policies} if self.policies else {}),
        }


@dataclass(frozen=True)
class StagePlan:
    """Stage ``k`` resolved: the paper preset used, its repos (``limit`` of them after the
    first ``skip``; limit None = all), synth and export settings."""

    k: int
    preset: int
    repos: str
    synth: SynthConfig
    export: ExportConfig
    limit: int | None = None
    skip: int = 0


def load_config(path: Path | str | None = None, overrides: Iterable[str] = (),
                **values: Any) -> PipelineConfig:
    """The config of YAML file ``path`` (optional), then ``key.sub=value`` overrides,
    then ``values`` whose value is not None (the CLI flags ``--out``, ``--mode``, nested
    ones such as ``sim={"executor": "ray"}``; mappings merge key by key).

    Raises:
        PipelineConfigError: unreadable YAML, unknown keys or invalid values.
    """
    try:
        return load(PipelineConfig, path, overrides,
                    {k: v for k, v in values.items() if v is not None})
    except ConfigError as exc:
        raise PipelineConfigError(str(exc)) from None


__all__ = ["BenchSpec", "NaiveSpec", "PipelineConfig", "PipelineConfigError", "StagePlan",
           "StageSpec", "Student", "Teacher", "TinyInit", "load_config"]
