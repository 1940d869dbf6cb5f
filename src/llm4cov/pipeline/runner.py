"""The stage loop (paper, "Stages") and the naive-augmentation baseline (Fig. 6).

Progressive, for k = 0 .. K-1 (``OUT/stage<k>/``): synthesize ``D(k)`` with checkpoint
k as the student (``synth/``), export it (``data/sft.jsonl``), train checkpoint k+1
from checkpoint k (``checkpoint/``), evaluate checkpoint k+1 (``bench/<mode>/``; only
the checkpoints in ``bench.checkpoints`` when it is set).
Checkpoint 0 is ``init`` (``OUT/init`` when ``init: tiny``); with ``bench.checkpoint0``
it is evaluated first (``OUT/base/bench/<mode>/``, the base row).

Naive (``OUT/naive/``): the union of the stage datasets (``union.jsonl``), one SFT from
checkpoint 0 (``checkpoint/``), evaluated like the stages (``bench/<mode>/``).

A rerun resumes: finished steps are skipped (from ``steps.jsonl``), an interrupted one
resumes in its own run directory.
"""

from __future__ import annotations

import functools
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from llm4cov.pipeline.config import TINY, PipelineConfig
from llm4cov.pipeline.records import PipelineDir
from llm4cov.pipeline.serving import ModelRef, student_ref
from llm4cov.pipeline.steps import (
    PipelineError,
    Session,
    StepFn,
    bench_step,
    export_step,
    synth_step,
    train_step,
)
from llm4cov.util.files import write_text_atomic
from llm4cov.util.jsonl import iter_jsonl
from llm4cov.util.rundir import exclusive

NAIVE = "naive"
BASE = "base"


class PipelineStatus(StrEnum):
    """How an invocation ended (its ``status`` in ``run.json``)."""

    FINISHED = "finished"
    """Every stage done."""
    STOPPED = "stopped"
    """A synth or bench budget stopped it; a rerun continues."""
    ERROR = "error"
    """An exception ended it (recorded, then raised)."""


@dataclass(frozen=True)
class PipelineResult:
    """What an invocation left: ``status`` is :attr:`PipelineStatus.FINISHED` or
    :attr:`PipelineStatus.STOPPED`; ``stages`` the finished stage rows; ``invocation``
    this invocation's record in ``run.json``."""

    out: Path
    status: PipelineStatus
    stages: list[dict[str, Any]]
    invocation: dict[str, Any]


def init_checkpoint(config: PipelineConfig,
                    on_event: Callable[[str], None] = lambda _: None) -> str:
    """Checkpoint 0: ``config.init``, or ``OUT/init`` built once from ``config.tiny``."""
    path = Path(_init_path(config))
    if config.init == TINY and not (path / "config.json").is_file():
        from llm4cov.train.tiny import build_tiny_checkpoint, texts_of

        tiny = config.tiny
        assert tiny is not None  # init: tiny goes with a tiny: section (validated)
        on_event(f"building the tiny random Qwen3 checkpoint 0 in {path}")
        tmp = path.with_name("init.tmp")
        build_tiny_checkpoint(tmp, texts_of(tiny.corpus), tiny.vocab_size, tiny.hidden_size,
                              tiny.layers, tiny.seed)
        os.replace(tmp, path)
    return str(path)


def checkpoint(config: PipelineConfig, k: int) -> str:
    """Checkpoint ``k``: ``init`` for 0, else stage k-1's output."""
    return _init_path(config) if k == 0 else str(Path(config.out) / f"stage{k - 1}" / "checkpoint")


def _init_path(config: PipelineConfig) -> str:
    from llm4cov.models import resolve_model  # a fetched model's name -> its checkpoint

    return str(Path(config.out) / "init") if config.init == TINY else resolve_model(config.init)


def _bench_all(session: Session, name: str, model: ModelRef, root: Path
               ) -> dict[str, Any] | None:
    """Every bench mode of ``model``; None when one stopped early."""
    spec = session.config.bench
    rows = {}
    for mode in (spec.modes if spec else ()):
        row = session.step(name, f"bench:{mode.value}",
                           functools.partial(bench_step, session, model, mode,
                                             root / "bench" / mode.value))
        if row is None:
            return None
        rows[mode.value] = row
    return rows


