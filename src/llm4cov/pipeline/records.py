"""The pipeline run directory's records: ``run.json``, ``steps.jsonl``, ``stages.jsonl``.

- ``run.json``: the config, its identity (``global`` settings plus, per started stage,
  the settings that decide its results), the command, and one entry per invocation
  (start, wall seconds, status, steps run, checkpoints trained, simulator calls).
- ``steps.jsonl``: one row per finished step, key ``(name, step)``: ``name`` is
  ``stage<k>`` or ``naive``, ``step`` is ``synth``, ``export``, ``union``, ``train`` or
  ``bench:<mode>``; the row holds the step's counts and its ``wall_s``.
- ``stages.jsonl``: one row per finished stage, key ``(name, revision)``: its steps
  together. A stage whose checkpoint is benched after it finished (``bench.checkpoints``
  set, then widened) gets a new revision holding that bench; the last revision counts.

Rows are written through :class:`~llm4cov.util.jsonl.ResultLog` (append + fsync), so
a killed pipeline loses at most the step in flight, which resumes from its own run
directory (synth, train and bench resume).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llm4cov.train.config import deciding
from llm4cov.util.files import write_text_atomic
from llm4cov.util.jsonl import ResultLog

SCHEMA_VERSION = 1
RUN_FILE = "run.json"


class PipelineDirError(ValueError):
    """The directory holds a pipeline run with other settings."""


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _deciding(identity: dict[str, Any]) -> dict[str, Any]:
    """A stage identity without the train settings that change no weight
    (:func:`llm4cov.train.config.deciding`): identities recorded before they were left
    out still hold them."""
    return {**identity, "train": deciding(identity["train"])} if "train" in identity \
        else identity


class PipelineDir:
    """One pipeline run directory. ``identity`` is ``{"global": {...}}``; a stage's
    identity is added by :meth:`begin_stage`.

    Raises:
        PipelineDirError: ``run.json`` holds another global identity.
    """

    def __init__(self, path: Path | str, identity: dict[str, Any], config: dict[str, Any],
                 command: str = "") -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        stored = self._load()
        self.data = stored or {"schema_version": SCHEMA_VERSION, "command": command,
                               "invocations": []}
        old = self.data.get("identity", {})
        if stored and old.get("global") != _plain(identity["global"]):
            raise PipelineDirError(
                f"{self.path} holds a pipeline run with other settings "
                f"({_diff(old.get('global', {}), _plain(identity['global']))}); use another "
                "out, or the same config to resume")
        self.data["identity"] = {"global": _plain(identity["global"]),
                                 "stages": old.get("stages", {})}
        self.data["config"] = _plain(config)
        self._save()
        self.steps = ResultLog(self.path / "steps.jsonl", ("name", "step"))
        self.stages = ResultLog(self.path / "stages.jsonl", ("name", "revision"))
        self._steps = {self.steps.key(r): r for r in self.steps.rows()}

    def _load(self) -> dict[str, Any] | None:
        path = self.path / RUN_FILE
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None

    def _save(self) -> None:
        write_text_atomic(self.path / RUN_FILE,
                          json.dumps(self.data, indent=2, sort_keys=True) + "\n")

    def begin_stage(self, name: str, identity: dict[str, Any]) -> None:
        """Record ``name``'s identity, or check it against the one recorded when the
        stage first started.

        Raises:
            PipelineDirError: the stage started with other settings.
        """
        stages = self.data["identity"]["stages"]
        wanted = _plain(identity)
        if name in stages and _deciding(stages[name]) != _deciding(wanted):
            raise PipelineDirError(
                f"{self.path}: {name} started with other settings "
                f"({_diff(_deciding(stages[name]), _deciding(wanted))}); use another out, "
                "or restore them")
        if name not in stages:
            stages[name] = wanted
            self._save()

    def step(self, name: str, step: str) -> dict[str, Any] | None:
        """The row of a finished step, or None."""
        return self._steps.get((name, step))

    def record_step(self, row: dict[str, Any]) -> dict[str, Any]:
        row = _plain(row)
        self.steps.append(row)
        self._steps[self.steps.key(row)] = row
        return row

    def stage(self, name: str) -> dict[str, Any] | None:
        """The last revision of a finished stage's row, or None."""
        return next(reversed(self._revisions(name)), None)

    def record_stage(self, row: dict[str, Any]) -> dict[str, Any]:
        """Append ``row`` (a dict with ``name``) as the next revision of its stage."""
        row = _plain({**row, "revision": len(self._revisions(row["name"]))})
        self.stages.append(row)
        return row

    def _revisions(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.stages.rows() if r["name"] == name]

    def add_invocation(self, record: dict[str, Any]) -> None:
        self.data["invocations"].append(_plain(record))
        self._save()


def _diff(old: dict[str, Any], new: dict[str, Any]) -> str:
    keys = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    return "changed: " + ", ".join(keys)
