"""Settings of ``llm4cov pipeline``: one model read from YAML, validated at load.

Defaults are the paper's (``../shared/docs/paper.md``, "Stages"): three stages whose
synthesis and export settings are synth's stage presets 0, 1 and 2
(:func:`llm4cov.synth.stage_preset`, :func:`llm4cov.synth.export_preset`) and whose
training settings are :class:`llm4cov.train.TrainConfig`'s (the paper's SFT recipe).
The ``synth``, ``export`` and ``train`` mappings override those, for every stage at
the top level and for one stage under ``stages[k]``; they are checked against the
target settings when the file is loaded. Unknown keys are errors everywhere.
Relative paths are relative to the current directory, as in every other command.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from llm4cov.bench.config import NOT_IDENTITY, BenchConfig, Mode
from llm4cov.synth.config import (
    STAGES,
    ConfigError,
    ExportConfig,
    SynthConfig,
    export_preset,
    merge,
    read_mapping,
    stage_preset,
    to_mapping,
)
from llm4cov.synth.sources import RepoFormat

TINY = "tiny"
TRAIN_SET_BY_PIPELINE = ("data", "init", "out")
BENCH_SET_BY_PIPELINE = ("tasks", "model", "base_url", "mode", "workers",
                         "compile_timeout_s", "run_timeout_s", "sim_seed", "fsm")


class PipelineConfigError(ValueError):
    """An unusable pipeline config (the message names the key and the valid ones)."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class TinyInit(_Strict):
    """A tiny random Qwen3 as checkpoint 0 (:mod:`llm4cov.train.tiny`), for CPU smoke runs.
    Built once into ``OUT/init``; the defaults are ``llm4cov train-tiny``'s."""

    corpus: str
    """Chat JSONL whose message texts train the BPE tokenizer."""
    vocab_size: int = Field(512, ge=300)
    hidden_size: int = Field(64, ge=16)
    layers: int = Field(2, ge=1)
    seed: int = 0


class Teacher(_Strict):
    """The teacher ``M_teacher``: ``random`` (the built-in baseline), ``local:PATH``, or a
    model name served by an OpenAI-compatible endpoint at ``base_url``."""

    model: str = "random"
    base_url: str | None = None


class Student(_Strict):
    """How checkpoint k is run as the student (synthesis) and as the model under test.

    ``local``: loaded in this process with transformers (``local:PATH``). ``vllm``: served
    by the user at ``base_url`` under ``served_name`` (``{k}`` = checkpoint index; 0 is
    ``init``); the pipeline prints the ``vllm serve`` command and polls ``/models`` until
    that name is listed.
    """

    serve: Literal["local", "vllm"] = "local"
    base_url: str | None = None
    served_name: str = "llm4cov-ckpt{k}"
    wait_s: float = Field(3600.0, ge=0)
    """Seconds to wait for the served checkpoint before stopping (a rerun resumes)."""
    poll_s: float = Field(10.0, gt=0)
    """Seconds between two polls of ``/models``."""

    @model_validator(mode="after")
    def _check(self) -> Student:
        if self.serve == "vllm" and not self.base_url:
            raise ValueError("student.serve vllm needs student.base_url (e.g. "
                             "http://localhost:8000/v1)")
        if "{k}" not in self.served_name:
            raise ValueError("student.served_name must contain {k} (one name per checkpoint)")
        return self


class StageSpec(_Strict):
    """One stage ``k``: the synth/export preset and this stage's overrides."""

    preset: int | None = None
    """Paper stage whose synth and export presets apply (0, 1, 2); None = the stage
    index (the paper's K = 3 stages)."""
    repos: str | None = None
    """Synthesis repos of this stage; None = the top-level ``repos``."""
    limit: int | None = Field(None, ge=1)
    """Only the first N repos in this stage; None = the top-level ``limit``."""
    synth: dict[str, Any] = Field(default_factory=dict)
    export: dict[str, Any] = Field(default_factory=dict)
    train: dict[str, Any] = Field(default_factory=dict)