def _base(session: Session) -> bool:
    """Evaluate checkpoint 0 (``OUT/base/bench/<mode>/``) when ``bench.checkpoint0``;
    False when a bench stopped early."""
    config = session.config
    if config.bench is None or not config.bench.checkpoint0:
        return True
    model = student_ref(config.student, 0, checkpoint(config, 0))
    return _bench_all(session, BASE, model, Path(config.out) / BASE) is not None


def _evaluated(config: PipelineConfig, k: int) -> bool:
    """Whether checkpoint ``k`` (trained by stage k - 1) is to be benched."""
    wanted = config.bench.checkpoints if config.bench else None
    return wanted is None or k in wanted


def _stage(session: Session, k: int) -> dict[str, Any] | None:
    config, name = session.config, f"stage{k}"
    session.run.begin_stage(name, config.stage_identity(k))
    done = session.run.stage(name)
    root = Path(config.out) / name
    following = student_ref(config.student, k + 1, checkpoint(config, k + 1))
    if done is not None:
        session.on_event(f"{name}: finished before, skipped")
        if done["bench"] or not _evaluated(config, k + 1):
            return done
        bench = _bench_all(session, name, following, root)  # a checkpoint added later
        if bench is None:
            return None
        return session.run.record_stage({**done, "bench": bench,
                                         "wall_s": round(done["wall_s"] + _wall({}, bench), 1)})
    plan = config.stage(k)
    student = student_ref(config.student, k, checkpoint(config, k))
    steps: list[tuple[str, StepFn]] = [
        ("synth", lambda: synth_step(session, plan, student, root / "synth")),
        ("export", lambda: export_step(session, plan, root / "synth", root / "data")),
        ("train", lambda: _train(session, _finished(session, name, "export")["path"],
                                 student.checkpoint, following, k)),
    ]
    rows = {}
    for step, fn in steps:
        rows[step] = session.step(name, step, fn)
        if rows[step] is None:
            return None
    bench = _bench_all(session, name, following, root) if _evaluated(config, k + 1) else {}
    if bench is None:
        return None
    row = {"name": name, "stage": k, "preset": plan.preset,
           "trace_type": plan.synth.trace_type.value, "student": student.name,
           "checkpoint_in": student.checkpoint, "checkpoint_out": following.checkpoint,
           **rows, "bench": bench, "wall_s": _wall(rows, bench)}
    return session.run.record_stage(row)


def _train(session: Session, data: str, init: str, out: ModelRef, k: int | None):
    if out.served:
        session.on_event(f"training {out.checkpoint}: stop the vLLM student server first "
                         "if it shares these GPUs")
    return train_step(session, data, init, Path(out.checkpoint),
                      session.config.train_settings(k))


def _wall(rows: dict[str, Any], bench: dict[str, Any]) -> float:
    return round(sum(r["wall_s"] for r in [*rows.values(), *bench.values()]), 1)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def naive_datasets(config: PipelineConfig) -> list[Path]:
    """The datasets of mode naive: ``naive.datasets`` (a file, or a directory holding
    ``sft.jsonl``), else the stage datasets of the progressive run in ``out``.

    Raises:
        PipelineError: a dataset is missing, or a progressive stage is not exported yet.
    """
    if config.naive.datasets:
        paths = [Path(p) / "sft.jsonl" if Path(p).is_dir() else Path(p)
                 for p in config.naive.datasets]
    else:
        progressive = Path(config.out)
        rows = {(r["name"], r["step"]): r for r in iter_jsonl(progressive / "steps.jsonl")}
        missing = [k for k in range(len(config.stages)) if (f"stage{k}", "export") not in rows]
        if missing:
            raise PipelineError(
                f"{progressive}: stage(s) {', '.join(map(str, missing))} not exported yet; run "
                "the progressive pipeline first, or list the datasets in naive.datasets")
        paths = [Path(rows[(f"stage{k}", "export")]["path"]) for k in range(len(config.stages))]
    absent = [str(p) for p in paths if not p.is_file()]
    if absent:
        raise PipelineError(f"naive: no dataset at {', '.join(absent)}")
    return paths


def _finished(session: Session, name: str, step: str) -> dict[str, Any]:
    """The row of step ``step`` of ``name``, which has finished (an earlier step)."""
    row = session.run.step(name, step)
    assert row is not None, f"{name}: {step} has not finished"
    return row


