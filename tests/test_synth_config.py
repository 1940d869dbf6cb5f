"""Synthesis settings: paper defaults per stage, YAML + overrides, unknown keys."""

from __future__ import annotations

import pytest

from llm4cov.synth.config import (
    ConfigError,
    SynthConfig,
    TraceType,
    export_preset,
    resolve,
    stage_preset,
)


def test_stage_presets_carry_the_paper_values():
    s0, s1, s2 = (stage_preset(k) for k in (0, 1, 2))
    assert (s0.trace_type, s1.trace_type, s2.trace_type) == (
        TraceType.FULL_TEACHER, TraceType.IMITATION, TraceType.SELF_SAMPLING)
    assert s0.trace_type.roles == ("teacher", "teacher")
    assert s1.trace_type.roles == ("student", "teacher")
    assert (s0.rejection.tau_delta, s0.rejection.min_overall_percent) == (0.01, 50.0)
    assert s1.rejection.min_overall_percent == 0.0
    assert (s0.selection.candidates, s0.transitions, s0.syntax_rules) == (1, 1, True)
    assert (s1.selection.candidates, s1.transitions, s1.syntax_rules) == (5, 3, False)
    assert (s0.direct_points, s1.direct_points, s2.direct_points) == (True, True, False)
    assert s0.contamination_threshold == 0.5
    assert export_preset(0).rebalance.short_direct_keep == pytest.approx(1 / 3)
    assert export_preset(0).rebalance.short_agentic_keep == 0.5
    assert export_preset(0).rebalance.short_tokens == 1024
    assert export_preset(2).rebalance.short_direct_keep == 1.0


def test_yaml_then_overrides(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("selection:\n  candidates: 8\n  strategy: best\ntransitions: 2\n")
    cfg = resolve(stage_preset(1), path, ["selection.candidates=9", "rejection.tau_delta=0.05",
                                          "trans_sampling.temperature=0.2"])
    assert (cfg.selection.candidates, cfg.selection.strategy, cfg.transitions) == (9, "best", 2)
    assert cfg.rejection.tau_delta == 0.05
    assert cfg.trans_sampling.temperature == 0.2
    assert cfg.int_sampling.temperature == 0.7


@pytest.mark.parametrize(("override", "message"), [
    ("selection.candidate=3", "selection.candidate: unknown key; valid: candidates"),
    ("bogus=1", "bogus: unknown key"),
    ("selection.candidates=many", "selection.candidates: 'many': .*valid integer"),
    ("direct_points=maybe", "direct_points: 'maybe': .*valid boolean"),
    ("rejection.tau_delta=2", "rejection: tau_delta is a fraction"),
    ("trace_type=teacher_only", "trace_type: 'teacher_only': Input should be 'full_teacher'"),
    ("selection=3", "selection: must be a mapping"),
    ("novalue", "expected key=value"),
])
def test_bad_settings_are_errors(override, message):
    with pytest.raises(ConfigError, match=message):
        resolve(stage_preset(0), None, [override])


def test_identity_ignores_budgets_and_concurrency():
    a = resolve(stage_preset(0), None, ["budget.max_sim_calls=10", "concurrency=1"])
    assert a.identity() == stage_preset(0).identity()
    assert resolve(stage_preset(0), None, ["seed=1"]).identity() != a.identity()
    with pytest.raises(ValueError, match="stage must be one of"):
        SynthConfig(stage=3)


def test_cli_prints_the_resolved_settings(capsys, tmp_path):
    import yaml

    from llm4cov.cli.app import main

    assert main(["synth", "config", "--stage", "1", "--set", "selection.strategy=best"]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["synth"]["selection"]["strategy"] == "best"
    assert shown["synth"]["trace_type"] == "imitation"
    assert shown["export"]["rebalance"]["short_direct_keep"] == 1.0
    assert main(["synth", "config", "--stage", "0", "--set", "selection.k=3"]) == 2
    repos = tmp_path / "repos.jsonl"
    repos.write_text("")
    assert main(["synth", "--stage", "1", "--repos", str(repos), "--out", str(tmp_path / "o"),
                 "--teacher", "random"]) == 2  # stage 1 needs --student
    assert main(["synth", "--stage", "0", "--repos", str(tmp_path / "missing.jsonl"),
                 "--out", str(tmp_path / "o"), "--teacher", "random"]) == 2
