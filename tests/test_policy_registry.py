"""The policy registry (issue 43): names, factories and typed options in one place, read
by gen, bench and the pipeline; a new policy is one module plus one registration."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest
import yaml
from pydantic import Field

from conftest import EXAMPLES
from llm4cov.bench.config import BenchConfig
from llm4cov.bench.session import make_policies
from llm4cov.cli.app import main
from llm4cov.pipeline.config import PipelineConfigError, load_config
from llm4cov.pipeline.steps import Session
from llm4cov.policies import Generation, GenerationRequest, get_policy, make_policy, registry
from llm4cov.policies.options import (
    FormalOptions,
    LocalOptions,
    OpenAIChatOptions,
    RandomOptions,
)
from llm4cov.policies.registry import (
    builtin_models,
    policy_for,
    policy_names,
    register_policy,
)
from llm4cov.util.settings import ConfigError, Settings, load

HEAVY = ("numpy", "pyslang", "torch", "openai", "jinja2", "transformers")


class EchoOptions(Settings):
    """A tiny policy's own options."""

    text: str = "module tb; initial $finish; endmodule\n"
    """The testbench it answers with."""
    length: int = Field(1, ge=1)
    """How many times the text is repeated."""


class EchoPolicy:
    """Answers every request with its option ``text`` ``length`` times."""

    name = "echo"

    def __init__(self, options: EchoOptions) -> None:
        self.options = options

    def generate(self, request: GenerationRequest) -> Generation:
        return Generation(text=self.options.text * self.options.length, model=self.name)

    def describe(self) -> dict:
        return {"model": self.name, **self.options.model_dump()}


@pytest.fixture
def echo(monkeypatch):
    """The registry with the tiny ``echo`` policy registered (the one line a new policy
    needs), restored afterwards."""
    monkeypatch.setattr(registry, "_POLICIES", dict(registry._POLICIES))
    register_policy("echo", lambda model, base_url, options: EchoPolicy(options),
                    EchoOptions, builtin=True)


def test_a_registered_policy_is_built_with_its_options(echo):
    assert "echo" in builtin_models() and "echo" in policy_names()
    policy = get_policy("echo", length=2)
    assert isinstance(policy, EchoPolicy) and policy.options.length == 2
    assert make_policy("echo", None, {"echo": {"text": "x"}}).generate(
        GenerationRequest(task=None, messages=[])).text == "x"  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lenght: unknown key; valid: length, text"):
        get_policy("echo", lenght=2)


def test_bench_config_validates_and_records_a_policy_s_options(echo):
    config = BenchConfig(tasks="t.jsonl", model="echo", policies={"echo": {"length": "3"}})
    assert config.policies == {"echo": {"length": 3}}  # normalised by the options model
    assert hash(config) != hash(BenchConfig(tasks="t.jsonl", model="echo"))  # hashable
    assert make_policies(config)["echo"].options.length == 3
    assert config.identity()["policies"] == {"echo": {"length": 3}}
    assert config.command().endswith("--set policies.echo.length=3")
    assert load(BenchConfig, overrides=["policies.echo.length=4"], base={
        "tasks": "t", "model": "echo"}).policies == {"echo": {"length": 4}}
    with pytest.raises(ConfigError, match=r"policies: echo: length: 0: Input should be "
                                          r"greater than or equal to 1"):
        load(BenchConfig, base={"tasks": "t", "policies": {"echo": {"length": 0}}})
    with pytest.raises(ConfigError, match="unknown policy 'ehco'; valid: echo, formal, "
                                          "local, openai, random"):
        load(BenchConfig, base={"tasks": "t", "policies": {"ehco": {}}})
    with pytest.raises(ConfigError, match="policies: echo: length: True: expected a number"):
        load(BenchConfig, base={"tasks": "t", "policies": {"echo": {"length": True}}})


def test_no_policy_options_keep_the_old_identity_and_command():
    plain = BenchConfig(tasks="t.jsonl", policies={"random": {}})
    assert plain.policies == {} and "policies" not in plain.identity()
    assert plain.identity() == BenchConfig(tasks="t.jsonl").identity()
    assert plain.command() == "llm4cov bench --tasks t.jsonl --model random --mode agentic " \
        "--samples 5"
    longer = BenchConfig(tasks="t.jsonl", policies={"random": {"length": 400}})
    assert make_policies(longer)["random"].describe()["length"] == 400


