"""The steps of one stage, each a thin call into the package that owns it and each
resumable there: ``synth`` (:class:`~llm4cov.synth.SynthRun`), ``export``
(:func:`~llm4cov.synth.export_dataset`), ``train`` (:func:`~llm4cov.train.train_stage`,
or a launcher such as ``accelerate launch``) and ``bench`` (:func:`llm4cov.bench.session.run`).

:class:`Session` holds what one invocation shares: the config, the run directory, the
simulator executor, the teacher policy, and what the invocation did (steps run,
checkpoints trained, simulator calls).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from llm4cov.bench.config import Mode
from llm4cov.exec.base import SimExecutor
from llm4cov.pipeline.config import PipelineConfig, StagePlan
from llm4cov.pipeline.records import PipelineDir
from llm4cov.pipeline.serving import ModelRef, wait_until_served
from llm4cov.policies import Policy, make_policy
from llm4cov.util.jsonl import iter_jsonl

StepFn = Callable[[], dict[str, Any] | None]


class PipelineError(RuntimeError):
    """A step cannot go on (an empty dataset, a failed training launch)."""


@dataclass
class Session:
    """One invocation of the pipeline on one run directory."""

    config: PipelineConfig
    run: PipelineDir
    on_event: Callable[[str], None] = lambda _: None
    command: str = ""
    steps_run: list[str] = field(default_factory=list)
    trained: list[str] = field(default_factory=list)
    sim_calls: int = 0
    _executor: SimExecutor | None = field(default=None, init=False, repr=False)
    _teacher: Policy | None = field(default=None, init=False, repr=False)

    def step(self, name: str, step: str, fn: StepFn) -> dict[str, Any] | None:
        """The finished row of ``(name, step)``, or run ``fn`` and record its result with
        ``wall_s``; None (nothing recorded) when ``fn`` stopped early (a budget)."""
        done = self.run.step(name, step)
        if done is not None:
            return done
        self.on_event(f"{name}: {step}")
        started = time.monotonic()
        payload = fn()
        if payload is None:
            return None
        self.steps_run.append(f"{name}/{step}")
        return self.run.record_step({"name": name, "step": step, **payload,
                                     "wall_s": round(time.monotonic() - started, 1)})

    def executor(self) -> SimExecutor:
        """The simulators of this invocation's synth steps (started on first use): the
        executor, address, workers and evaluator settings of the config's ``sim``.

        Raises:
            ExecutorError: the executor cannot be set up (Ray missing, no cluster).
        """
        if self._executor is None:
            self._executor = self.config.sim.open_executor()
        return self._executor

    def teacher(self) -> Policy:
        """The teacher's policy (made once), with its options from ``policies``."""
        if self._teacher is None:
            teacher = self.config.teacher
            self._teacher = make_policy(teacher.model, teacher.base_url, self.config.policies)
        return self._teacher

    def ensure_served(self, ref: ModelRef) -> None:
        """Wait for a served checkpoint (``student.wait_s``, ``student.poll_s``)."""
        if ref.served:
            student = self.config.student
            wait_until_served(ref, student.wait_s, student.poll_s, self.on_event)

    def student(self, ref: ModelRef) -> Policy:
        """The policy of checkpoint ``ref`` with its options from ``policies`` (a local
        one's ``dtype`` from ``student.dtype`` when given); a served one is waited for
        first."""
        self.ensure_served(ref)
        if ref.served:
            return make_policy(ref.name, ref.base_url, self.config.policies)
        return make_policy(ref.name, None, self.config.student_policies())

    def close(self) -> None:
        if self._executor is not None:
            self._executor.close()


def synth_step(session: Session, plan: StagePlan, student: ModelRef, run_dir: Path
               ) -> dict[str, Any] | None:
    """Synthesize ``D(k)`` into ``run_dir`` (resumes it); None when a synth budget stopped
    it. Counts: repos by status, points by kind and verdict, simulator calls, tokens."""
    from llm4cov.synth import run_summary
    from llm4cov.synth.launch import RepoSource, role_policies, synth_run

    makers = {"teacher": session.teacher, "student": lambda: session.student(student)}
    policies = role_policies(plan.synth.trace_type, makers)
    executor = session.executor()
    run = synth_run(run_dir, plan.synth, policies, executor.simulate,
                    session.config.benchmarks, command=f"{session.command} (stage {plan.k})")
    items = RepoSource(plan.repos, session.config.repos_format, plan.limit,
                       plan.skip).items()
    before = executor.calls
    try:
        outcome = asyncio.run(run.run(items))
    finally:
        session.sim_calls += executor.calls - before
    if outcome.budget_stopped:
        session.on_event(f"stage {plan.k}: synthesis budget reached; rerun with a larger "
                         "budget to continue")
        return None
    return {"run_dir": str(run_dir), "student": student.name,
            "teacher": session.config.teacher.model, **run_summary(run_dir)}


