"""The closure loop: add tests aimed at what the merged regression still misses, until
nothing adds coverage or the budget is spent; crash-safe and resumable.

Schedule (a pure function of the finished steps, so a rerun plans the same steps):

1. **random**: the built-in ``random`` policy at each length of
   ``CloseSettings.lengths`` in turn; step ``k`` uses seed ``seed + k``; a length is
   left after the first test at it that adds no point;
2. **formal** (when the formal tools are installed and warmed up): the merged holes not
   analyzed before go to :func:`llm4cov.formal.analyze` (cover to ``cover_depth``,
   k-induction of ``prove_depth``); the witnesses become one test (phases after a short
   random testbench); repeated while new holes are left, ``formal_rounds`` at most;
3. **continue** (formal ready, ``continue_steps`` > 0), once, right after the first
   analysis (before the second): a continuation of the kept test that covers most from
   the state its simulation ends in, for the holes no proof settled
   (:func:`llm4cov.close.formal_steps.continuation_step`): cover jobs from reset do not
   reach a hole behind a long prefix, the random tests' end states do; a later analysis
   only takes the items the first could not place (its 400-item cap);
4. **model** (with ``--model``): the agent's prompt (:func:`llm4cov.agent.prompt.
   build_messages`) with the kept test that covers most as the current testbench and
   the merged coverage and uncovered items as its result; ``model_tests`` answers at
   most, ending at the second that adds nothing.

A test is kept when it passes simulation and covers a point no earlier kept test
covers; otherwise it is dropped (its record stays, its files are not written). Every
step is one line of ``DIR/steps.jsonl`` (:class:`~llm4cov.util.jsonl.ResultLog`,
fsynced), written after the kept test's files (``tests/<name>/``, ``coverage/<name>.dat``):
a kill at any moment loses at most the step in progress, which a rerun redoes with the
same seed. The budget counts the recorded seconds of finished steps plus this run's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from llm4cov.close.formal_steps import analysis_step, continuation_step
from llm4cov.close.merge import Merged, RunScope, run_points, scope_of
from llm4cov.close.model import CloseSettings, GoalVerdict, Origin, StepRecord
from llm4cov.sim.model.coverage import DesignModules, Point, uncovered_items
from llm4cov.sim.model.exclusions import Rule, split_points
from llm4cov.sim.model.observation import Observation, UncoveredItem
from llm4cov.tasks.model import Task
from llm4cov.util.files import write_text_atomic
from llm4cov.util.jsonl import ResultLog
from llm4cov.util.rundir import RunDirForged, refuse_links, seal, seal_key

if TYPE_CHECKING:
    from llm4cov.sim.config import SimConfig

STEPS = "steps.jsonl"
TESTS = "tests"
COVERAGE = "coverage"
Simulate = Callable[[Task, str], Observation]
"""A simulator call keeping its coverage data (``SimCall(keep_coverage=True)``)."""


@dataclass
class Plan:
    """The next step: its ``source`` and, for random, the ``length``."""

    source: str
    seed: int
    length: int | None = None


@dataclass
class State:
    """The fold of the finished steps (:meth:`observe`): schedule position, merged
    coverage, formal verdicts, elapsed seconds."""

    settings: CloseSettings
    formal_ready: bool
    phase: str = "random"
    length_index: int = 0
    formal_rounds: int = 0
    formal_left: bool = True
    continued: bool = False
    model_tests: int = 0
    model_misses: int = 0
    records: list[StepRecord] = field(default_factory=list)
    merged: Merged = field(default_factory=Merged)
    points: dict[str, dict[str, int]] = field(default_factory=dict)
    analyzed: set[str] = field(default_factory=set)
    verdicts: list[GoalVerdict] = field(default_factory=list)
    root: str = ""
    elapsed_s: float = 0.0
    rtl_error: str | None = None
    """Set (to that step's note) by a test the design's own error kept from compiling:
    no test can pass, the schedule ends."""

    def __post_init__(self) -> None:
        if not self.settings.lengths:
            self._after_random()

    @property
    def step(self) -> int:
        return len(self.records)

    def plan(self) -> Plan | None:
        """The next step, or None when the schedule is done."""
        seed = self.settings.seed + self.step
        if self.phase == "random":
            return Plan("random", seed, self.settings.lengths[self.length_index])
        if self.phase in ("formal", "continue", "model"):
            return Plan(self.phase, seed)
        return None

    def observe(self, record: StepRecord, points: Mapping[str, int] | None) -> None:
        """Fold one finished step (``points``: its test's DUT points when kept)."""
        self.records.append(record)
        self.elapsed_s += record.wall_s
        if record.kept and points is not None:
            self.root = self.root or record.dut_hier
            self.merged.add(record.name, points)
            self.points[record.name] = dict(points)
        self.analyzed.update(record.analyzed)
        self.verdicts.extend(record.verdicts)
        if record.rtl_error:
            self.rtl_error = record.note or "the design does not compile"
            self.phase = "done"
            return
        source = record.origin.source if record.origin else self.phase
        # the phase that made the step; a step written before steps named it came from
        # a schedule without a continuation: an analysis where one is due now
        made = record.phase or ("formal" if self.phase == "continue" else self.phase)
        if source == "random" and self.phase == "random":
            self.length_index += not record.kept
            share = self.settings.random_share * self.settings.budget_s
            later = (self.settings.formal and self.formal_ready) or self.settings.model
            if self.length_index >= len(self.settings.lengths) or (
                    later and self.elapsed_s >= share):
                self._after_random()
        elif self.phase in ("formal", "continue") and made != "continue":
            self.formal_rounds += 1
            self.formal_left = bool(record.analyzed) and (
                self.formal_rounds < self.settings.formal_rounds)
            self.phase = ("continue" if self.settings.continue_steps and not self.continued
                          else "formal" if self.formal_left else self._last())
        elif self.phase == "continue":
            self.continued = True
            self.phase = "formal" if self.formal_left else self._last()
        elif self.phase == "model":
            self.model_tests += 1
            self.model_misses += not record.kept
            if self.model_tests >= self.settings.model_tests or self.model_misses >= 2:
                self.phase = "done"

    def _after_random(self) -> None:
        self.phase = "formal" if self.settings.formal and self.formal_ready else self._last()

    def _last(self) -> str:
        return "model" if self.settings.model else "done"


@dataclass
class Regression:
    """What :func:`run_loop` hands on: the fold of every step, and how the loop ended."""

    state: State
    ended: str  # "complete" | "converged" | "budget" | "stopped" | "rtl_error"


class Closer:
    """Runs the loop of the module docstring for one task into ``out``.

    ``simulate``: a simulator call that keeps coverage data; ``rules``: exclusion rules
    (counting); ``policy``: the model (or None); ``formal_ready``: formal tools usable;
    ``sim_config``: the settings ``simulate`` simulates with (the continuation
    simulates the test it continues again, with a state dump; without them it makes
    no test).
    """

    def __init__(self, task: Task, out: Path, settings: CloseSettings, simulate: Simulate,
                 rules: Sequence[Rule] = (), policy=None, formal_ready: bool = False,
                 on_step: Callable[[StepRecord], None] | None = None,
                 sim_config: SimConfig | None = None) -> None:
        self.task, self.out, self.settings, self.simulate = task, out, settings, simulate
        self.sim_config = sim_config
        self.rules, self.policy, self.on_step = tuple(rules), policy, on_step
        self.sources = {f.name: f.content for f in task.rtl_files}
        self.state = State(settings, formal_ready)
        self.log = ResultLog(out / STEPS, ("step",))
        self.formal_sandbox = True
        from llm4cov.sim.cache import cache_root
        from llm4cov.sim.config import SimConfig as Config

        self.key = seal_key(cache_root(sim_config or Config()))

    # -- resume ---------------------------------------------------------------------
    def resume(self) -> int:
        """Fold the steps already in ``steps.jsonl``; returns how many.

        Raises:
            RunDirForged: the run directory holds a link, a step whose seal does not
                match its record (and, kept, its testbench and coverage data: edited,
                or written on another host or by an older llm4cov), or a step out of
                order (a record repeated or left out).
            pydantic.ValidationError: a step record is malformed.
        """
        refuse_links(self.out)
        for row in self.log.rows():
            record = StepRecord.model_validate(row)
            if record.step != self.state.step or not hmac.compare_digest(
                    record.seal, self._seal(record)):
                raise RunDirForged(
                    f"{self.out / STEPS}: step {record.step} ({record.name or 'no test'}) "
                    "does not match what this host sealed (its record, test or coverage "
                    "data was changed or moved, or another host or an older llm4cov wrote "
                    "it): rerun with another --out")
            self.state.observe(record, self.load_points(record) if record.kept else None)
        return self.state.step

    def _seal(self, record: StepRecord) -> str:
        """:func:`~llm4cov.util.rundir.seal` of a step as its files are now: its record
        (every step: a formal analysis's verdicts are in steps that keep no test; a
        thirty-ninth red team appended one claiming every hole unreachable and the
        resume folded it), with a kept step's testbench and coverage data."""
        body = json.dumps(record.model_dump(mode="json") | {"seal": ""}, sort_keys=True)
        if not record.kept:
            return seal(self.key, body.encode())
        tb = next((p for p in (self.out / TESTS / record.name / "tb.sv",
                               self.out / "pruned" / record.name / "tb.sv") if p.is_file()),
                  None)
        dat = self.out / COVERAGE / f"{record.name}.dat"
        if tb is None or not dat.is_file():
            return ""
        return seal(self.key, body.encode(), tb.read_bytes(), dat.read_bytes())

    def load_points(self, record: StepRecord) -> dict[str, int]:
        dat = (self.out / COVERAGE / f"{record.name}.dat").read_text(
            encoding="utf-8", errors="surrogateescape")
        return run_points(dat, self.scope(record), self.state.root or record.dut_hier)

    def scope(self, record: StepRecord) -> RunScope:
        return scope_of(record.dut_hier, self.sources.keys(), record.rtl_modules,
                        record.tb_modules)

    # -- the loop -------------------------------------------------------------------
    def run(self, stop_after: int | None = None) -> Regression:
        """Run steps until the schedule ends or the budget is spent (``stop_after``:
        at most that many new steps, for tests that stand in for a kill)."""
        done = 0
        while (plan := self.state.plan()) is not None:
            if self.complete():
                return Regression(self.state, "complete")
            if self.state.elapsed_s >= self.settings.budget_s:
                return Regression(self.state, "budget")
            if stop_after is not None and done >= stop_after:
                return Regression(self.state, "stopped")
            record, points = self.run_step(plan)
            record.seal = self._seal(record)
            self.log.append(record.model_dump(mode="json"))
            self.state.observe(record, points)
            done += 1
            if self.on_step:
                self.on_step(record)
        return Regression(self.state, "rtl_error" if self.state.rtl_error else "converged")

    def run_step(self, plan: Plan) -> tuple[StepRecord, dict[str, int] | None]:
        """Make and simulate the test of ``plan`` (a formal step may make none)."""
        start = time.monotonic()
        tb: str | None
        if plan.source == "random":
            tb = self._random_tb(plan)
            record = StepRecord(step=self.state.step, origin=Origin(
                source="random", policy="random", seed=plan.seed, step=self.state.step,
                length=plan.length))
        elif plan.source == "formal":
            record, tb = analysis_step(self, plan)
        elif plan.source == "continue":
            record, tb = continuation_step(self, plan)
        else:
            record, tb = self._model_tb(plan)
        points = None
        if tb is not None:
            record, points = self._simulate(record, tb)
        record.phase = plan.source
        record.wall_s = round(time.monotonic() - start, 3)
        return record, points

    def _random_tb(self, plan: Plan) -> str | None:
        """The ``random`` policy's testbench of ``plan.seed`` and ``plan.length`` (round 0
        of a request: the length is exactly the plan's)."""
        from llm4cov.agent.response import extract_testbench
        from llm4cov.policies import get_policy
        from llm4cov.policies.base import AgentState, GenerationRequest

        policy = get_policy("random", None, length=plan.length or 200)
        answer = policy.generate(GenerationRequest(self.task, [], seed=plan.seed,
                                                   state=AgentState(0)))
        return extract_testbench(answer.text, self.task.dut_module_name)

    def _model_tb(self, plan: Plan) -> tuple[StepRecord, str | None]:
        from llm4cov.agent.prompt import build_messages, syntax_rules
        from llm4cov.agent.response import extract_testbench
        from llm4cov.policies.base import AgentState, GenerationRequest, SamplingParams

        record = StepRecord(step=self.state.step)
        assert self.policy is not None
        current = self.best_testbench()
        obs = self.merged_observation()
        messages = build_messages(self.task, current, obs, syntax_rules())
        request = GenerationRequest(self.task, messages, SamplingParams(seed=plan.seed),
                                    plan.seed, AgentState(1, current, obs))
        answer = self.policy.generate(request)
        record.origin = Origin(source="model", policy=str(answer.model), seed=plan.seed,
                               step=record.step)
        tb = extract_testbench(answer.text, self.task.dut_module_name)
        if tb is None:
            record.note = "the answer holds no testbench"
        return record, tb

    def _simulate(self, record: StepRecord, tb: str) -> tuple[StepRecord, dict[str, int] | None]:
        obs = self.simulate(self.task, tb)
        record.name = f"t{record.step:04d}"
        record.status = obs.status.value
        record.rtl_error = obs.rtl_error
        record.scored_overall = obs.overall()
        record.tb_sha256 = hashlib.sha256(tb.encode("utf-8", "surrogateescape")).hexdigest()
        data = obs.coverage_data
        if not obs.sim_pass or data is None:
            record.note = record.note or (obs.notes[0] if obs.notes else "")
            return record, None
        record.dut_hier = data.dut_hier
        record.rtl_modules, record.tb_modules = list(data.rtl_modules), list(data.tb_modules)
        dat = zlib.decompress(data.dat_zlib).decode("utf-8", errors="surrogateescape")
        points = run_points(dat, self.scope(record), self.state.root or data.dut_hier)
        new = self.state.merged.new_hits(self._counted(points))
        record.added = len(new)
        record.kept = bool(new)
        if record.kept:
            self._write_test(record, tb, dat)
        return record, points if record.kept else None

    def _counted(self, points: Mapping[str, int]) -> dict[str, int]:
        """``points`` less those an exclusion rule leaves out (they add nothing)."""
        if not self.rules:
            return dict(points)
        from llm4cov.close.report import counted_keys

        keys = counted_keys(points, self.rules)
        return {k: n for k, n in points.items() if k in keys}

    def _write_test(self, record: StepRecord, tb: str, dat: str) -> None:
        folder = self.out / TESTS / record.name
        folder.mkdir(parents=True, exist_ok=True)
        write_text_atomic(folder / "tb.sv", tb, "surrogateescape")
        write_text_atomic(folder / "test.json", json.dumps(
            record.origin.model_dump(mode="json") if record.origin else {}, indent=2))
        write_text_atomic(self.out / COVERAGE / f"{record.name}.dat", dat, "surrogateescape")

    # -- views of the state ---------------------------------------------------------
    def merged_points(self) -> list[Point]:
        from llm4cov.close.report import points_of

        return points_of(self.state.merged.counts)

    def holes(self) -> list[UncoveredItem]:
        """The merged regression's uncovered items (exclusions applied), all of them."""
        kept, _ = split_points(self.merged_points(), self.rules)
        if not kept:
            return []
        return uncovered_items(kept, self.state.root, self.sources, limit=10**9)[0]

    def complete(self) -> bool:
        """Every counted point of the merged regression is hit (nothing to aim at)."""
        counts = self._counted(self.state.merged.counts)
        return bool(counts) and all(n > 0 for n in counts.values())

    def best_test(self) -> tuple[str, str] | None:
        """The kept test that covers most (ties: the earlier): its name and testbench."""
        kept = [r for r in self.state.records if r.kept]
        if not kept:
            return None
        best = max(kept, key=lambda r: (len(self.state.merged.hits.get(r.name, ())), -r.step))
        for folder in (TESTS, "pruned"):  # a finished run's minimization moved it
            path = self.out / folder / best.name / "tb.sv"
            if path.exists():
                return best.name, path.read_text(encoding="utf-8")
        return None

    def best_testbench(self) -> str | None:
        best = self.best_test()
        return best[1] if best else None

    def merged_observation(self) -> Observation | None:
        from llm4cov.close.report import merged_observation

        return merged_observation(self.merged_points(), self.state.root, self.sources,
                                  self.rules, self.modules())

    def modules(self) -> DesignModules | None:
        rtl = {m for r in self.state.records if r.kept for m in r.rtl_modules}
        tb = {m for r in self.state.records if r.kept for m in r.tb_modules}
        return DesignModules(frozenset(rtl), frozenset(tb)) if rtl else None


