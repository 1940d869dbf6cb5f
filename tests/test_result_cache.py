"""The on-disk result cache: key, what is stored, bound, concurrency, failures, CLI."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from conftest import EXAMPLES, example_task
from llm4cov.cli.app import main
from llm4cov.sim.cache import (
    ENV_VAR,
    ResultCache,
    cache_root,
    cacheable,
    result_key,
)
from llm4cov.sim.config import SPEED_ONLY_FIELDS, SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import EndReason, Observation, Status
from llm4cov.tasks.model import SourceFile

TASK = example_task("alu_comb")
TB = SourceFile(name="tb.sv", content="module tb; endmodule\n")
AUX = [SourceFile(name="data.hex", content="00\n")]
#: A testbench the pre-check rejects (undeclared `c` on line 3): no Verilator build.
BROKEN_TB = (
    "module tb;\n  logic [3:0] a, b; logic [1:0] op; wire [3:0] y; wire carry, zero;\n"
    "  initial begin c = 1; $finish; end\n"
    "  alu4 dut (.a(a), .b(b), .op(op), .y(y), .carry(carry), .zero(zero));\nendmodule\n"
)


def key(task=TASK, tb=TB, aux=AUX, instance="dut", config=None, simulator="5.048", z3=True,
        compiler="c++ (GCC) 12.2.0"):
    return result_key(task, tb, aux, instance, config or SimConfig(), simulator, z3, compiler)


def obs(status=Status.SUCCESS, **fields) -> Observation:
    return Observation(status=status, log="== simulation output ==\nok", **fields)


def test_key_is_stable_and_changes_with_every_input():
    base = key()
    assert key() == base and len(base) == 64
    changed = [
        key(tb=TB.model_copy(update={"content": "module tb; endmodule // x\n"})),
        key(tb=TB.model_copy(update={"name": "tb2.sv"})),
        key(aux=[SourceFile(name="data.hex", content="01\n")]),
        key(aux=[]),
        key(instance=None),
        key(task=TASK.model_copy(update={"dut_module_name": "other"})),
        key(task=example_task("hier_acc")),
        key(simulator="5.050"),
        key(z3=False),
        key(config=SimConfig(seed=2)),
        key(config=SimConfig(sim_time_limit_s=0.02)),
        key(config=SimConfig(precheck=False)),
        key(config=SimConfig(cxx_opt="-O2")),
    ]
    assert len({base, *changed}) == len(changed) + 1


def test_speed_only_fields_do_not_change_the_key(tmp_path):
    speed = SimConfig(build_jobs=7, keep_workdir=True, workdir_root=str(tmp_path),
                      result_cache=False, cache_dir=str(tmp_path), cache_max_bytes=10,
                      ccache=True, reuse_runtime=False, runtime_pch=False, fast_linker=False,
                      split_units=False, progress_file=str(tmp_path / "step"))
    changed = {f.name for f in dataclasses.fields(SimConfig)
               if getattr(speed, f.name) != getattr(SimConfig(), f.name)}
    assert changed == SPEED_ONLY_FIELDS
    assert key(config=speed) == key()


@pytest.mark.parametrize(("observation", "expected"), [
    (obs(), True),
    (obs(Status.COMPILE_ERROR), True),
    (obs(Status.REJECTED), True),
    (obs(Status.NO_COVERAGE), True),
    (obs(Status.RUNTIME_ERROR, end_reason=EndReason.FATAL), True),
    (obs(Status.TIMEOUT, end_reason=EndReason.SIM_TIME_LIMIT), True),
    (obs(Status.TIMEOUT, end_reason=EndReason.WALL_TIMEOUT), False),
    (obs(Status.TIMEOUT), False),  # the compile exceeded its wall-clock limit
    (obs(Status.RUNTIME_ERROR, end_reason=EndReason.CRASHED), False),
    (obs(Status.COMPILE_ERROR, tool_error=True), False),
    (Observation(status=Status.COMPILE_ERROR, log="c++: fatal error: Killed signal"), False),
])
def test_only_reproducible_verdicts_are_cacheable(observation, expected):
    assert cacheable(observation) is expected


def test_roundtrip_marks_cached_and_keeps_everything_else(tmp_path):
    cache = ResultCache(tmp_path / "r.sqlite3", max_bytes=10**6)
    stored = obs(notes=["a note"], build_s=1.5, run_s=0.25, tb_error_count=2)
    assert cache.get("k") is None
    cache.put("k", stored)
    hit = cache.get("k")
    assert hit.cached is True
    assert hit.comparable() == stored.comparable()
    assert (hit.build_s, hit.run_s) == (1.5, 0.25)
    assert cache.stats()[0] == 1


def test_oldest_entries_are_evicted_beyond_the_bound(tmp_path):
    cache = ResultCache(tmp_path / "r.sqlite3", max_bytes=10**6)
    cache.put("first", obs())
    entry = cache.stats()[1]
    bounded = ResultCache(tmp_path / "r.sqlite3", max_bytes=2 * entry)
    bounded.put("second", obs())
    bounded.put("third", obs())
    assert bounded.get("first") is None
    assert bounded.get("second") is not None and bounded.get("third") is not None
    assert bounded.stats() == (2, 2 * entry)


def _writer(path: str, worker: int) -> None:
    cache = ResultCache(Path(path), max_bytes=10**8)
    for i in range(20):
        cache.put(f"{worker}-{i}", obs(tb_error_count=i))
        assert cache.get(f"{worker}-{i}").tb_error_count == i


def test_concurrent_processes_share_one_file(tmp_path):
    path = tmp_path / "r.sqlite3"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(path), w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    assert ResultCache(path, 10**8).stats()[0] == 80
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_corrupt_file_is_a_miss_not_an_error(tmp_path, caplog):
    path = tmp_path / "r.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    cache = ResultCache(path, max_bytes=10**6)
    assert cache.get("k") is None
    cache.put("k", obs())  # logged, not raised
    assert "result cache" in caplog.text


def test_location_config_then_environment_then_home(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "env"))
    assert cache_root(SimConfig(cache_dir=str(tmp_path / "cfg"))) == tmp_path / "cfg"
    assert cache_root(SimConfig()) == tmp_path / "env"
    monkeypatch.delenv(ENV_VAR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root(SimConfig()) == tmp_path / "xdg" / "llm4cov"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root(SimConfig()) == tmp_path / "home" / ".cache" / "llm4cov"


@pytest.mark.requires_verilator
def test_cli_serves_repeats_from_the_cache_unless_no_cache(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "cache"))
    tb = tmp_path / "tb.sv"
    tb.write_text(BROKEN_TB)
    args = ["sim", "--rtl", str(EXAMPLES / "alu_comb"), "--tb", str(tb), "--json"]
    runs = []
    for extra in ([], [], ["--no-cache"]):
        assert main([*args, *extra]) == 1
        runs.append(json.loads(capsys.readouterr().out))
    assert [r["status"] for r in runs] == ["compile_error"] * 3
    assert [r["cached"] for r in runs] == [False, True, False]
    assert runs[0]["log"] == runs[1]["log"] == runs[2]["log"]
    assert "tb.sv:3:17: use of undeclared identifier 'c'" in runs[0]["log"]


@pytest.mark.requires_verilator
def test_an_unusable_cache_dir_only_costs_speed(tmp_path):
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    task = example_task("alu_comb")
    tb = BROKEN_TB.replace("c = 1; ", "")
    # no build store either: a plain build, through ccache (as the levers-off builds of
    # test_speed_equivalence) so it recompiles no runtime object another test compiled
    obs = Evaluator(SimConfig(cache_dir=str(not_a_dir), ccache=True)).evaluate(task, tb)
    assert obs.status is Status.SUCCESS, obs.log
    assert not obs.cached and not obs.tool_error
