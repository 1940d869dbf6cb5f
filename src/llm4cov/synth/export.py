"""SFT export of a synthesis run: chat JSONL, LlamaFactory registration, dataset card.

Writes into the export directory:

- ``sft.jsonl``: one kept, rebalanced data point per line,
  ``{"messages": [system, user, assistant], "meta": {...}}``. The user message is the
  state prompt of :func:`llm4cov.agent.prompt.build_messages` without the syntax rules;
  the assistant message is the testbench ``x_{t+1}`` as one ```systemverilog fenced
  block. It loads with ``datasets.load_dataset("json", data_files=...)`` and is TRL's
  conversational format (``messages``).
- ``dataset_info.json``: the LlamaFactory entry (``formatting: sharegpt`` with OpenAI
  role/content tags).
- ``README.md``: the dataset card (:mod:`llm4cov.synth.card`).
- ``curation.json``: counts before and after rebalancing.

``meta`` keys (same types on every line): ``repo_id``, ``point_id``, ``stage``,
``trace_type``, ``kind``, ``state_id``, ``selected_as``, ``state_status`` (``initial`` for
``s_0``), ``state_cov``, ``next_cov``, ``gain`` (fractions 0-1), ``state_model`` (null
for ``s_0``), ``model``, ``temperature``, ``top_p``, ``max_tokens``, ``seed``,
``context_tokens``, ``prompt_tokens``, ``response_tokens``, ``token_counter``,
``syntax_rules_at_generation``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm4cov.agent.prompt import render_repo
from llm4cov.synth.card import render_card
from llm4cov.synth.chat import training_messages
from llm4cov.synth.config import ExportConfig, SynthConfig, to_mapping
from llm4cov.synth.curation import CurationItem, rebalance
from llm4cov.synth.records import DataPoint, RepoStatus, Verdict
from llm4cov.synth.tokens import TokenCounter, get_token_counter
from llm4cov.tasks.model import Task
from llm4cov.util.files import write_text_atomic
from llm4cov.util.jsonl import iter_jsonl, json_line
from llm4cov.util.settings import ConfigError, validate

SFT_FILE = "sft.jsonl"


class ExportError(ValueError):
    """The run directory cannot be exported (missing files, unknown repo)."""


@dataclass(frozen=True)
class ExportResult:
    """Where the files are, how many samples, and the curation counts."""

    out_dir: Path
    samples: int
    curation: dict[str, Any]


def llamafactory_entry(name: str, file_name: str = SFT_FILE) -> dict[str, Any]:
    """LlamaFactory's ``dataset_info.json`` entry for our chat JSONL."""
    return {name: {
        "file_name": file_name,
        "formatting": "sharegpt",
        "columns": {"messages": "messages"},
        "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                 "assistant_tag": "assistant", "system_tag": "system"},
    }}


def _meta(point: DataPoint, context_tokens: int, messages: list[dict[str, str]],
          counter: TokenCounter) -> dict[str, Any]:
    state, nxt = point.state, point.next
    prompt = "\n".join(m["content"] for m in messages[:-1])
    return {
        "repo_id": point.repo_id, "point_id": point.point_id, "stage": point.stage,
        "trace_type": point.trace_type.value, "kind": point.kind.value,
        "state_id": state.id, "selected_as": state.selected_as,
        "state_status": state.observation.status.value if state.observation else "initial",
        "state_cov": state.cov, "next_cov": nxt.cov, "gain": point.gain,
        "state_model": state.model, "model": nxt.model,
        "temperature": float(nxt.params.get("temperature", 0.0)),
        "top_p": float(nxt.params.get("top_p", 0.0)),
        "max_tokens": int(nxt.params.get("max_tokens", 0)), "seed": nxt.seed,
        "context_tokens": context_tokens, "prompt_tokens": counter.count(prompt),
        "response_tokens": counter.count(messages[-1]["content"]),
        "token_counter": counter.name, "syntax_rules_at_generation": point.syntax_rules,
    }



RUN_KEYS = ("config", "identity")
"""What an export reads from ``run.json`` (the settings, and their identity for the card)."""


