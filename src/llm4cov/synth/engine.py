"""A synthesis run ``D(k)``: trajectories, state selection and rejection per repo.

Per repo (paper, "Learning offline"):

1. skip it when its source said so, when it matches a benchmark (contamination), or
   when the compile probe (the ``random`` policy's testbench, one simulator call)
   does not compile or has no coverage points;
2. sample K intermediate states from ``s_0`` with ``M_int`` and simulate them;
3. select states (:mod:`llm4cov.synth.selection`);
4. sample M transitions from each selected state with ``M_trans`` and simulate them;
5. judge them (:mod:`llm4cov.synth.rejection`) and write every candidate as a
   :class:`DataPoint` with its verdict; with ``direct_points`` the K samples of step 2
   are judged too, as direct-inference points from ``s_0``;
6. with ``repair.kinds``, plant mistakes in the best step-2 testbench
   (:mod:`llm4cov.synth.repair`), simulate each broken state and judge the best
   testbench as its repair (agentic points, ``selected_as`` ``broken:<kind>``).

Resume: every generation + simulation is a durable :class:`SampleRow`; a rerun reuses
the rows already there (same keys, same seeds, deterministic selection), so it neither
repeats nor loses finished work. A repo is finished when its :class:`RepoRow` is
written. A run directory refuses a config whose :meth:`SynthConfig.identity`, model
names or (when given) policy options differ.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from llm4cov.agent.loop import no_testbench_observation
from llm4cov.agent.prompt import syntax_rules
from llm4cov.agent.response import extract_testbench
from llm4cov.policies.base import GenerationRequest, Policy, SamplingParams, agenerate
from llm4cov.policies.random_stimulus import random_testbench
from llm4cov.sim.model.call import Simulate
from llm4cov.sim.model.observation import Observation, Status
from llm4cov.synth.chat import policy_state, state_messages
from llm4cov.synth.config import SynthConfig, to_mapping
from llm4cov.synth.contamination import ContaminationIndex
from llm4cov.synth.records import (
    INITIAL_STATE,
    POINT_KEY,
    REPO_KEY,
    SAMPLE_KEY,
    DataPoint,
    PointKind,
    RepoRow,
    RepoStatus,
    Role,
    SampleRow,
    StateInfo,
    Transition,
    Verdict,
)
from llm4cov.synth.rejection import coverage_gain, judge_transitions
from llm4cov.synth.repair import BreakKind, break_testbench, repair_kinds
from llm4cov.synth.selection import max_selected_states, select_states
from llm4cov.synth.sources import RepoItem
from llm4cov.tasks.model import Task
from llm4cov.util.aio import bounded_map
from llm4cov.util.budget import Budget
from llm4cov.util.jsonl import ResultLog, iter_jsonl
from llm4cov.util.progress import NullProgress, ProgressSink
from llm4cov.util.rundir import exclusive

log = logging.getLogger(__name__)

PROBE_MODEL = "random"
PROBE_SKIPS = (Status.COMPILE_ERROR, Status.NO_COVERAGE, Status.REJECTED, Status.TOOL_ERROR)
"""Probe statuses that skip a repo (``tool_error``: the simulator cannot handle the
design; the repo is skipped with that reason, counted apart from model failures)."""
PROGRESS_GROUP = "repos"


class RunDirError(ValueError):
    """The output directory holds a run with a different config or different models."""


def derive_seed(*parts: object) -> int:
    """A stable 31-bit seed from ``parts`` (same on every machine and Python run)."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


T = TypeVar("T")


async def gather_all(coros: Iterable[Awaitable[T]]) -> list[T]:
    """Await every coroutine to its end, then raise the first exception if any: samples
    that finish while a sibling fails are still written (no lost work on resume)."""
    results = await asyncio.gather(*coros, return_exceptions=True)
    done: list[T] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        done.append(result)
    return done