class BenchSpec(BaseModel):
    """Evaluation of every trained checkpoint with ``llm4cov bench`` on ``tasks``, once
    per mode. Any other key is a :class:`~llm4cov.bench.config.BenchConfig` setting
    (``samples``, ``rounds``, ``baselines``, ``max_tokens``, ...); the model, the
    simulator settings (``sim``) and the mode are set by the pipeline."""

    model_config = ConfigDict(extra="allow", frozen=True, use_attribute_docstrings=True)

    tasks: str
    modes: tuple[Mode, ...] = (Mode.AGENTIC,)
    plots: bool = True
    """Write ``report.html`` with plots (matplotlib) for every bench run."""
    checkpoint0: bool = True
    """Progressive mode: also evaluate checkpoint 0 (``init``, the base row) before stage
    0, into ``OUT/base/bench/<mode>/``."""

    @model_validator(mode="after")
    def _check(self) -> BenchSpec:
        known = {f.name for f in fields(BenchConfig)} - set(BENCH_SET_BY_PIPELINE)
        unknown = sorted(set(self.settings()) - known)
        if unknown:
            raise ValueError(f"unknown bench key(s) {', '.join(unknown)}; valid: tasks, "
                             f"modes, plots, checkpoint0, {', '.join(sorted(known))}")
        if not self.modes:
            raise ValueError("bench.modes must name at least one mode")
        try:
            self.config(Mode.AGENTIC, "check")
        except TypeError as exc:
            raise ValueError(f"bench: a value has the wrong type ({exc})") from exc
        return self

    def settings(self) -> dict[str, Any]:
        """The BenchConfig settings given (the keys beyond tasks, modes, plots,
        checkpoint0)."""
        return dict(self.model_extra or {})

    def config(self, mode: Mode, model: str, base_url: str | None = None,
               sim: SimSpec | None = None) -> BenchConfig:
        """The bench run of ``model`` in ``mode``."""
        values = dict(self.settings())
        for key in ("baselines", "ids"):
            if key in values:
                values[key] = tuple(values[key] or ())
        sim = sim or SimSpec()
        return BenchConfig(tasks=self.tasks, model=model, base_url=base_url, mode=mode,
                           workers=sim.workers, compile_timeout_s=sim.compile_timeout_s,
                           run_timeout_s=sim.run_timeout_s, sim_seed=sim.seed, fsm=sim.fsm,
                           **values)

    def identity(self) -> dict[str, Any]:
        return {"tasks": self.tasks, "modes": [m.value for m in self.modes],
                **{k: v for k, v in self.settings().items() if k not in NOT_IDENTITY}}


class SimSpec(_Strict):
    """Simulator settings of every synthesis and bench step (``SimConfig`` defaults)."""

    workers: int | None = Field(None, ge=1)
    """Parallel simulations; None = CPU count."""
    compile_timeout_s: float = Field(300.0, gt=0)
    run_timeout_s: float = Field(60.0, gt=0)
    seed: int = 1
    """Simulator seed (``+verilator+seed``)."""
    fsm: bool = False


class NaiveSpec(_Strict):
    """Mode ``naive`` (paper Fig. 6 baseline): one SFT from ``init`` on the union of
    stage datasets."""

    datasets: tuple[str, ...] = ()
    """``sft.jsonl`` files or export directories; empty = the stage datasets of the
    progressive run in ``out`` (its export steps must be finished)."""