def _gen_settings(capsys, tmp_path, *argv):
    assert main(["gen", str(EXAMPLES / "traffic_fsm"), "--out", str(tmp_path / "o"), *argv,
                 "--print-config"]) == 0
    return yaml.safe_load(capsys.readouterr().out)


def test_gen_reads_the_stimulus_length_into_the_policy_s_options(echo, capsys, tmp_path):
    assert _gen_settings(capsys, tmp_path)["policies"] == {}
    assert _gen_settings(capsys, tmp_path, "--stimulus-length", "30")["policies"] == {
        "random": {"length": 30}}
    assert _gen_settings(capsys, tmp_path, "--model", "formal-vectors", "--stimulus-length",
                         "7")["policies"] == {"formal": {"length": 7}}
    assert _gen_settings(capsys, tmp_path, "--model", "echo", "--stimulus-length",
                         "5")["policies"] == {"echo": {"length": 5}}
    # a served model has no length: the flag is ignored, as before
    assert _gen_settings(capsys, tmp_path, "--model", "gpt-x", "--base-url", "http://x/v1",
                         "--stimulus-length", "5")["policies"] == {}


def _pipeline(tmp_path, **changes):
    path = tmp_path / "stages.yaml"
    path.write_text(yaml.safe_dump({
        "out": "runs/p", "init": "Qwen/Qwen3-4B-Instruct-2507", "repos": "repos.jsonl",
        "bench": {"tasks": "t.jsonl"}, **changes}), encoding="utf-8")
    return load_config(path)


def test_the_pipeline_reads_its_roles_options_from_the_registry(echo, tmp_path):
    config = _pipeline(tmp_path, teacher={"model": "echo"},
                       policies={"echo": {"length": 2}, "local": {"batch_size": 4}})
    teacher = Session(config, None).teacher()  # type: ignore[arg-type]
    assert isinstance(teacher, EchoPolicy) and teacher.options.length == 2
    assert config.global_identity()["policies"] == {"echo": {"length": 2},
                                                    "local": {"batch_size": 4}}
    bench = config.bench.config(config.bench.modes[0], "echo", None, config.sim,
                                config.policies)
    assert make_policies(bench)["echo"].options.length == 2
    assert config.student_policies() == config.policies
    int8 = _pipeline(tmp_path, student={"dtype": "int8"}, policies={"local": {"cache": "dynamic"}})
    assert int8.student_policies() == {"local": {"cache": "dynamic", "dtype": "int8"}}
    assert "policies" not in _pipeline(tmp_path).global_identity()
    with pytest.raises(PipelineConfigError, match="policies: echo: length"):
        _pipeline(tmp_path, policies={"echo": {"length": -1}})
    with pytest.raises(PipelineConfigError, match=r"student\.dtype or policies\.local\.dtype"):
        _pipeline(tmp_path, student={"dtype": "int8"}, policies={"local": {"dtype": "fp32"}})


def _synth_settings(capsys, *argv):
    assert main(["synth", "--stage", "0", *argv, "--print-config"]) == 0
    return yaml.safe_load(capsys.readouterr().out)


def test_synth_checks_its_policies_section_against_the_registry(echo, tmp_path, capsys):
    assert _synth_settings(capsys)["policies"] == {}
    assert _synth_settings(capsys, "--set", "policies.echo.length=2")["policies"] == {
        "echo": {"length": 2}}
    path = tmp_path / "synth.yaml"
    path.write_text(yaml.safe_dump({"synth": {"seed": 1},
                                    "policies": {"random": {"length": "400"}}}))
    shown = _synth_settings(capsys, "--config", str(path))
    assert (shown["synth"]["seed"], shown["policies"]) == (1, {"random": {"length": 400}})
    assert main(["synth", "--stage", "0", "--set", "policies.echo.length=0",
                 "--print-config"]) == 2
    assert capsys.readouterr().err == (
        "error: --set policies.echo.length=0, flags: policies: echo: length: 0: Input "
        "should be greater than or equal to 1\n")
    assert main(["synth", "--stage", "0", "--set", "policies.ehco.length=1",
                 "--print-config"]) == 2
    assert capsys.readouterr().err == (
        "error: --set policies.ehco.length=1, flags: policies: unknown policy 'ehco'; "
        "valid: echo, formal, local, openai, random\n")


