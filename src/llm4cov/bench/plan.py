"""The run directory's plan (``run.json``): what a bench run covers and how to read it.

``run.json`` holds the configuration identity, the arms, one :class:`TaskInfo` per task
(source, difficulty, target and where the target comes from), the simulator and its
coverage options, and one entry per invocation. Scoring needs only ``run.json`` and
``results.jsonl``, so ``llm4cov bench report`` re-scores a run without the task file.
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from llm4cov.bench.config import Arm, BenchConfig
from llm4cov.sim.model.metrics import scored_metrics
from llm4cov.tasks.hdl import task_ports
from llm4cov.tasks.model import Task
from llm4cov.util.files import write_text_atomic

RUN_SCHEMA_VERSION = 1
PLAN_FILE = "run.json"


class RunDirError(ValueError):
    """A run directory that cannot be used (different configuration, missing plan)."""


class Calibration(StrEnum):
    """Where a task's coverage threshold was calibrated, relative to this run's simulator.

    Only ``this_simulator`` thresholds were calibrated for the scores a run reports.
    ``other_simulator``: CVDP's thresholds, set on Cadence Xcelium/IMC's composite score.
    """

    THIS_SIMULATOR = "this_simulator"
    OTHER_VERSION = "other_version"
    OTHER_SIMULATOR = "other_simulator"
    DEFAULT = "default"
    NO_TARGET = "no_target"
    UNKNOWN = "unknown"


class TaskInfo(BaseModel):
    """What scoring and reports need to know about one task. ``target`` is percent;
    ``calibration_overall`` the reference testbench's overall percent in the calibration
    run that set the target (``meta["reference_coverage"]``), when known. ``dut_module``,
    ``dut_instance`` (None = any name) and ``dut_ports`` (the DUT's port names as the
    task's parameters elaborate them; None when they cannot be elaborated) feed the
    per-answer copy checks (:mod:`llm4cov.bench.answer_checks`); None in plans written
    before they existed."""

    id: str
    source: str
    difficulty: str | None = None
    target: float | None = None
    target_source: str | None = None
    calibration: Calibration
    calibrated_on: str
    has_reference: bool
    calibration_overall: float | None = None
    dut_module: str | None = None
    dut_instance: str | None = None
    dut_ports: list[str] | None = None


def _port_names(task: Task) -> list[str] | None:
    try:
        return [p.name for p in task_ports(task)]
    except ValueError:  # the DUT does not elaborate (the RTL's own errors)
        return None


def task_info(task: Task, simulator: str) -> TaskInfo:
    """The :class:`TaskInfo` of ``task`` scored by ``simulator`` (e.g. ``verilator rev ...``).

    Calibration follows ``meta["target_source"]`` (``../shared/benchmarks/README.md``,
    "Targets"): ``reference_tb`` targets were set from the reference testbench under the
    Verilator version in ``meta["rtl_lint"]["verilator"]``; ``cvdp_official`` ones on
    Xcelium/IMC; ``default`` ones are a fixed 90.
    """
    source = task.meta.get("target_source")
    version = (task.meta.get("rtl_lint") or {}).get("verilator")
    if not task.targets:
        cal, on = Calibration.NO_TARGET, "-"
    elif source == "reference_tb":
        on = f"verilator {version}" if version else "verilator (version not recorded)"
        cal = (Calibration.THIS_SIMULATOR if version and version in simulator
               else Calibration.OTHER_VERSION)
    elif source == "cvdp_official":
        cal, on = Calibration.OTHER_SIMULATOR, "Cadence Xcelium/IMC (CVDP)"
    elif source == "default":
        cal, on = Calibration.DEFAULT, "not calibrated (default target)"
    else:
        cal, on = Calibration.UNKNOWN, "unknown"
    return TaskInfo(
        id=task.id, source=task.source, difficulty=task.difficulty,
        target=task.target_for("overall"), target_source=source, calibration=cal,
        calibrated_on=on, has_reference=task.reference_tb is not None,
        calibration_overall=(task.meta.get("reference_coverage") or {}).get("overall"),
        dut_module=task.dut_module_name, dut_instance=task.dut_instance_name,
        dut_ports=_port_names(task),
    )


def tasks_sha256(tasks: list[Task]) -> str:
    """A hash of the tasks' content (identity of the task set)."""
    digest = hashlib.sha256()
    for task in tasks:
        digest.update(task.model_dump_json().encode())
    return digest.hexdigest()


class RunPlan(BaseModel):
    """The contents of ``run.json``."""

    schema_version: int = RUN_SCHEMA_VERSION
    command: str
    identity: dict[str, Any]
    tasks_file: str
    tasks_sha256: str
    simulator: str
    coverage_options: list[str]
    overall_metrics: list[str]
    stop_at_full_coverage: bool
    arms: list[Arm]
    tasks: list[TaskInfo]
    invocations: list[dict[str, Any]] = Field(default_factory=list)

    def arm(self, name: str) -> Arm:
        return next(a for a in self.arms if a.name == name)


def make_plan(config: BenchConfig, tasks: list[Task], simulator: str,
              options: list[str]) -> RunPlan:
    """The plan of a new run on ``simulator`` with its coverage ``options``
    (:meth:`~llm4cov.sim.backends.base.SimBackend.coverage_options`)."""
    metrics = scored_metrics(options)
    return RunPlan(
        command=config.command(), identity=config.identity(), tasks_file=config.tasks,
        tasks_sha256=tasks_sha256(tasks), simulator=simulator, coverage_options=options,
        overall_metrics=metrics, stop_at_full_coverage=config.stop_at_full_coverage,
        arms=config.arms(), tasks=[task_info(t, simulator) for t in tasks],
    )


def save_plan(run_dir: Path, plan: RunPlan) -> None:
    """Write ``run.json`` atomically (temp file + rename)."""
    write_text_atomic(run_dir / PLAN_FILE, plan.model_dump_json(indent=2))


def load_plan(run_dir: Path) -> RunPlan:
    """The plan in ``run_dir``.

    Raises:
        RunDirError: no ``run.json`` there, or it is not a valid plan.
    """
    path = run_dir / PLAN_FILE
    if not path.exists():
        raise RunDirError(f"{run_dir}: no {PLAN_FILE} (not a bench run directory)")
    try:
        return RunPlan.model_validate_json(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise RunDirError(f"{path}: not a valid run plan: {exc}") from exc


def open_plan(run_dir: Path, new: RunPlan) -> RunPlan:
    """The plan to run: ``new`` for a fresh directory; for a resume (same identity, task
    content and simulator) ``new`` with the stored command and invocations, so what is
    derived from the tasks is refreshed by the current code.

    Raises:
        RunDirError: the directory holds a run with another configuration.
    """
    if not (run_dir / PLAN_FILE).exists():
        save_plan(run_dir, new)
        return new
    old = load_plan(run_dir)
    stored = json.loads(json.dumps(old.identity))
    wanted = json.loads(json.dumps(new.identity))
    diff = sorted(k for k in stored.keys() | wanted.keys() if stored.get(k) != wanted.get(k))
    if old.tasks_sha256 != new.tasks_sha256:
        diff.append("tasks (content)")
    if old.simulator != new.simulator:
        diff.append(f"simulator ({old.simulator} -> {new.simulator})")
    if diff:
        raise RunDirError(
            f"{run_dir} holds a run with a different configuration ({', '.join(diff)}); "
            "use another --out, or the same options to resume"
        )
    return new.model_copy(update={"command": old.command, "invocations": old.invocations})