class PipelineConfig(_Strict):
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
    repos_format: RepoFormat = RepoFormat.AUTO
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
    sim: SimSpec = Field(default_factory=SimSpec)

    @model_validator(mode="after")
    def _check(self) -> PipelineConfig:
        if (self.init == TINY) != (self.tiny is not None):
            raise ValueError("init: tiny goes with a tiny: section (and a tiny: section "
                             "with init: tiny)")
        if not self.stages:
            raise ValueError("stages: give at least one stage")
        for k in range(len(self.stages)):
            self.stage(k)
            self.train_settings(k)
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
                         spec.limit or self.limit)

    def train_settings(self, k: int | None) -> dict[str, Any]:
        """TrainConfig settings of stage ``k`` (None: the top-level ones, used by mode
        naive), without data/init/out.

        Raises:
            ValueError: unknown keys or invalid values.
        """
        values = {**self.train, **(self.stages[k].train if k is not None else {})}
        taken = sorted(set(values) & set(TRAIN_SET_BY_PIPELINE))
        if taken:
            raise ValueError(f"train: remove {', '.join(taken)} (the pipeline sets "
                             f"{', '.join(TRAIN_SET_BY_PIPELINE)})")
        from llm4cov.train.config import TrainConfig

        try:
            checked = TrainConfig.from_mapping(
                {**values, "data": "-", "init": "-", "out": "-"}, source="train").as_dict()
        except TypeError as exc:
            raise ValueError(f"train: a value has the wrong type ({exc}); YAML reads 1e-5 "
                             "as text, write 1.0e-5") from exc
        return {k_: v for k_, v in checked.items() if k_ not in TRAIN_SET_BY_PIPELINE}

    def stage_identity(self, k: int) -> dict[str, Any]:
        """What decides stage ``k``'s results (a finished stage with another identity is
        refused); budgets, concurrency, URLs and workers are left out."""
        plan = self.stage(k)
        return {"preset": plan.preset, "repos": plan.repos, "limit": plan.limit,
                "synth": plan.synth.identity(),
                "export": to_mapping(plan.export), "train": self.train_settings(k)}

    def global_identity(self) -> dict[str, Any]:
        return {
            "init": self.init, "tiny": self.tiny.model_dump() if self.tiny else None,
            "repos_format": self.repos_format.value, "limit": self.limit,
            "benchmarks": list(self.benchmarks), "teacher": self.teacher.model,
            "student": {"serve": self.student.serve, "served_name": self.student.served_name},
            "bench": self.bench.identity() if self.bench else None,
            "sim": self.sim.model_dump(exclude={"workers"}),
        }


@dataclass(frozen=True)
class StagePlan:
    """Stage ``k`` resolved: the paper preset used, its repos (the first ``limit``; None =
    all), synth and export settings."""

    k: int
    preset: int
    repos: str
    synth: SynthConfig
    export: ExportConfig
    limit: int | None = None


def _valid_keys(loc: tuple, model: type[BaseModel] = PipelineConfig) -> list[str]:
    """The keys valid at the parent of ``loc`` (for unknown-key messages)."""
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        inner = field and _model_in(field.annotation)
        if inner is None:
            return []
        model = inner
    return sorted(model.model_fields)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _message(exc: ValidationError, source: str) -> str:
    lines = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown key; valid: {', '.join(_valid_keys(err['loc']))}"
        where = ".".join(str(p) for p in err["loc"])
        lines.append(f"{where}: {msg}" if where else msg)
    return f"{source}: " + "; ".join(lines)


def load_config(path: Path | str | None = None, **overrides: Any) -> PipelineConfig:
    """The config of YAML file ``path`` (optional) with top-level ``overrides`` whose
    value is not None (the CLI flags ``--out``, ``--mode``).

    Raises:
        PipelineConfigError: unreadable YAML, unknown keys or invalid values.
    """
    try:
        values = read_mapping(path) if path is not None else {}
    except ConfigError as exc:
        raise PipelineConfigError(str(exc)) from exc
    source = str(path) if path else "config"
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return PipelineConfig.model_validate(values)
    except ValidationError as exc:
        raise PipelineConfigError(_message(exc, source)) from None


__all__ = ["BenchSpec", "NaiveSpec", "PipelineConfig", "PipelineConfigError", "SimSpec",
           "StagePlan", "StageSpec", "Student", "Teacher", "TinyInit", "load_config"]