def export_step(session: Session, plan: StagePlan, run_dir: Path, data_dir: Path
                ) -> dict[str, Any]:
    """Export ``D(k)`` as chat JSONL into ``data_dir``.

    Raises:
        PipelineError: no data point survived (nothing to train on).
    """
    from llm4cov.synth import export_dataset
    from llm4cov.synth.export import SFT_FILE

    result = export_dataset(run_dir, data_dir, plan.export,
                            f"{session.command} (stage {plan.k} export)")
    path = result.out_dir / SFT_FILE
    if result.samples == 0:
        raise PipelineError(f"stage {plan.k}: D({plan.k}) is empty, no data point survived "
                            f"rejection (see {data_dir / 'README.md'})")
    return {"path": str(path), "samples": result.samples, "curation": result.curation}


def _launch(launcher: tuple[str, ...], config, yaml_path: Path) -> None:
    from llm4cov.train import configs_dir

    yaml_path.write_text(yaml.safe_dump(config.as_dict(), sort_keys=False), encoding="utf-8")
    words = [w.replace("{train_configs}", str(configs_dir())) for w in launcher]
    code = subprocess.run([*words, "-m", "llm4cov.train", "--config", str(yaml_path)],
                          check=False).returncode
    if code != 0:
        raise PipelineError(f"training launcher exited with code {code}: "
                            f"{' '.join(words)} -m llm4cov.train --config {yaml_path}")


def train_step(session: Session, data: str, init: str, out: Path,
               settings: dict[str, Any]) -> dict[str, Any]:
    """Train ``out`` from ``init`` on ``data`` (a finished ``out`` with the same config is
    reused by ``train_stage``, an interrupted one resumes from its checkpoints)."""
    from llm4cov.train import TrainConfig, TrainResult, train_stage
    from llm4cov.train.result import REPORT_NAME

    config = TrainConfig(data=Path(data), init=init, out=out, **settings)
    fresh = not (out / REPORT_NAME).is_file()
    launcher = session.config.train_launcher
    if launcher and fresh:
        _launch(launcher, config, out.parent / f"{out.name}.train.yaml")
        result = TrainResult.load(out)
    else:
        result = train_stage(config)
    if fresh:
        session.trained.append(str(out))
    losses = [r.loss for r in result.losses]
    return {
        "checkpoint": result.checkpoint, "init": init, "data": data,
        "samples_total": result.samples_total, "samples_kept": result.samples_kept,
        "dropped": [{"line": d.line, "tokens": d.tokens, "reason": d.reason}
                    for d in result.dropped],
        "tokens": result.tokens, "loss_tokens": result.loss_tokens, "steps": result.steps,
        "train_loss": result.train_loss, "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None, "devices": result.devices,
        "init_fingerprint": result.init_fingerprint,
        "final_fingerprint": result.final_fingerprint, "train_wall_s": result.wall_s,
        "warnings": result.warnings,
    }


def _simulated_rows(results: Path) -> int:
    from llm4cov.bench.rows import simulated

    return sum(simulated(r) for r in iter_jsonl(results))


def bench_step(session: Session, model: ModelRef, mode: Mode, run_dir: Path
               ) -> dict[str, Any] | None:
    """Evaluate ``model`` with ``llm4cov bench`` in ``run_dir`` (resumes it); None when a
    bench budget left it incomplete. Headline metrics are percent (0-100)."""
    from llm4cov.bench.session import RESULTS_FILE, run, select_tasks

    spec = session.config.bench
    assert spec is not None  # a bench step runs only with a bench: section
    session.ensure_served(model)
    config = spec.config(mode, model.name, model.base_url, session.config.sim,
                         session.config.policies)
    before = _simulated_rows(run_dir / RESULTS_FILE)
    try:
        summary = run(config, select_tasks(config), run_dir, plots=spec.plots)
    finally:
        session.sim_calls += _simulated_rows(run_dir / RESULTS_FILE) - before
    if not summary["complete"]:
        session.on_event(f"{run_dir}: bench incomplete (a bench budget); rerun to continue")
        return None
    arms = summary["arms"]
    return {"run_dir": str(run_dir), "model": model.name, "mode": mode.value,
            "headline": arms[model.name]["headline"],
            "baselines": {n: a["headline"] for n, a in arms.items() if n != model.name}}