@pytest.mark.requires_verilator
def test_synth_makes_its_roles_with_their_options_and_records_them(echo, tmp_path):
    repos = tmp_path / "repos.jsonl"
    repos.write_text("")
    base = ["synth", "--stage", "0", "--repos", str(repos), "--teacher", "echo", "-q"]
    out = tmp_path / "run"
    assert main([*base, "--out", str(out), "--set", "policies.echo.length=2"]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["identity"]["policies"] == {"echo": {"length": 2}}
    assert run["policies"]["int"]["length"] == run["policies"]["trans"]["length"] == 2
    assert main([*base, "--out", str(out), "--set", "policies.echo.length=3"]) == 2  # refused
    assert main([*base, "--out", str(out), "--set", "policies.echo.length=2"]) == 0  # resumes
    plain = tmp_path / "plain"
    assert main([*base, "--out", str(plain)]) == 0  # no options: the identity as before
    assert set(json.loads((plain / "run.json").read_text())["identity"]) == {"config",
                                                                              "models"}


def test_model_names_find_their_policy(monkeypatch):
    assert [policy_for(m).name for m in ("random", "random-flat", "random-vectors", "formal",
                                         "formal-vectors", "local:ckpt", "smollm2-135m",
                                         "Qwen/Qwen3-4B")] == [
        "random", "random", "random", "formal", "formal", "local", "local", "openai"]
    assert policy_for("smollm2-135m", "http://x/v1").name == "openai"  # a served name
    monkeypatch.setattr(registry, "_POLICIES", dict(registry._POLICIES))
    register_policy("mine", lambda *_: None, claims=lambda model, url: model.startswith("my-"))
    assert policy_for("my-model").name == "mine"  # a later rule is tried first
    with pytest.raises(ValueError, match="random already name another policy"):
        register_policy("other", lambda *_: None, models=("random",))


@pytest.mark.parametrize(("options", "module", "cls", "skip"), [
    (RandomOptions, "llm4cov.policies.random_stimulus", "RandomStimulusPolicy", ()),
    (FormalOptions, "llm4cov.policies.formal", "FormalPolicy",
     ("cover_depth", "prove_depth", "prove_budget_s", "escalate_budget_s", "continue_steps",
      "continue_budget_s")),
    (OpenAIChatOptions, "llm4cov.policies.openai_chat", "OpenAIChatPolicy", ()),
    (LocalOptions, "llm4cov.policies.local_transformers", "LocalTransformersPolicy", ()),
])
def test_options_defaults_are_the_policy_classes_own(options, module, cls, skip):
    """The options model repeats no default wrongly: each field's default is the policy
    class's keyword default (the formal budgets are None: the policy's own config)."""
    import importlib

    signature = inspect.signature(getattr(importlib.import_module(module), cls))
    for name, field in options.model_fields.items():
        if name in skip:
            assert field.default is None
            continue
        assert field.default == signature.parameters[name].default, (cls, name)


def test_formal_budgets_go_on_the_policy_s_own_config():
    default = get_policy("formal").config
    deeper = get_policy("formal", cover_depth=40, prove_budget_s=5).config
    assert (deeper.cover_depth, deeper.prove_budget_s) == (40, 5)
    assert deeper.escalate_budget_s == default.escalate_budget_s
    assert deeper.prove_depth == default.prove_depth


def test_the_registry_and_option_checks_import_no_heavy_module():
    code = (
        "import json, sys\n"
        "import llm4cov.policies\n"
        "from llm4cov.bench.config import BenchConfig\n"
        "BenchConfig(tasks='t', policies={'random': {'length': 3}, 'formal': "
        "{'cover_depth': 9}, 'local': {'dtype': 'int8'}, 'openai': {'timeout_s': 5}})\n"
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