def read_run(run_dir: Path) -> dict[str, Any]:
    """``run_dir/run.json`` with its synthesis settings checked.

    Raises:
        ExportError: ``run.json`` is missing, not JSON, or its ``config`` is not a valid
            :class:`~llm4cov.synth.config.SynthConfig` (the message names the file).
    """
    path = run_dir / "run.json"
    if not path.exists():
        raise ExportError(f"{run_dir}: no run.json (not a synth run directory)")
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
        missing = [k for k in RUN_KEYS if k not in run]
        if missing:
            raise KeyError(", ".join(missing))
        config = validate(SynthConfig, run["config"], f"{path}: config")
    except ConfigError as exc:
        raise ExportError(f"not a valid synth run record: {exc}") from exc
    except KeyError as exc:
        raise ExportError(f"{path}: not a valid synth run record (missing {exc})") from exc
    except (ValueError, TypeError) as exc:  # not JSON, not a mapping
        raise ExportError(f"{path}: not a valid synth run record ({exc})") from exc
    return {**run, "config": config.model_dump(mode="json")}


def load_run(run_dir: Path) -> tuple[dict[str, Any], dict[str, Task], list[DataPoint]]:
    """``run.json``, the tasks of finished repos, and their data points. Points of a
    repo without a ``done`` row (a run killed between its points and its repo row) are
    left out: the resumed run rewrites them.

    Raises:
        ExportError: see :func:`read_run`.
    """
    run = read_run(run_dir)
    tasks = {row["repo_id"]: Task.model_validate(row["task"])
             for row in iter_jsonl(run_dir / "repos.jsonl")
             if row["status"] == RepoStatus.DONE.value}
    points = [DataPoint.model_validate(r) for r in iter_jsonl(run_dir / "points.jsonl")
              if r["repo_id"] in tasks]
    return run, tasks, points


def export_dataset(
    run_dir: Path | str, out_dir: Path | str, config: ExportConfig, command: str = ""
) -> ExportResult:
    """Export the kept points of ``run_dir`` (after rebalancing) to ``out_dir``;
    ``command`` (the export command line) goes into the dataset card.

    Raises:
        ExportError: see :func:`load_run`.
        ValueError: the configured tokenizer cannot be loaded.
    """
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    run, tasks, points = load_run(run_dir)
    counter = get_token_counter(config.tokenizer)
    kept = sorted((p for p in points if p.verdict is Verdict.KEPT),
                  key=lambda p: (p.repo_id, p.point_id))
    context = {repo: counter.count(render_repo(tasks[repo])) for repo in {p.repo_id for p in kept}}
    items = [CurationItem(f"{p.repo_id}::{p.point_id}", p.kind, context[p.repo_id]) for p in kept]
    survivors = rebalance(items, config.rebalance)
    rows: list[dict[str, Any]] = []
    for point, item in zip(kept, items, strict=True):
        if item.key not in survivors:
            continue
        testbench = point.next.testbench
        assert testbench is not None, f"{point.point_id}: kept, so simulated (sim_pass)"
        messages = training_messages(tasks[point.repo_id], point.state, testbench)
        meta = _meta(point, item.context_tokens, messages, counter)
        rows.append({"messages": messages, "meta": meta})
    short = config.rebalance.short_tokens
    curation = {
        "token_counter": counter.name,
        "rebalance": to_mapping(config.rebalance),
        "kept_before": _split_counts(items, short),
        "kept_after": _split_counts([i for i in items if i.key in survivors], short),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out_dir / SFT_FILE, "".join(json_line(r) for r in rows))
    name = config.name or f"llm4cov_stage{run['config']['stage']}"
    write_text_atomic(out_dir / "dataset_info.json",
                  json.dumps(llamafactory_entry(name), indent=2) + "\n")
    write_text_atomic(out_dir / "curation.json", json.dumps(curation, indent=2) + "\n")
    card = render_card(name, run, run_dir, points, [r["meta"] for r in rows], curation,
                       [c for c in (run.get("command", ""), command) if c])
    write_text_atomic(out_dir / "README.md", card)
    return ExportResult(out_dir, len(rows), curation)


def _split_counts(items: list[CurationItem], short_tokens: int) -> dict[str, int]:
    counts: dict[str, int] = {}
    for i in items:
        key = f"{i.kind.value}:{'short' if i.context_tokens <= short_tokens else 'long'}"
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))
