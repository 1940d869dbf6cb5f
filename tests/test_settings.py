"""The one config layer: every shipped config loads, unknown keys and wrong types are
refused naming the key, and the CLI's defaults are the models' (written once)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from conftest import EXAMPLES, REPO
from llm4cov.bench.config import BenchConfig
from llm4cov.cli.app import app, main
from llm4cov.cli.options import Flag
from llm4cov.exec.settings import SimSettings
from llm4cov.pipeline.config import PipelineConfig, load_config
from llm4cov.policies.base import SamplingParams
from llm4cov.sim.config import SimConfig
from llm4cov.synth.config import STAGES, ExportConfig, SynthConfig, export_preset, stage_preset
from llm4cov.train import TrainConfig, configs_dir
from llm4cov.util.settings import (
    ConfigError,
    Settings,
    field_doc,
    load,
    read_mapping,
    to_mapping,
    validate,
)

TRAIN_REQUIRED = {"data": "d.jsonl", "init": "m", "out": "o"}


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_shipped_example_yaml_loads(path):
    kind = PipelineConfig if "stages" in read_mapping(path) or path.name.startswith(
        "pipeline") else BenchConfig
    config = load_config(path) if kind is PipelineConfig else load(BenchConfig, path)
    assert isinstance(config, kind)


@pytest.mark.parametrize("stage", STAGES)
def test_every_preset_round_trips_through_the_layer(stage):
    synth, export = stage_preset(stage), export_preset(stage)
    assert validate(SynthConfig, to_mapping(synth)) == synth
    assert validate(ExportConfig, to_mapping(export)) == export
    stage_yaml = TrainConfig.load(configs_dir() / "stage.yaml", **TRAIN_REQUIRED)
    assert stage_yaml == TrainConfig(**TRAIN_REQUIRED)


BAD = [
    (SynthConfig, {}, {"selection": {"candidats": 3}}, "selection.candidats: unknown key; "
     "valid: candidates"),
    (SynthConfig, {}, {"int_sampling": {"temprature": 1}}, "int_sampling.temprature: "
     "unknown key"),
    (SynthConfig, {}, {"int_sampling": {"max_tokens": "many"}}, "int_sampling.max_tokens: "
     "'many'"),
    (SynthConfig, {}, {"transitions": "three"}, "transitions: 'three'"),
    (ExportConfig, {}, {"rebalance": {"seed": [1]}}, "rebalance.seed: [1]"),
    (BenchConfig, {"tasks": "t"}, {"sampels": 2}, "sampels: unknown key; valid: "),
    (BenchConfig, {"tasks": "t"}, {"sim": {"fsm": "sometimes"}}, "sim.fsm: 'sometimes'"),
    (BenchConfig, {"tasks": "t"}, {"start_from": "worst"}, "start_from: 'worst'"),
    (BenchConfig, {}, {}, "tasks: Field required"),
    (TrainConfig, TRAIN_REQUIRED, {"lora_rank": 8}, "lora_rank: unknown key"),
    (TrainConfig, TRAIN_REQUIRED, {"epochs": "one"}, "epochs: 'one'"),
    (SimSettings, {}, {"executor": "slurm"}, "executor: 'slurm': Input should be 'local' or "
     "'ray'"),
]


@pytest.mark.parametrize(("model", "base", "change", "message"), BAD,
                         ids=[f"{m.__name__}-{next(iter(c), 'missing')}" for m, _, c, _ in BAD])
def test_unknown_keys_and_wrong_types_name_the_key(tmp_path, model, base, change, message):
    path = tmp_path / "settings.yaml"
    path.write_text(yaml.safe_dump({**base, **change}), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"settings\.yaml") as info:
        load(model, path)
    assert message in str(info.value)


def test_yaml_floats_without_a_dot_just_work(tmp_path):
    path = tmp_path / "stage.yaml"
    path.write_text("learning_rate: 1e-5\n", encoding="utf-8")  # YAML 1.1 reads a string
    assert TrainConfig.load(path, **TRAIN_REQUIRED).learning_rate == 1e-5


def test_nested_dataclasses_stay_hashable_dataclasses():
    synth = SynthConfig.model_validate({"int_sampling": {"temperature": 0.2}})
    assert type(synth.int_sampling) is SamplingParams and hash(synth) == hash(synth)
    assert dataclasses.replace(synth.int_sampling, seed=None) == SamplingParams(0.2)
    assert {synth.int_sampling: 1}[SamplingParams(temperature=0.2)] == 1


def test_sim_settings_defaults_are_the_evaluators():
    sim = SimSettings()
    assert sim.sim_config() == SimConfig()
    assert SimSettings(fsm=True, cache=False, sandbox=False).sim_config() == SimConfig(
        fsm_coverage=True, result_cache=False, sandbox=False)


def _flagged_commands():
    """(command path, model, flags) of every command built with ``with_flags``."""
    import typer.main

    root = typer.main.get_command(app)
    found = []

    def walk(command, path):
        callback = getattr(command, "callback", None)
        settings = getattr(callback, "flags", None) or getattr(
            getattr(callback, "__wrapped__", None), "flags", None)
        if settings is not None:
            found.append((path, command, *settings))
        if hasattr(command, "list_commands"):  # a group (the root one is lazy)
            ctx = typer.Context(command)
            for name in command.list_commands(ctx):
                walk(command.get_command(ctx, name), [*path, name])

    walk(root, [])
    return found


def test_cli_defaults_are_the_models_defaults():
    """No default is written twice: every settings flag's default is its field's."""
    commands = _flagged_commands()
    assert {" ".join(p) for p, *_ in commands} >= {"bench", "synth", "train", "pipeline",
                                                   "model serve"}
    for path, command, model, flags in commands:
        params = {p.name: p for p in command.params}
        for flag in flags:
            assert isinstance(flag, Flag)
            default = params[flag.param].default
            expected = flag.default(model)
            assert default == expected or (default is None and expected in ((), None)), (
                path, flag.key, default, expected)


def test_close_and_formal_share_their_budget_flags():
    """--cover-depth, --prove-depth and --prove-budget are written once
    (cli/formal_opts.py); each command's default is its own settings' field."""
    import typer.main

    from llm4cov.cli import close_cmd, formal_cmd
    from llm4cov.close.model import CloseSettings
    from llm4cov.formal.closure import FormalConfig

    def options(module):
        holder = typer.Typer()
        module.register(holder)
        command = typer.main.get_group(holder).commands[module.__name__[12:-4]]
        return {p.opts[0]: (p.default, p.help, p.min)
                for p in command.params if p.opts[0] in ("--cover-depth", "--prove-depth",
                                                        "--prove-budget")}

    close, formal = options(close_cmd), options(formal_cmd)
    assert close == {
        "--cover-depth": (CloseSettings().cover_depth,
                          "formal: BMC depth of the cover job, clock cycles.", 1),
        "--prove-depth": (CloseSettings().prove_depth,
                          "formal: k of the k-induction prove jobs.", 1),
        "--prove-budget": (CloseSettings().prove_budget_s,
                           "formal: Seconds for all prove jobs of one analysis: per job its "
                           "wall seconds or, if fewer, its CPU seconds (no round starts after "
                           "them).", 0.0)}
    defaults = FormalConfig()
    assert formal == {flag: ((defaults.cover_depth, defaults.prove_depth,
                              defaults.prove_budget_s)[i], text.removeprefix("formal: "), low)
                      for i, (flag, (_, text, low)) in enumerate(close.items())}


def test_gen_and_close_share_no_html():
    import inspect

    from llm4cov.cli import close_cmd, gen_cmd, report_opts

    for command in (gen_cmd.gen, close_cmd.close):
        assert inspect.signature(command).parameters["no_html"].default is report_opts.NO_HTML
    assert (report_opts.NO_HTML.default, report_opts.NO_HTML.help) == (
        False, "Skip the HTML report.")


def _printed(argv, capsys):
    assert main([*argv, "--print-config"]) == 0
    return yaml.safe_load(capsys.readouterr().out)


def test_print_config_without_flags_shows_the_model_defaults(capsys, tmp_path):
    assert _printed(["bench", "--tasks", "t.jsonl"], capsys) == to_mapping(
        BenchConfig(tasks="t.jsonl"))
    assert _printed(["synth", "--stage", "1"], capsys) == {
        "synth": to_mapping(stage_preset(1)), "sim": to_mapping(SimSettings()), "policies": {}}
    train = ["train", *(a for k, v in TRAIN_REQUIRED.items() for a in (f"--{k}", v))]
    assert _printed(train, capsys) == to_mapping(TrainConfig(**TRAIN_REQUIRED))
    smoke = EXAMPLES / "pipeline_smoke.yaml"
    assert _printed(["pipeline", "--config", str(smoke)], capsys) == to_mapping(
        load_config(smoke))


def test_gen_prints_one_sample_s_settings(capsys, tmp_path):
    shown = _printed(["gen", str(EXAMPLES / "traffic_fsm"), "--out", str(tmp_path / "o"),
                      "--rounds", "2", "--no-fsm"], capsys)
    assert shown["rounds"] == 2 and shown["tasks"] == "local/traffic_light"
    sim = {k: v for k, v in to_mapping(SimSettings()).items() if k != "workers"}
    assert shown["sim"] == {**sim, "fsm": False}  # gen runs one simulation at a time
    assert "samples" not in shown and "max_sim_calls" not in shown  # not one run's settings
    assert not (tmp_path / "o").exists()  # nothing run


def test_sim_and_formal_print_their_settings(capsys):
    rtl = str(EXAMPLES / "alu_comb")
    assert _printed(["sim", "--rtl", rtl, "--tb", "tb.sv", "--no-fsm"], capsys) == {
        **to_mapping(SimSettings()), "fsm": False}
    shown = _printed(["formal", "--rtl", rtl, "--cover-depth", "5"], capsys)
    assert shown["formal"]["cover_depth"] == 5 and shown["sim"] == to_mapping(SimSettings())


def test_flags_override_the_file_and_defaults_do_not(capsys, tmp_path):
    path = tmp_path / "bench.yaml"
    path.write_text("tasks: t.jsonl\nsamples: 2\nsim: {workers: 3, fsm: true}\n",
                    encoding="utf-8")
    shown = _printed(["bench", "--config", str(path), "--samples", "5", "--set",
                      "sim.seed=7", "--no-fsm", "--executor", "ray"], capsys)
    assert shown["samples"] == 5 and shown["rounds"] == 3
    assert shown["sim"] == {**to_mapping(SimSettings()), "workers": 3, "fsm": False,
                            "seed": 7, "executor": "ray"}
    assert main(["bench", "--config", str(path), "--set", "sim.wrkers=1"]) == 2
    assert "sim.wrkers: unknown key; valid: address" in capsys.readouterr().err


def test_the_pipeline_takes_the_executor_from_its_flags(capsys):
    shown = _printed(["pipeline", "--config", str(EXAMPLES / "pipeline_smoke.yaml"),
                      "--executor", "ray", "--address", "auto"], capsys)
    assert (shown["sim"]["executor"], shown["sim"]["address"], shown["sim"]["workers"]) == (
        "ray", "auto", 2)
    config = load_config(EXAMPLES / "pipeline_smoke.yaml", sim={"executor": "ray"})
    bench = config.bench.config(config.bench.modes[0], "m", None, config.sim)
    assert bench.sim.executor == "ray" and bench.sim.workers == 2


def test_cli_modules_do_not_use_dunder_import():
    assert not [p.name for p in (REPO / "src/llm4cov/cli").glob("*.py")
                if "__import__" in Path(p).read_text(encoding="utf-8")]


def test_cli_command_functions_are_short():
    """A command builds its settings from flags and calls into the package: no command
    function is longer than ~40 lines (docstring aside)."""
    import ast

    long = []
    for path in sorted((REPO / "src/llm4cov/cli").glob("*_cmd.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef):
                doc = node.body[0] if ast.get_docstring(node) else None
                lines = node.end_lineno - node.lineno + 1
                lines -= (doc.end_lineno - doc.lineno + 1) if doc else 0
                if lines > 42:
                    long.append(f"{path.name}:{node.name} ({lines} lines)")
    assert not long


@pytest.mark.parametrize(("argv", "message"), [
    (["bench", "--print-config", "--samples", "9", "report", "RUN"],
     "--print-config, --samples: option(s) of `llm4cov bench` do not apply to `bench report`"),
    (["synth", "--stage", "9", "config", "--stage", "0"],
     "--stage: option(s) of `llm4cov synth` do not apply to `synth config`"),
    (["bench", "--tasks", "t.jsonl", "--print-config", "--set", "model=[1"],
     "override 'model=[1': the value is not valid YAML"),
    (["synth", "config", "--stage", "0", "--set", "int_sampling.top_p=5"],
     "int_sampling: top_p must be between 0 and 1 (got 5.0)"),
    (["synth", "--stage", "0", "--print-config", "--set", "trans_sampling.max_tokens=0"],
     "trans_sampling: max_tokens must be >= 1 (got 0)"),
    (["synth", "--stage", "1", "--set", "stage=0", "--print-config"],
     "stage 0 in --set stage=0, flags differs from --stage 1"),
])
def test_bad_command_lines_are_one_line_errors_that_run_nothing(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize("text", ["false\n", "[]\n", "0\n", "''\n", "- a\n"])
def test_a_config_file_that_is_not_a_mapping_is_refused(text, tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match="expected a mapping of settings"):
        read_mapping(path)
    (tmp_path / "empty.yaml").write_text("# nothing\n", encoding="utf-8")
    assert read_mapping(tmp_path / "empty.yaml") == {}


@pytest.mark.parametrize(("values", "message"), [
    ({"samples": True}, "samples: True: expected a number, not a boolean"),
    ({"sim": {"seed": False}}, "sim.seed: False: expected a number, not a boolean"),
    ({"limit": True, "temperature": False},
     "limit: True: expected a number, not a boolean; "
     "temperature: False: expected a number, not a boolean"),
])
def test_a_boolean_is_not_a_number(values, message):
    with pytest.raises(ConfigError) as info:
        validate(BenchConfig, {"tasks": "t.jsonl", **values})
    assert str(info.value) == f"config: {message}"
    assert validate(BenchConfig, {"tasks": "t.jsonl", "syntax_rules": True}).syntax_rules


def test_a_key_given_twice_is_refused_with_its_line(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text("samples: 1\nsim:\n  seed: 2\n  seed: 3\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="line 4: key 'seed' given twice in one mapping"):
        read_mapping(path)
    assert main(["bench", "--config", str(path), "--print-config"]) == 2
    assert capsys.readouterr().err == (f"error: {path}: line 4: key 'seed' given twice in "
                                       "one mapping\n")
    path.write_text("samples: 1\nsim: {seed: 2}\nrounds: 2\n", encoding="utf-8")
    assert read_mapping(path) == {"samples": 1, "sim": {"seed": 2}, "rounds": 2}


def test_a_config_file_that_is_not_utf8_is_named(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_bytes(b"samples: \xff\n")
    assert main(["bench", "--config", str(path), "--print-config"]) == 2
    assert f"{path}: not UTF-8 text (byte 9" in capsys.readouterr().err


def test_synth_print_config_reads_back_and_sets_the_simulator(capsys, tmp_path):
    shown = _printed(["synth", "--stage", "0", "--set", "sim.workers=2", "--set",
                      "selection.candidates=3"], capsys)
    assert shown["sim"]["workers"] == 2 and shown["synth"]["selection"]["candidates"] == 3
    path = tmp_path / "synth.yaml"
    path.write_text(yaml.safe_dump(shown), encoding="utf-8")
    assert _printed(["synth", "--stage", "0", "--config", str(path)], capsys) == shown
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text("synth: {}\nselection: {candidates: 2}\n", encoding="utf-8")
    assert main(["synth", "--stage", "0", "--config", str(mixed), "--print-config"]) == 2
    assert "give either synthesis keys or the sections synth, sim, policies, not both" in \
        capsys.readouterr().err


def test_bench_takes_its_tasks_from_set(capsys):
    assert _printed(["bench", "--set", "tasks=t.jsonl"], capsys)["tasks"] == "t.jsonl"


@pytest.mark.parametrize(("run_json", "message"), [
    ("not json", "not a valid synth run record (Expecting value"),
    ('{"config": {"stage": 0}}', "not a valid synth run record (missing 'identity')"),
    ('{"config": {"stage": 7}, "identity": {}}', "config: stage must be one of (0, 1, 2)"),
])
def test_synth_export_of_a_broken_run_record_names_it(run_json, message, tmp_path, capsys):
    (tmp_path / "run.json").write_text(run_json, encoding="utf-8")
    assert main(["synth", "export", str(tmp_path), "--out", str(tmp_path / "sft")]) == 2
    err = capsys.readouterr().err
    assert message in err and "run.json" in err
    assert not (tmp_path / "sft").exists()


class _DocBase(Settings):
    inherited: int = 1
    """From the base.

    Second paragraph."""


class _DocChild(_DocBase):
    class Inner(Settings):
        deep: int = 0
        """Nested class field."""

    own: int = 2
    """Own field."""
    bare: int = 3


def test_field_doc_reads_attribute_docstrings_through_the_mro():
    from llm4cov.exec.settings import SimSettings

    assert field_doc(SimSettings, "seed") == "Simulator seed (+verilator+seed)."
    assert field_doc(_DocChild, "own") == "Own field."
    assert field_doc(_DocChild, "inherited") == "From the base.\n\nSecond paragraph."
    assert field_doc(_DocChild.Inner, "deep") == "Nested class field."
    assert field_doc(_DocChild, "bare") is None
    assert field_doc(_DocChild, "absent") is None