def _union(paths: list[Path], out: Path) -> dict[str, Any]:
    """Concatenate ``paths`` (in order) into ``out``; per-dataset sample counts."""
    sources, lines = [], []
    for path in paths:
        rows = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        sources.append({"path": str(path), "samples": len(rows), "sha256": _sha256(path)})
        lines += rows
    write_text_atomic(out, "".join(line + "\n" for line in lines))
    return {"path": str(out), "samples": len(lines), "datasets": sources}


def _naive(session: Session, datasets: list[Path]) -> dict[str, Any] | None:
    config = session.config
    done = session.run.stage(NAIVE)
    if done is not None:
        session.on_event("naive: finished before, skipped")
        return done
    root = session.run.path
    model = student_ref(config.student, NAIVE, str(root / "checkpoint"))
    union = session.step(NAIVE, "union", lambda: _union(datasets, root / "union.jsonl"))
    assert union is not None  # _union always finishes
    train = session.step(NAIVE, "train", lambda: _train(session, union["path"],
                                                        _init_path(config), model, None))
    bench = _bench_all(session, NAIVE, model, root)
    if bench is None:
        return None
    rows = {"union": union, "train": train}
    row = {"name": NAIVE, "checkpoint_in": _init_path(config), "checkpoint_out":
           model.checkpoint, **rows, "bench": bench, "wall_s": _wall(rows, bench)}
    return session.run.record_stage(row)


def open_run(config: PipelineConfig, command: str = "") -> tuple[PipelineDir, list[Path]]:
    """The run directory of ``config`` (``out``, or ``out/naive`` in mode naive) checked
    against its stored identity, and the naive datasets (empty when progressive).

    Raises:
        PipelineDirError: the directory holds a run with other settings.
        PipelineError: mode naive without its datasets.
    """
    dump = config.model_dump(mode="json")
    if config.mode != NAIVE:
        return PipelineDir(run_path(config), {"global": config.global_identity()}, dump,
                           command), []
    datasets = naive_datasets(config)
    identity = {**config.global_identity(), "train": config.train_settings(None),
                "datasets": [_sha256(p) for p in datasets]}
    return PipelineDir(run_path(config), {"global": identity}, dump, command), datasets


def run_path(config: PipelineConfig) -> Path:
    """The run directory of ``config``: ``out``, or ``out/naive`` in mode naive."""
    return Path(config.out) / NAIVE if config.mode == NAIVE else Path(config.out)


def run_pipeline(config: PipelineConfig, command: str = "",
                 on_event: Callable[[str], None] = lambda _: None) -> PipelineResult:
    """Run or resume ``config``; ``on_event(message)`` reports progress.

    Raises:
        PipelineDirError, PipelineError: see :func:`open_run` and the steps.
        RunDirBusy: another process is running the same run directory
            (:func:`llm4cov.util.rundir.exclusive`).
        ToolchainError: the simulator toolchain is missing.
        PolicyError: a model server failed (``ServerNotReady``: a served checkpoint did
            not appear in time); finished work is kept and a rerun resumes.
    """
    from llm4cov.sim.backends import open_backend

    open_backend(config.sim.sim_config())
    with exclusive(run_path(config)):
        return _run(config, command, on_event)


def _run(config: PipelineConfig, command: str, on_event: Callable[[str], None]
         ) -> PipelineResult:
    run, datasets = open_run(config, command)
    session = Session(config, run, on_event, command or "llm4cov pipeline")
    started, t0 = datetime.now(UTC).isoformat(timespec="seconds"), time.monotonic()
    status, error = PipelineStatus.STOPPED, None
    try:
        init_checkpoint(config, on_event)
        if config.mode == NAIVE:
            rows = [_naive(session, datasets)]
        else:
            rows = [] if _base(session) else [None]
            for k in range(len(config.stages) if not rows else 0):
                rows.append(_stage(session, k))
                if rows[-1] is None:
                    break
        if rows and rows[-1] is not None:
            status = PipelineStatus.FINISHED
    except BaseException as exc:
        status, error = PipelineStatus.ERROR, f"{type(exc).__name__}: {exc}"
        raise
    finally:
        session.close()
        invocation = {"started": started, "wall_s": round(time.monotonic() - t0, 1),
                      "status": status, "error": error, "steps_run": session.steps_run,
                      "trained": session.trained, "sim_calls": session.sim_calls}
        run.add_invocation(invocation)
    return PipelineResult(run.path, status, [r for r in rows if r is not None], invocation)