@dataclass
class RunOutcome:
    """What one invocation did: repos finished or skipped now, repos finished by an
    earlier invocation, and whether a budget stopped it before the source ran out."""

    done: int = 0
    skipped: int = 0
    already: int = 0
    budget_stopped: bool = False


class SynthRun:
    """One run directory: ``run.json``, ``samples.jsonl``, ``points.jsonl``, ``repos.jsonl``.

    ``policies`` maps :class:`Role` ``int``/``trans`` to the policies filling ``M_int`` and
    ``M_trans``; ``simulate`` is ``executor.simulate`` (or any async evaluator call).
    ``command`` (the command line) is recorded in ``run.json`` for the dataset card.
    ``progress`` hears of every finished repo (group ``repos``) and every new sample row.
    ``policy_options``: the ``policies:`` section the policies were made with
    (:mod:`llm4cov.policies.registry`); part of the identity when not empty.

    Raises:
        RunDirError: ``out_dir`` holds a run with a different identity.
    """

    def __init__(
        self,
        out_dir: Path | str,
        config: SynthConfig,
        policies: dict[Role, Policy],
        simulate: Simulate,
        contamination: ContaminationIndex | None = None,
        on_repo: Callable[[RepoRow], None] | None = None,
        command: str = "",
        progress: ProgressSink | None = None,
        policy_options: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.out = Path(out_dir)
        self.config = config
        self.policies = policies
        self.simulate = simulate
        self.contamination = contamination
        self.on_repo = on_repo
        self.command = command
        self.progress = progress or NullProgress()
        self.policy_options = dict(policy_options or {})
        self.out.mkdir(parents=True, exist_ok=True)
        self._check_identity()
        self.samples = ResultLog(self.out / "samples.jsonl", SAMPLE_KEY)
        self.points = ResultLog(self.out / "points.jsonl", POINT_KEY)
        self.repos = ResultLog(self.out / "repos.jsonl", REPO_KEY)
        self.rules = syntax_rules() if config.syntax_rules else None
        self.budget = Budget(max_sim_calls=config.budget.max_sim_calls,
                             max_tokens=config.budget.max_tokens)
        self._cached: dict[tuple, SampleRow] = {}
        for raw in iter_jsonl(self.samples.path):
            row = SampleRow.model_validate(raw)
            self.budget.charge(int(row.simulated), row.prompt_tokens + row.completion_tokens)
            if (row.repo_id,) not in self.repos:
                self._cached[self.samples.key(raw)] = row

    def _check_identity(self) -> None:
        identity = {
            "config": self.config.identity(),
            "models": {role.value: p.name for role, p in sorted(self.policies.items())},
            **({"policies": self.policy_options} if self.policy_options else {}),
        }
        path = self.out / "run.json"
        if path.exists():
            stored = json.loads(path.read_text(encoding="utf-8"))
            if stored.get("identity") != identity:
                raise RunDirError(
                    f"{self.out} holds a run with another config, models or policy options; "
                    "use a new --out "
                    f"(stored: {json.dumps(stored.get('identity'), sort_keys=True)})"
                )
        payload = {"identity": identity, "config": to_mapping(self.config),
                   "command": self.command,
                   "policies": {r.value: p.describe() for r, p in self.policies.items()}}
        path.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")

    def worst_case_calls(self) -> int:
        """Most simulator calls one repo can take: probe + K + states x M."""
        sel = self.config.selection
        states = max_selected_states(sel)
        probe = 1 if self.config.screen_compile else 0
        repairs = len(repair_kinds(self.config.repair.kinds, "", self.config.repair.per_repo))
        return (probe + sel.candidates + min(states, sel.candidates) * self.config.transitions
                + repairs)

    async def run(self, items: Iterable[RepoItem]) -> RunOutcome:
        """Process ``items`` with ``config.concurrency`` repos in flight, pulling them
        lazily from ``items``.

        Raises:
            RunDirBusy: another process is running a synthesis in this directory
                (:func:`llm4cov.util.rundir.exclusive`).
            PolicyError, ToolchainError, WorkerLost: infrastructure failures (after the
                repos in flight finish); rows written so far stay and a rerun resumes.
        """
        with exclusive(self.out):
            return await self._run(items)

    async def _run(self, items: Iterable[RepoItem]) -> RunOutcome:
        outcome = RunOutcome()

        async def one(item: RepoItem) -> None:
            if (item.repo_id,) in self.repos:
                outcome.already += 1
                return
            status = await self._repo(item)
            if status is None:
                outcome.budget_stopped = True
                self.progress.note("budget reached")
            elif status is RepoStatus.DONE:
                outcome.done += 1
            else:
                outcome.skipped += 1

        await bounded_map(items, one, self.config.concurrency,
                          stop=lambda: outcome.budget_stopped)
        return outcome

    # -- one repo --------------------------------------------------------------------

    def _finish(self, row: RepoRow) -> RepoStatus:
        self.repos.append(row.model_dump(mode="json"))
        self.progress.item_done(PROGRESS_GROUP)
        if self.on_repo:
            self.on_repo(row)
        return row.status

    def _skip(self, repo_id: str, reason: str, detail: str) -> RepoStatus:
        return self._finish(RepoRow(repo_id=repo_id, status=RepoStatus.SKIPPED,
                                    reason=reason, detail=detail))

    async def _repo(self, item: RepoItem) -> RepoStatus | None:
        """Finish one repo; None when the budget does not admit it."""
        if item.task is None:
            return self._skip(item.repo_id, item.reason, item.detail)
        task = item.task
        if self.contamination is not None:
            match = self.contamination.check_task(task)
            if match is not None:
                detail = f"{match.file} ~ {match.benchmark} (ROUGE-L F {match.score:.3f})"
                return self._skip(task.id, "contaminated", detail)
        cached = sum(1 for key in self._cached if key[0] == task.id)
        cost = max(0, self.worst_case_calls() - cached)
        if not self.budget.try_reserve(cost):
            return None
        try:
            return await self._synthesize(task)
        finally:
            self.budget.release(cost)

    async def _synthesize(self, task: Task) -> RepoStatus:
        cfg = self.config
        if cfg.screen_compile:
            probe = await self._probe(task)
            if probe.observation.status in PROBE_SKIPS:
                first = probe.observation.log.strip().splitlines()[:1]
                reason = ("rtl_error" if probe.observation.rtl_error
                          else probe.observation.status.value)
                return self._skip(task.id, reason, " ".join(first))
        s0 = StateInfo(id=INITIAL_STATE)
        ints = await gather_all(self._sample(task, Role.INTERMEDIATE, s0, k)
                                for k in range(cfg.selection.candidates))
        usable = [r for r in ints if not _not_data(r.observation)]  # no state
        chosen = select_states([r.observation for r in usable], cfg.selection,
                               derive_seed(cfg.seed, task.id, "select"))
        states = [StateInfo(id=usable[c.index].state_id, testbench=usable[c.index].testbench,
                            observation=usable[c.index].observation,
                            model=usable[c.index].model, selected_as=c.reason,
                            cov=usable[c.index].observation.cov())
                  for c in chosen]
        trans = await gather_all(self._sample(task, Role.TRANSITION, s, m)
                                 for s in states for m in range(cfg.transitions))
        points: list[DataPoint] = []
        if cfg.direct_points:
            points += self._judge(task, s0, list(ints), PointKind.DIRECT)
        for n, state in enumerate(states):
            rows = list(trans[n * cfg.transitions : (n + 1) * cfg.transitions])
            points += self._judge(task, state, rows, PointKind.AGENTIC)
        broken = await self._repairs(task, usable)
        points += broken
        for point in points:
            self.points.append(point.model_dump(mode="json"))
        counts = {"samples": len(ints) + len(trans) + len(broken), "states": len(states),
                  "tool_failures": sum(r.observation.tool_error for r in [*ints, *trans]),
                  "rtl_errors": sum(r.observation.rtl_error for r in [*ints, *trans]),
                  "points": len(points),
                  "kept": sum(p.verdict is Verdict.KEPT for p in points)}
        for key in [k for k in self._cached if k[0] == task.id]:
            del self._cached[key]
        return self._finish(RepoRow(repo_id=task.id, status=RepoStatus.DONE, task=task,
                                    counts=counts))

    async def _repairs(self, task: Task, ints: list[SampleRow]) -> list[DataPoint]:
        """Repair points (step 6 of the module docstring): the best passing ``M_int``
        testbench as the repair of each broken state planted in it."""
        cfg = self.config.repair
        kinds = repair_kinds(cfg.kinds, task.id, cfg.per_repo)
        passing = [r for r in ints if r.observation.sim_pass and r.testbench]
        if not kinds or not passing:
            return []
        best = max(passing, key=lambda r: r.observation.cov())
        if best.observation.cov() < cfg.min_cov:
            return []
        rows = await gather_all(self._broken(task, best, kind) for kind in kinds)
        points: list[DataPoint] = []
        for row in rows:
            if row is None or _not_data(row.observation):
                continue
            state = StateInfo(id=row.state_id, testbench=row.testbench,
                              observation=row.observation, model=row.model,
                              selected_as=row.model, cov=row.observation.cov())
            points += self._judge(task, state, [best], PointKind.AGENTIC)
        return points

    async def _broken(self, task: Task, best: SampleRow, kind: BreakKind) -> SampleRow | None:
        """The broken state of ``kind`` planted in ``best`` and its simulation (reused
        when done); None when the testbench has no place for that mistake."""
        index = list(BreakKind).index(kind)
        key = (task.id, Role.BROKEN.value, best.state_id, index)
        if key in self._cached:
            return self._cached[key]
        seed = derive_seed(self.config.seed, task.id, Role.BROKEN.value, kind.value)
        testbench = break_testbench(best.testbench or "", task, kind, seed)
        if testbench is None:
            return None
        obs = await self.simulate(task, testbench)
        return self._record(SampleRow(
            repo_id=task.id, role=Role.BROKEN, parent=best.state_id, index=index,
            model=f"broken:{kind.value}", seed=seed, response="", testbench=testbench,
            observation=obs, simulated=True))

    def _judge(self, task: Task, state: StateInfo, rows: list[SampleRow],
               kind: PointKind) -> list[DataPoint]:
        """Data points of ``rows`` from ``state``; samples the simulator failed on
        (``tool_error``) or whose RTL does not compile (``rtl_error``) are no data point
        (neither kept nor rejected). A row sampled from another state (a repair of a
        broken state) gets the point id ``<state id>><row state id>``."""
        rows = [r for r in rows if not _not_data(r.observation)]
        verdicts = judge_transitions(state.cov, [r.observation for r in rows],
                                     self.config.rejection)
        models = {Role.INTERMEDIATE.value: self.policies[Role.INTERMEDIATE].name,
                  Role.TRANSITION.value: self.policies[Role.TRANSITION].name}
        return [
            DataPoint(
                repo_id=task.id, stage=self.config.stage,
                point_id=row.state_id if row.parent == state.id else f"{state.id}>{row.state_id}",
                trace_type=self.config.trace_type, kind=kind, state=state,
                next=Transition(sample_id=row.state_id, model=row.model, params=row.params,
                                seed=row.seed, response=row.response, testbench=row.testbench,
                                observation=row.observation, cov=row.observation.cov(),
                                prompt_tokens=row.prompt_tokens,
                                completion_tokens=row.completion_tokens),
                gain=coverage_gain(state.cov, row.observation), verdict=verdict,
                models=models, syntax_rules=row.syntax_rules,
            )
            for row, verdict in zip(rows, verdicts, strict=True)
        ]

    # -- samples ---------------------------------------------------------------------

    def _record(self, row: SampleRow) -> SampleRow:
        self.samples.append(row.model_dump(mode="json"))
        tokens = row.prompt_tokens + row.completion_tokens
        self.budget.charge(int(row.simulated), tokens)
        self.progress.recorded(row.observation.status.value if row.simulated else None, tokens)
        return row

    async def _probe(self, task: Task) -> SampleRow:
        key = (task.id, Role.PROBE.value, INITIAL_STATE, 0)
        if key in self._cached:
            return self._cached[key]
        seed = derive_seed(self.config.seed, task.id, Role.PROBE.value)
        testbench: str | None
        try:
            testbench = random_testbench(task, seed=seed)
        except ValueError as exc:
            testbench = None
            obs = Observation(status=Status.REJECTED, log=f"probe: {exc}")
        else:
            obs = await self.simulate(task, testbench)
        return self._record(SampleRow(
            repo_id=task.id, role=Role.PROBE, parent=INITIAL_STATE, index=0,
            model=PROBE_MODEL, seed=seed, response="", testbench=testbench, observation=obs,
            simulated=testbench is not None))

    async def _sample(self, task: Task, role: Role, state: StateInfo, index: int) -> SampleRow:
        """One generation from ``state`` and its simulation (reused when already done)."""
        key = (task.id, role.value, state.id, index)
        if key in self._cached:
            return self._cached[key]
        cfg = self.config
        params: SamplingParams = (cfg.int_sampling if role is Role.INTERMEDIATE
                                  else cfg.trans_sampling)
        seed = derive_seed(cfg.seed, task.id, role.value, state.id, index)
        request = GenerationRequest(task, state_messages(task, state, self.rules), params, seed,
                                    policy_state(state))
        gen = await agenerate(self.policies[role], request)
        testbench = extract_testbench(gen.text, task.dut_module_name)
        obs = await self.simulate(task, testbench) if testbench else no_testbench_observation()
        return self._record(SampleRow(
            repo_id=task.id, role=role, parent=state.id, index=index, model=gen.model,
            params=params.as_dict(), seed=seed, response=gen.text, testbench=testbench,
            observation=obs, simulated=testbench is not None, prompt_tokens=gen.prompt_tokens,
            completion_tokens=gen.completion_tokens, latency_s=round(gen.latency_s, 3),
            syntax_rules=self.rules is not None))


def _not_data(obs: Observation) -> bool:
    """A sample that is no data point: the simulator failed (``tool_error``) or the
    repo's RTL does not compile on its own (``rtl_error``); counted apart."""
    return obs.tool_error or obs.rtl_error


def run_summary(out_dir: Path | str) -> dict[str, Any]:
    """Counts of a run directory from its files: repos by status and reason, data points
    by kind and verdict, simulator calls, tool failures (samples the simulator itself
    failed on), RTL errors (samples whose repo's RTL does not compile on its own; both
    never data points) and tokens spent."""
    out = Path(out_dir)
    repos: dict[str, int] = {}
    for row in iter_jsonl(out / "repos.jsonl"):
        key = row["status"] if row["status"] == "done" else f"skipped:{row['reason']}"
        repos[key] = repos.get(key, 0) + 1
    points: dict[str, int] = {}
    for row in iter_jsonl(out / "points.jsonl"):
        key = f"{row['kind']}:{row['verdict']}"
        points[key] = points.get(key, 0) + 1
    sims = tokens = tool_failures = rtl_errors = 0
    for row in iter_jsonl(out / "samples.jsonl"):
        sims += int(row["simulated"])
        tokens += row["prompt_tokens"] + row["completion_tokens"]
        tool_failures += bool(row["observation"].get("tool_error"))
        rtl_errors += bool(row["observation"].get("rtl_error"))
    return {"repos": dict(sorted(repos.items())), "points": dict(sorted(points.items())),
            "sim_calls": sims, "tool_failures": tool_failures, "rtl_errors": rtl_errors,
            "tokens": tokens}
