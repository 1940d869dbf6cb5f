"""The model's C++ compiler (``SimConfig.cxx``, ``--cxx``): checked names, part of the
result, and with clang (where installed) the same observation as g++'s with clang's own
precompiled runtime header."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, example_task
from llm4cov.exec.settings import SimSettings
from llm4cov.sim.config import SimConfig
from llm4cov.sim.safety.host import ToolchainError

CLANG = shutil.which("clang++")
needs_clang = pytest.mark.skipif(CLANG is None, reason="clang++ is not installed "
                                 "(Debian: apt install clang)")


@pytest.mark.parametrize("name", ["clang++ -v", "../bin/g++", "", "-O2", "c++;id"])
def test_a_compiler_is_a_command_name(name):
    with pytest.raises(ValueError, match="cxx must be a command name"):
        SimConfig(cxx=name)


def test_the_compiler_enters_a_runs_identity_only_when_not_the_default():
    assert "cxx" not in SimSettings().identity()
    assert SimSettings(cxx="clang++").identity()["cxx"] == "clang++"
    assert SimSettings(cxx="clang++").sim_config().cxx == "clang++"


def test_llm4cov_cxx_sets_the_commands_default_and_the_identity_says_so(monkeypatch):
    from llm4cov.util.settings import ConfigError, load

    monkeypatch.setenv("LLM4COV_CXX", "clang++")
    settings = load(SimSettings)
    assert settings.cxx == "clang++" and settings.identity()["cxx"] == "clang++"
    assert load(SimSettings, flags={"cxx": "c++"}).cxx == "c++"  # a flag still wins
    assert SimConfig().cxx == "c++"  # the library's default does not read it
    monkeypatch.setenv("LLM4COV_CXX", "clang++ -v")
    with pytest.raises(ConfigError, match=r"'clang\+\+ -v' \(from \$LLM4COV_CXX\)"):
        load(SimSettings)
    monkeypatch.setenv("LLM4COV_CXX", "  ")  # blank: the default
    assert "cxx" not in load(SimSettings).identity()


@pytest.mark.requires_verilator
def test_a_missing_compiler_is_a_toolchain_error_and_exit_3(tmp_path):
    from llm4cov.sim.backends.verilator import VerilatorBackend

    with pytest.raises(ToolchainError, match=r"C\+\+ compiler 'no-such-cxx' .* not found"):
        VerilatorBackend(SimConfig(cxx="no-such-cxx"))
    tb = tmp_path / "tb.sv"
    tb.write_text("module tb; endmodule\n")
    done = subprocess.run(
        [sys.executable, "-c", "from llm4cov.cli.app import main; raise SystemExit(main())",
         "sim", str(EXAMPLES / "alu_comb"), "--tb", str(tb), "--cxx", "no-such-cxx"],
        capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert "C++ compiler 'no-such-cxx' (--cxx) not found" in done.stderr


@pytest.mark.requires_verilator
@needs_clang
@pytest.mark.heavy
def test_clang_gives_the_observation_of_gcc_with_its_own_header(evaluator):
    """alu_comb with a random stimulus: the same status, coverage points and log as the
    default compiler; the clang result is not the g++ one from the result cache (the
    compiler is part of the key), and the build store holds a clang header beside g++'s
    (built from the runtime's verilated_cov.h, see ArtifactStore._pch_source)."""
    from llm4cov.policies.random_stimulus import random_testbench
    from llm4cov.sim.cache import BUILD_DIR, cache_root
    from llm4cov.sim.evaluator import Evaluator

    task = example_task("alu_comb")
    tb = random_testbench(task, seed=3, length=30)
    gcc = evaluator.evaluate(task, tb)
    clang_eval = Evaluator(SimConfig(cxx="clang++"))
    clang = clang_eval.evaluate(task, tb)
    assert gcc.sim_pass, gcc.log
    assert not clang.cached
    assert clang.comparable() == gcc.comparable()
    headers = Path(cache_root(SimConfig())) / BUILD_DIR / "pch"
    magic = [p.read_bytes()[:4] for p in headers.glob("*/llm4cov_pch.h.gch")]
    assert magic.count(b"CPCH") == 1 and b"gpch" in magic  # clang's and g++'s formats
    assert clang_eval.evaluate(task, tb).cached


@pytest.mark.requires_verilator
@needs_clang
@pytest.mark.heavy
def test_clang_builds_with_a_fetched_verilator_configured_for_gcc(evaluator_5052):
    """Verilator 5.052's makefile was configured for g++ (``-fcoroutines``, which clang
    refuses): with clang the build still passes and observes what g++'s does."""
    from llm4cov.policies.random_stimulus import random_testbench
    from llm4cov.sim.evaluator import Evaluator

    task = example_task("alu_comb")
    tb = random_testbench(task, seed=4, length=20)
    gcc = evaluator_5052.evaluate(task, tb)
    clang = Evaluator(dataclasses.replace(evaluator_5052.config, cxx="clang++")).evaluate(
        task, tb)
    assert gcc.sim_pass, gcc.log
    assert clang.comparable() == gcc.comparable()


@needs_clang
def test_the_make_call_names_the_compiler_and_clangs_needs():
    """g++ (the default): the runtime header in -CFLAGS, the wheel's makefile as it is.
    clang: the header through the model's flags only (the runtime objects keep -Os,
    and clang refuses a header built at another optimization), libatomic, no warnings."""
    from llm4cov.sim.backends.verilator.build import (
        CLANG_MAKE,
        PCH_INCLUDE,
        cflags,
        includes_pch,
        make_command,
    )

    gcc, clang = SimConfig(), SimConfig(cxx="clang++")
    assert PCH_INCLUDE in cflags(gcc) and PCH_INCLUDE not in cflags(clang)
    gcc_make, clang_make = make_command(gcc, 2), make_command(clang, 2)
    assert {"CXX=c++", "LINK=c++", "OPT_FAST=-O0", "OPT_SLOW=-O0"} <= set(gcc_make)
    assert not set(CLANG_MAKE) & set(gcc_make)
    assert {"CXX=clang++", "LINK=clang++", f"OPT_FAST=-O0 {PCH_INCLUDE}",
            f"OPT_SLOW=-O0 {PCH_INCLUDE}", *CLANG_MAKE} <= set(clang_make)
    # Verilator's own optimization (cxx_opt None) differs between FAST and SLOW: clang
    # then compiles without the precompiled header rather than against a mismatched one
    plain = make_command(SimConfig(cxx="clang++", cxx_opt=None), 2)
    assert not any(PCH_INCLUDE in word for word in plain)
    assert PCH_INCLUDE not in cflags(SimConfig(cxx="clang++", cxx_opt=None))
    assert (includes_pch(gcc), includes_pch(clang)) == (True, True)
    assert not includes_pch(SimConfig(cxx="clang++", cxx_opt=None))  # nor precompiled
