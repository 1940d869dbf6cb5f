"""SFT export: chat JSONL without the syntax rules, LlamaFactory entry, dataset card,
Stage-0 rebalancing, and a round trip through ``datasets`` (and TRL's format check)."""

from __future__ import annotations

import json

import pytest

from conftest import fixture_task
from llm4cov.agent.prompt import build_messages, syntax_rules
from llm4cov.policies import get_policy
from llm4cov.synth.config import export_preset, resolve, stage_preset
from llm4cov.synth.engine import SynthRun
from llm4cov.synth.export import export_dataset, llamafactory_entry
from llm4cov.synth.records import (
    DataPoint,
    PointKind,
    RepoRow,
    RepoStatus,
    Role,
    StateInfo,
    Transition,
    Verdict,
)
from support.synth_data import make_obs

TB_DIRECT = "module tb;\n  // direct\n  initial $finish;\nendmodule\n"
TB_BROKEN = "module tb;\n  initial a = 2'b1x2;\nendmodule\n"
TB_FIXED = "module tb;\n  // fixed\n  initial $finish;\nendmodule\n"


def _point(point_id, kind, state, tb, cov_pct, verdict):
    nxt = make_obs("success", cov_pct)
    return DataPoint(
        repo_id="local/mux2", point_id=point_id, stage=0, trace_type="full_teacher",
        kind=kind, state=state,
        next=Transition(sample_id=point_id, model="teacher-x", params={
            "temperature": 0.7, "top_p": 0.8, "max_tokens": 8192, "seed": None},
            seed=5, response=f"```verilog\n{tb}```", testbench=tb, observation=nxt,
            cov=nxt.cov()),
        gain=nxt.cov() - state.cov, verdict=verdict,
        models={"int": "teacher-x", "trans": "teacher-x"}, syntax_rules=True)


@pytest.fixture
def run_dir(tmp_path):
    """A stage-0 run directory with three points of tests/fixtures/mux2."""
    policies = {Role.INTERMEDIATE: get_policy("random"), Role.TRANSITION: get_policy("random")}
    run = SynthRun(tmp_path / "run", stage_preset(0), policies, simulate=None)
    task = fixture_task("mux2")
    failed = StateInfo(id="int/1", testbench=TB_BROKEN, model="teacher-x",
                       observation=make_obs("compile_error", 0.0, log="%Error: bad digit"),
                       selected_as="failure", cov=0.0)
    for point in (
        _point("int/0", PointKind.DIRECT, StateInfo(id="s0"), TB_DIRECT, 90.0, Verdict.KEPT),
        _point("int/1>trans/0", PointKind.AGENTIC, failed, TB_FIXED, 80.0, Verdict.KEPT),
        _point("int/1>trans/1", PointKind.AGENTIC, failed, TB_FIXED, 70.0, Verdict.NOT_BEST),
    ):
        run.points.append(point.model_dump(mode="json"))
    run.repos.append(RepoRow(repo_id=task.id, status=RepoStatus.DONE, task=task).model_dump(
        mode="json"))
    return run.out


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_stage0_defaults_rebalance_short_points(run_dir, tmp_path):
    """mux2 is short: of 1 direct point floor(1/3 + 0.5) = 0 stay, of 1 agentic 1 stays."""
    result = export_dataset(run_dir, tmp_path / "sft", export_preset(0))
    rows = _rows(tmp_path / "sft" / "sft.jsonl")
    assert result.samples == 1
    assert [r["meta"]["point_id"] for r in rows] == ["int/1>trans/0"]
    assert result.curation["kept_before"] == {"agentic:short": 1, "direct:short": 1}
    assert result.curation["kept_after"] == {"agentic:short": 1}


def test_messages_are_the_state_prompt_without_rules(run_dir, tmp_path):
    cfg = resolve(export_preset(0), None, ["rebalance.short_direct_keep=1"])
    export_dataset(run_dir, tmp_path / "sft", cfg)
    rows = _rows(tmp_path / "sft" / "sft.jsonl")
    task = fixture_task("mux2")
    direct, agentic = rows
    assert [m["role"] for m in direct["messages"]] == ["system", "user", "assistant"]
    assert direct["messages"][:2] == build_messages(task)
    assert direct["messages"][2]["content"] == f"```systemverilog\n{TB_DIRECT.rstrip()}\n```"
    failed_obs = make_obs("compile_error", 0.0, log="%Error: bad digit")
    assert agentic["messages"][:2] == build_messages(task, TB_BROKEN, failed_obs)
    assert "Status: compile_error" in agentic["messages"][1]["content"]
    text = (tmp_path / "sft" / "sft.jsonl").read_text()
    assert "## SystemVerilog rules" not in text
    for rule in syntax_rules().splitlines():
        assert json.dumps(rule)[1:-1] not in text
    meta = agentic["meta"]
    assert (meta["kind"], meta["selected_as"], meta["state_status"]) == (
        "agentic", "failure", "compile_error")
    assert (meta["state_cov"], meta["next_cov"], meta["gain"]) == (0.0, 0.8, 0.8)
    assert (meta["model"], meta["state_model"], direct["meta"]["state_model"]) == (
        "teacher-x", "teacher-x", None)
    assert meta["token_counter"] == "approx-regex"
    assert meta["syntax_rules_at_generation"] is True


def test_llamafactory_entry_and_card(run_dir, tmp_path):
    cfg = resolve(export_preset(0), None, ["rebalance.short_direct_keep=1", "name=mux_data"])
    export_dataset(run_dir, tmp_path / "sft", cfg, command="llm4cov synth export x")
    info = json.loads((tmp_path / "sft" / "dataset_info.json").read_text())
    assert info == llamafactory_entry("mux_data")
    assert info["mux_data"]["columns"] == {"messages": "messages"}
    assert info["mux_data"]["tags"]["system_tag"] == "system"
    card = (tmp_path / "sft" / "README.md").read_text()
    assert "## Exported samples: 2" in card
    assert "| agentic | not_best | 1 |" in card
    assert "| >= 50 | 3 | 2 |" in card  # gains 90, 80, 70 pp; 2 exported
    assert "llm4cov synth export x" in card


@pytest.mark.requires_train
def test_round_trip_with_datasets_and_trl(run_dir, tmp_path):
    datasets = pytest.importorskip("datasets")
    cfg = resolve(export_preset(0), None, ["rebalance.short_direct_keep=1"])
    export_dataset(run_dir, tmp_path / "sft", cfg)
    ds = datasets.load_dataset("json", data_files=str(tmp_path / "sft" / "sft.jsonl"),
                               split="train", cache_dir=str(tmp_path / "cache"))
    assert ds.num_rows == 2
    assert set(ds.column_names) == {"messages", "meta"}
    assert ds[1]["messages"][2]["role"] == "assistant"
    assert ds[1]["meta"]["gain"] == pytest.approx(0.8)
    trl_data_utils = pytest.importorskip("trl.data_utils")
    assert trl_data_utils.is_conversational(ds[0])
