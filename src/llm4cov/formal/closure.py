"""Formal coverage closure of one design: classify holes, replay witnesses, confirm.

:func:`analyze` turns the uncovered items of an observation into formal goals
(``goals.py``), runs one ``cover`` job (bounded model checking up to
``cover_depth`` clock cycles) for all of them, then ``prove`` jobs (k-induction of
depth ``prove_depth``) for the goals not reached: all remaining goals are asserted
unreachable together; the assertions that fail the induction step are dropped (they
stay ``unknown``) and the job reruns until it passes or nothing is left (the
"Houdini" loop: what passes is proven together, hence each one). Every goal ends
``reached`` (with its witness trace), ``unreachable`` (proven), ``unknown`` (with
the depth explored and the reason) or ``error`` (the job that would decide it failed:
the tool's first error line is the reason; :attr:`FormalResult.errors` lists every
failed job, and a result with errors is not cached).

The formal model starts like the evaluator's simulation: registers without an initial
value are zero, and when the DUT has a reset input (found from how the RTL uses it:
edges and ``if`` tests; active level likewise, see ``policies/random_stimulus.py``)
the reset is active in the first cycle (an assumption placed in a copy of the DUT
module: cross-module references from a wrapper would silently become new wires).

:func:`close` adds the evaluator: the witnesses become testbench phases
(``stimulus.py``), the evaluator simulates the closing testbench, and each reached goal
is ``confirmed`` when its point is no longer uncovered.

Results of :func:`analyze` are cached by a content hash of the marked RTL, the job
settings and the tool version (``<llm4cov cache>/formal/<sha256>.json``).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from pydantic import BaseModel, Field

from llm4cov.formal import goals as goal_mod
from llm4cov.formal.goalcheck import rejected_goals
from llm4cov.formal.sby import JobResult, job_text, parse_log, read_witness
from llm4cov.formal.soundness import frontend_macros, own_constraints
from llm4cov.formal.stimulus import Phase, closing_testbench
from llm4cov.formal.tools import (
    ENGINES,
    WALL_FACTOR,
    Budget,
    FormalTools,
    JobMeter,
    find_tools,
    run_tool,
)
from llm4cov.policies.random_stimulus import Stimulus, random_testbench
from llm4cov.sim.cache import cache_root
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import Observation, UncoveredItem, overall_without
from llm4cov.sim.safety.process import ProcessResult
from llm4cov.tasks.hdl import Port, compile_order, search_dirs
from llm4cov.tasks.model import SourceFile, Task
from llm4cov.util.files import write_text_atomic

CACHE_VERSION = 9


@dataclass(frozen=True)
class FormalConfig:
    """Budgets of one design's formal closure. Depths in clock cycles, times seconds.

    Budgets are job seconds (:mod:`llm4cov.formal.tools`): per job the fewer of its
    wall seconds and the CPU seconds of its process tree (its wall time on a quiet
    machine, the CPU time it got on a loaded one), with the wall clock a backstop at
    :data:`~llm4cov.formal.tools.WALL_FACTOR` times as many: the verdicts depend much
    less on the machine's load than a wall-clock budget's.

    ``cover_depth``: BMC depth of the cover job; ``prove_depth``: k of the k-induction;
    ``job_timeout_s``: the limit of each SBY job (CPU seconds per solver process);
    ``max_goals``: goals per design (toggles expand per bit and direction);
    ``max_prove_rounds``/``prove_budget_s``: reruns and seconds of the Houdini
    loop (smtbmc names one failing assertion per induction run; a round starts while
    the budget is not used up); ``sandbox``: run SBY in the
    simulation sandbox when the host has it; ``cache``: reuse results by content hash.
    ``escalate_budget_s``: seconds for deeper cover jobs after the prove jobs (0:
    none): the goals still ``unknown`` are searched again at twice the depth, then
    twice that, up to ``max_cover_depth``, each job only with the goals left open,
    until the budget is used up (a job gets the budget that is left as its timeout).
    ``continue_steps``/``continue_budget_s``: steps of a continuation
    (:func:`llm4cov.formal.continuation.continue_closure`: cover jobs from the state
    the simulated closing testbench ends in; 0: none) and the seconds of its
    Yosys run and cover jobs (each job gets what is left as its timeout; the
    simulations between them, at most ``continue_steps + 1``, are bounded by the
    evaluator's own limits). Each step's job starts at ``cover_depth`` and doubles up
    to ``max_cover_depth`` while it reaches nothing.
    """

    cover_depth: int = 30
    prove_depth: int = 10
    job_timeout_s: float = 120.0
    max_goals: int = 400
    max_prove_rounds: int = 40
    prove_budget_s: float = 45.0
    sandbox: bool = True
    cache: bool = True
    cache_dir: str | None = None
    escalate_budget_s: float = 0.0
    max_cover_depth: int = 120
    continue_steps: int = 0
    continue_budget_s: float = 60.0

    def __post_init__(self) -> None:
        if self.cover_depth < 1 or self.prove_depth < 1:
            raise ValueError("cover_depth and prove_depth must be >= 1")
        if self.continue_steps < 0:
            raise ValueError("continue_steps must be >= 0")


class GoalResult(BaseModel):
    """The verdict on one goal (one coverage point of ``item``)."""

    item: UncoveredItem
    what: str
    metric: str
    status: str  # reached | unreachable | unknown | error
    reason: str = ""
    step: int = 0
    """``reached``: the cycle it is reached in; ``unknown``: the depth explored."""
    trace: int | None = None
    confirmed: bool | None = None


class FormalResult(BaseModel):
    """Everything :func:`analyze` found for one design (JSON-serializable)."""

    task_id: str
    top: str
    clock: str | None = None
    resets: dict[str, bool] = Field(default_factory=dict)
    """Reset input -> active low."""
    cover_depth: int = 0
    prove_depth: int = 0
    goals: list[GoalResult] = Field(default_factory=list)
    traces: list[list[dict[str, int]]] = Field(default_factory=list)
    jobs: int = 0
    """SBY invocations (a job retried with the other frontend counts twice)."""
    runs: int = 0
    """Jobs after the frontend fallback: the cover job and each prove job."""
    errors: list[str] = Field(default_factory=list)
    """One line per run that failed (``cover job: slang: ERROR: ...``)."""
    wall_s: float = 0.0
    cached: bool = False
    notes: list[str] = Field(default_factory=list)
    continued: int = 0
    """Goals ``unknown`` from reset that a continuation phase reached and its replay
    covered (counted in ``reached``; :func:`llm4cov.formal.continuation.apply`)."""

    def count(self, status: str) -> int:
        """How many goals have ``status``."""
        return sum(g.status == status for g in self.goals)

    def all_jobs_failed(self) -> bool:
        """True when jobs ran and every one of them failed (nothing was classified by a
        solver: ``llm4cov formal`` exits 1 with the first error)."""
        return self.runs > 0 and len(self.errors) >= self.runs


class Closure(BaseModel):
    """:func:`close`'s answer: the analysis, the closing testbench and its observation."""

    result: FormalResult
    testbench: str
    how: str  # merged | directed | continued (continuation phases only) | unchanged
    before: Observation
    after: Observation

    def excluded_coverage(self) -> float:
        """Overall coverage (percent) of ``after`` with the proven-unreachable points
        left out of the totals; a separate figure, never the headline metric."""
        return excluded_overall(self.after, self.result)


def excluded_overall(obs: Observation, result: FormalResult) -> float:
    """``obs``'s overall coverage (percent, 0 unless Sim Pass) with each proven
    unreachable goal removed from its metric's total (one goal = one point)."""
    if not obs.sim_pass or obs.coverage is None:
        return 0.0
    gone = Counter(g.metric for g in result.goals if g.status == "unreachable")
    return overall_without(obs.coverage.metrics, gone)


@dataclass(frozen=True)
class DesignIO:
    ports: list[Port]
    clock: str | None
    resets: dict[str, bool]


def design_io(task: Task) -> DesignIO:
    """The DUT's ports, clock and resets for a formal harness.

    Raises:
        ValueError: the DUT has an interface port (no harness drives one).
    """
    stim = Stimulus(task, 0)
    if stim.interfaces:
        raise ValueError(f"port {stim.interfaces[0].name!r} of {task.dut_module_name!r} is "
                         "an interface port")
    clock = stim.clocks[0].name if stim.clocks else None
    return DesignIO(stim.ports, clock, {r.name: stim.low[r.name] for r in stim.resets})


def _reset_code(design: DesignIO) -> str:
    if design.clock is None or not design.resets:
        return ""
    active = " && ".join(f"{'!' if low else ''}{name}" for name, low in design.resets.items())
    return ("  reg llm4cov_first = 1'b1;\n"
            f"  always @(posedge {design.clock}) llm4cov_first <= 1'b0;\n"
            f"  always @* if (llm4cov_first) assume ({active});")


class _Runner:
    """Runs SBY jobs for one task in a private temporary directory."""

    def __init__(self, task: Task, design: DesignIO, config: FormalConfig, tools: FormalTools):
        self.task, self.design, self.config, self.tools = task, design, config, tools
        self.jobs = 0
        self.runs = 0
        self.meter = JobMeter()
        """CPU and wall seconds of the jobs run so far (what the budgets spend)."""
        self.frontend = "slang"
        self.used: set[str] = set()
        """The frontends of the jobs that read the RTL."""
        self.rejected: dict[str, str] | None = None
        """Goals not written (label -> reason): :func:`~llm4cov.formal.goalcheck.
        rejected_goals` on the first placement (the runner places one item list)."""
        self.failed: dict[str, str] = {}
        """Goals not written because a job fails with them (label -> the job's error;
        :func:`_isolate`)."""

    def place(self, items: list[UncoveredItem], mode: str, keep: set[str] | None,
              workdir: Path, from_reset: bool = True
              ) -> tuple[goal_mod.Placement, list[SourceFile], list[str]]:
        """Place the goals and write the marked RTL into ``workdir``: ``(placement,
        files in compile order, include dirs)``. ``from_reset``: with the reset
        assumption of the first cycle (a continuation starts from a simulated state)."""
        extra = {self.task.dut_module_name: _reset_code(self.design)} if from_reset else {}

        def place(reject: Mapping[str, str], mode: str = "cover",
                  keep: set[str] | None = None) -> goal_mod.Placement:
            return goal_mod.place_goals(self.task.rtl_files, items, mode,
                                        self.config.max_goals, keep, extra,
                                        dict(self.task.defines), reject)

        if self.rejected is None:
            self.rejected = rejected_goals(place, self.task)
        placement = place({**self.rejected, **self.failed}, mode, keep)
        for f in placement.files:
            path = workdir / f.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f.content, encoding="utf-8", errors="surrogateescape")
        compiled = compile_order(placement.files, self.task.compile_files)
        return placement, compiled, search_dirs(placement.files, self.task.include_dirs)

    def run(self, items: list[UncoveredItem], mode: str, depth: int, keep: set[str] | None,
            workdir: Path, timeout_s: float | None = None, only: str | None = None
            ) -> tuple[goal_mod.Placement, JobResult]:
        """One job (with the frontend ``only``, else the one that read the RTL last,
        then the others)."""
        placement, compiled, incdirs = self.place(items, mode, keep, workdir)
        errors = []
        self.runs += 1
        for frontend in dict.fromkeys((only,) if only else (self.frontend, "slang", "verilog")):
            name = f"{mode}{self.jobs}"
            result = self.sby(name, job_text(
                compiled, self.task.dut_module_name, mode, depth, self.task.parameters,
                self.task.defines, incdirs, frontend, copied=placement.files),
                workdir, timeout_s, ENGINES[mode])
            if result.status != "ERROR" or result.cycles:
                self.frontend = frontend
                self.used.add(frontend)
                return placement, result
            errors.append(f"{frontend}: {result.error or 'failed'}")
        result.error = "; ".join(errors)
        return placement, result

    def sby(self, name: str, text: str, workdir: Path, timeout_s: float | None = None,
            engines: int = 1) -> JobResult:
        """Write the job ``text`` to ``NAME.sby`` in ``workdir``, run it and parse its log
        (counted in :attr:`jobs`); ``engines``: solver processes it runs side by side."""
        (workdir / f"{name}.sby").write_text(text, encoding="utf-8")
        self.jobs += 1
        proc = self.tool(self.tools.sby_command(f"{name}.sby"), workdir, timeout_s, engines)
        result = parse_log(proc.output, name)
        if proc.timed_out or proc.exceeded == "cpu":
            result.status = "TIMEOUT"
        return result

    def tool(self, cmd: list[str], workdir: Path, seconds: float | None = None,
             engines: int = 1) -> ProcessResult:
        """``cmd`` through :func:`~llm4cov.formal.tools.run_tool` limited to ``seconds``
        (default ``job_timeout_s``) CPU seconds per solver process (``engines`` of them)
        and :data:`~llm4cov.formal.tools.WALL_FACTOR` times as many wall seconds;
        counted in :attr:`meter`."""
        seconds = seconds or self.config.job_timeout_s
        proc = run_tool(self.tools, cmd, workdir, seconds, self.config.sandbox,
                        wall_s=WALL_FACTOR * seconds, engines=engines)
        self.meter.add(proc)
        return proc


def _cache_key(task: Task, items: list[UncoveredItem], config: FormalConfig,
               tools: FormalTools) -> str:
    blob = json.dumps({
        "v": CACHE_VERSION,
        "rtl": [(f.name, f.content) for f in task.rtl_files],
        "top": task.dut_module_name,
        "params": task.parameters, "defines": task.defines,
        "incdirs": task.include_dirs, "compile": task.compile_files,
        "items": [i.model_dump(mode="json") for i in items],
        "config": {k: v for k, v in asdict(config).items()
                   if k in ("cover_depth", "prove_depth", "max_goals", "max_prove_rounds",
                            "prove_budget_s", "escalate_budget_s", "max_cover_depth")},
        "tools": sorted(p.name for p in tools.bin_dir.glob("yowasp-*")),
        "versions": _tool_versions(),
    }, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _tool_versions() -> list[str]:
    """``name==version`` of the installed formal tool distributions (YoWASP's and SBY's):
    a cached verdict is only the tools' that made it."""
    from importlib.metadata import distributions

    return sorted({f"{d.metadata['Name']}=={d.version}" for d in distributions()
                   if str(d.metadata["Name"] or "").lower().startswith(("yowasp", "yosys"))})


def _cached(cache_file: Path) -> FormalResult | None:
    """The cached result, or None (and the entry removed) when it does not validate (a
    write cut short, a full disk)."""
    try:
        hit = FormalResult.model_validate_json(cache_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        cache_file.unlink(missing_ok=True)
        return None
    return hit.model_copy(update={"cached": True})


def analyze(task: Task, items: list[UncoveredItem], config: FormalConfig | None = None,
            tools: FormalTools | None = None) -> FormalResult:
    """Classify every item of ``items`` (see the module docstring).

    Raises:
        FormalToolError: the formal tools are not installed.
        ValueError: the DUT is not declared in the task's RTL.
    """
    config = config or FormalConfig()
    tools = tools or find_tools()
    cache_file = None
    if config.cache:
        root = cache_root(SimConfig(cache_dir=config.cache_dir)) / "formal"
        cache_file = root / f"{_cache_key(task, items, config, tools)}.json"
        if cache_file.exists() and (hit := _cached(cache_file)) is not None:
            return hit
    start = time.monotonic()
    design = design_io(task)
    result = FormalResult(task_id=task.id, top=task.dut_module_name, clock=design.clock,
                          resets=design.resets, cover_depth=config.cover_depth,
                          prove_depth=config.prove_depth)
    runner = _Runner(task, design, config, tools)
    inputs = {p.name for p in design.ports if p.direction == "input"}
    with tempfile.TemporaryDirectory(prefix="llm4cov-formal-") as tmp:
        workdir = Path(tmp)
        depth = config.cover_depth if design.clock else 1
        result.cover_depth = depth
        result.prove_depth = config.prove_depth if design.clock else 1
        placement, cover = runner.run(items, "cover", depth, None, workdir)
        if cover.status == "ERROR" and not cover.cycles and placement.goals:
            placement, cover = _isolate(runner, items, placement, cover, depth, workdir,
                                        result)
        result.notes += placement.notes
        verdicts: dict[str, GoalResult] = {}
        trace_ids: dict[str, int] = {}
        for g in placement.goals:
            if g.label in cover.reached:
                step, yw = cover.reached[g.label]
                if yw not in trace_ids:
                    trace_ids[yw] = len(result.traces)
                    result.traces.append(read_witness(workdir / yw, inputs))
                verdicts[g.label] = GoalResult(item=g.item, what=g.what, metric=g.metric,
                                               status="reached", step=step,
                                               trace=trace_ids[yw])
        if cover.status == "TIMEOUT" and cover.error:
            result.notes.append(f"cover job timeout: {cover.error}")
        open_labels = {g.label for g in placement.goals if g.label not in verdicts}
        explored = cover.cycles
        why = {label: f"not reached within {explored} cycles (cover {cover.status.lower()})"
               for label in open_labels}
        errored: dict[str, str] = {}
        if cover.status == "ERROR":
            result.errors.append(f"cover job: {cover.error or 'failed'}")
            errored = {label: f"cover job error: {cover.error or 'failed'}"
                       for label in open_labels}
        else:
            result.errors += _prove(runner, items, open_labels, why, errored, verdicts,
                                    placement, workdir,
                                    config if design.clock else replace(config, prove_depth=1),
                                    result, inputs)
        if design.clock and cover.status != "ERROR" and config.escalate_budget_s > 0:
            explored_at = _escalate(runner, items, placement, verdicts, why, workdir, config,
                                    result, inputs, trace_ids)
        else:
            explored_at = {}
        for g in placement.goals:
            if g.label not in verdicts:
                status = "error" if g.label in errored else "unknown"
                verdicts[g.label] = GoalResult(item=g.item, what=g.what, metric=g.metric,
                                               status=status,
                                               reason=errored.get(g.label, why[g.label]),
                                               step=explored_at.get(g.label, explored))
        _unproven(verdicts, task, runner.used, result)
        result.goals = [verdicts[g.label] for g in placement.goals]
        result.goals += [GoalResult(item=g.item, what=g.what, metric=g.metric,
                                    status="error" if g.label in runner.failed else "unknown",
                                    reason=r) for g, r in placement.rejected]
        result.goals += [GoalResult(item=i, what=i.kind, metric=i.kind, status="unknown",
                                    reason=r) for i, r in placement.unplaced]
    result.jobs, result.runs = runner.jobs, runner.runs
    result.wall_s = round(time.monotonic() - start, 3)
    if cache_file is not None and not result.errors:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(cache_file, result.model_dump_json())
    return result


def _unproven(verdicts: dict[str, GoalResult], task: Task, frontends: set[str],
              result: FormalResult) -> None:
    """Turn every ``unreachable`` of ``verdicts`` into ``unknown`` when the proof is not
    one of the simulated design (:mod:`llm4cov.formal.soundness`): the RTL constrains
    the formal inputs itself, or Yosys' own parser read RTL that tests its macros."""
    why = [f"the RTL's own assumption at {w}" for w in own_constraints(task)[:3]]
    if "verilog" in frontends and (macros := frontend_macros(task)):
        why.append(f"Yosys' own parser defines {', '.join(macros)}, which the RTL tests")
    if not why:
        return
    text = "; ".join(why)
    result.notes.append(f"no goal is proven unreachable: {text} (the simulation does not "
                        "obey it)")
    for label, v in verdicts.items():
        if v.status == "unreachable":
            verdicts[label] = v.model_copy(update={
                "status": "unknown", "reason": f"proven only under {text}"})


MAX_ISOLATE_JOBS = 24
"""Jobs :func:`_isolate` may run to narrow a failed cover job down to its goals."""


def _isolate(runner: _Runner, items: list[UncoveredItem], placement: goal_mod.Placement,
             cover: JobResult, depth: int, workdir: Path, result: FormalResult
             ) -> tuple[goal_mod.Placement, JobResult]:
    """A cover job that failed to read or elaborate: unless it fails without any goal
    too with every frontend (the design's own failure: returned as it is), halve its
    goals (jobs of depth 1 with the first frontend that reads the RTL without goals, at
    most :data:`MAX_ISOLATE_JOBS`) down to the single goals it fails with; those (and
    the goals of halves not narrowed down within the jobs) go to ``runner.failed``
    with their job's error (and the error of each frontend that fails without goals),
    and the cover job runs again without them (with one line in ``result.errors``).
    Returns that job and its placement, or, when no goal is left, the new placement
    and the failed job. Its jobs are the cover job's one run
    (:attr:`FormalResult.runs`)."""
    runs = runner.runs

    def error_of(keep: list[str], frontend: str) -> str | None:
        _, job = runner.run(items, "cover", 1, set(keep), workdir, only=frontend)
        return (job.error or "failed") if job.status == "ERROR" and not job.cycles else None

    design_errors: list[str] = []
    frontend = None
    for name in ("slang", "verilog"):
        error = error_of([], name)
        if error is None:
            frontend = name
            break
        design_errors.append(f"{error}, also without goals")
    if frontend is None:
        runner.runs = runs
        return placement, cover
    labels = [g.label for g in placement.goals]
    todo, jobs = [labels[len(labels) // 2:], labels[:len(labels) // 2]], 0
    while todo:
        group = todo.pop()
        if not group:
            continue
        if jobs >= MAX_ISOLATE_JOBS:
            runner.failed.update({label: f"cover job error: {cover.error or 'failed'} (not "
                                  "narrowed down to its goals)" for label in group})
            continue
        jobs += 1
        error = error_of(group, frontend)
        if error is not None and len(group) == 1:
            runner.failed[group[0]] = "cover job error with this goal: " + "; ".join(
                [*design_errors, error])
        elif error is not None:
            todo += [group[len(group) // 2:], group[:len(group) // 2]]
    runner.runs = runs
    if len(runner.failed) == len(labels):
        return runner.place(items, "cover", None, workdir)[0], cover
    result.errors.append(f"cover job: {cover.error or 'failed'} (with {len(runner.failed)} "
                         f"of {len(labels)} goals; the others ran without them)")
    again = runner.run(items, "cover", depth, None, workdir)
    runner.runs = runs
    return again


def _prove_groups(goals: list[goal_mod.Goal], open_labels: set[str]) -> list[set[str]]:
    """Goals proven together: all structural goals (line, branch, expression) first,
    then the toggle goals of one signal at a time (a stuck bit is the common case)."""
    structural = {g.label for g in goals if g.label in open_labels and g.metric != "toggle"}
    signals: dict[tuple[str, int, str], set[str]] = {}
    for g in goals:
        if g.label in open_labels and g.metric == "toggle":
            key = (g.item.file, g.item.line, g.what.split("[")[0].split(" ")[0])
            signals.setdefault(key, set()).add(g.label)
    return [group for group in (structural, *signals.values()) if group]


def _prove(runner: _Runner, items: list[UncoveredItem], open_labels: set[str],
           why: dict[str, str], errored: dict[str, str], verdicts: dict[str, GoalResult],
           placement: goal_mod.Placement, workdir: Path, config: FormalConfig,
           result: FormalResult | None = None, inputs: set[str] | None = None) -> list[str]:
    """The Houdini loop of the module docstring, per group of :func:`_prove_groups`,
    while ``config.prove_budget_s`` job seconds are left: proven goals go into
    ``verdicts``, the goals of a prove job that failed into ``errored`` (label ->
    reason). A goal whose assertion
    fails in the base case (violated within k steps from reset: reachable) is
    ``reached``, with the base case's witness added to ``result.traces`` (replayed like
    the cover job's). Returns one line per failed prove job."""
    errors: list[str] = []
    by_label = {g.label: g for g in placement.goals}
    budget = Budget(runner.meter, config.prove_budget_s)
    rounds = 0
    for left in _prove_groups(placement.goals, open_labels):
        while left and rounds < config.max_prove_rounds and budget.left() > 0:
            rounds += 1
            _, prove = runner.run(items, "prove", config.prove_depth, left, workdir)
            if prove.status == "ERROR" and not prove.failed:
                errors.append(f"prove job: {prove.error or 'failed'}")
                errored.update({label: f"{why[label]}; prove job error: "
                                f"{prove.error or 'failed'}" for label in left})
                left = set()
                break
            if prove.status == "PASS":
                for label in left:
                    g = by_label[label]
                    verdicts[label] = GoalResult(
                        item=g.item, what=g.what, metric=g.metric, status="unreachable",
                        reason=f"proven by {config.prove_depth}-induction",
                        step=config.prove_depth)
                left = set()
                break
            failed = {label for label in prove.failed if label in left}
            if not failed:
                for label in left:
                    why[label] += f"; prove {prove.status.lower()}"
                left = set()
                break
            for label in failed:
                phase = prove.failed[label]
                if phase == "basecase" and _base_reached(prove, label, by_label[label],
                                                         verdicts, workdir, result, inputs):
                    continue
                why[label] += (f"; not {config.prove_depth}-inductive" if phase == "induction"
                               else f"; assertion fails in the base case ({phase})")
            left -= failed
        for label in left:
            why[label] += "; prove budget used up"
    return errors


def _escalate(runner: _Runner, items: list[UncoveredItem], placement: goal_mod.Placement,
              verdicts: dict[str, GoalResult], why: dict[str, str], workdir: Path,
              config: FormalConfig, result: FormalResult, inputs: set[str],
              trace_ids: dict[str, int]) -> dict[str, int]:
    """Deeper cover jobs for the goals still open (see :class:`FormalConfig`,
    ``escalate_budget_s``); reached goals go into ``verdicts``. Returns, per goal left
    open, the depth (cycles) explored when deeper than the first cover job."""
    budget = Budget(runner.meter, config.escalate_budget_s)
    depth = result.cover_depth
    explored: dict[str, int] = {}
    status: dict[str, str] = {}
    by_label = {g.label: g for g in placement.goals}
    while depth < config.max_cover_depth:
        left = {g.label for g in placement.goals if g.label not in verdicts}
        remaining = budget.left()
        if not left or remaining < 1.0:
            break
        depth = min(depth * 2, config.max_cover_depth)
        _, cover = runner.run(items, "cover", depth, left, workdir,
                              timeout_s=min(config.job_timeout_s, remaining))
        if cover.status == "ERROR" and not cover.cycles:
            result.notes.append(f"deeper cover job ({depth} cycles) failed: "
                                f"{cover.error or 'failed'}")
            break
        for label in left:
            if label in cover.reached:
                step, yw = cover.reached[label]
                if yw not in trace_ids:
                    trace_ids[yw] = len(result.traces)
                    result.traces.append(read_witness(workdir / yw, inputs))
                g = by_label[label]
                verdicts[label] = GoalResult(
                    item=g.item, what=g.what, metric=g.metric, status="reached", step=step,
                    trace=trace_ids[yw], reason=f"reached by a deeper cover job ({depth} cycles)")
            elif cover.cycles > result.cover_depth:
                explored[label] = cover.cycles
                status[label] = cover.status.lower()
        if cover.status == "TIMEOUT":
            break
    for label, cycles in explored.items():
        if label not in verdicts:
            why[label] += f"; not reached within {cycles} cycles (deeper cover {status[label]})"
    return {label: c for label, c in explored.items() if label not in verdicts}


def _base_reached(prove: JobResult, label: str, goal: goal_mod.Goal,
                  verdicts: dict[str, GoalResult], workdir: Path,
                  result: FormalResult | None, inputs: set[str] | None) -> bool:
    """Record ``goal`` as reached from the witness of a failed base case; False when
    there is no readable witness (the goal then stays ``unknown``)."""
    if result is None or inputs is None or not prove.base_trace:
        return False
    try:
        steps = read_witness(workdir / prove.base_trace, inputs)
    except (OSError, ValueError, KeyError):
        return False
    result.traces.append(steps)
    step = prove.base_step if prove.base_step >= 0 else len(steps) - 1
    verdicts[label] = GoalResult(
        item=goal.item, what=goal.what, metric=goal.metric, status="reached", step=step,
        trace=len(result.traces) - 1,
        reason=f"assertion fails in the base case at step {step} (reachable; "
               "witness from the prove job)")
    return True


def _matching(goal: GoalResult | goal_mod.Goal, items: list[UncoveredItem]
              ) -> list[UncoveredItem]:
    """The items of ``items`` (an observation's uncovered list) that still list
    ``goal``'s point (the same :attr:`~llm4cov.sim.model.observation.UncoveredItem.key`;
    for a toggle: its bit and direction)."""
    if goal.metric != "toggle":
        return [i for i in items if i.key == goal.item.key]
    found = []
    for i in items:
        if i.kind != "toggle" or (i.file, i.line) != (goal.item.file, goal.item.line):
            continue
        target = goal_mod.toggle_targets(i)
        if target is None:
            found.append(i)
            continue
        sig, bits, dirs = target
        if any(f"{sig if bit < 0 else f'{sig}[{bit}]'} {d}" == goal.what
               for bit in bits for d in dirs):
            found.append(i)
    return found


def _still_uncovered(goal: GoalResult | goal_mod.Goal, items: list[UncoveredItem]) -> bool:
    """True while ``items`` (an observation's uncovered list) still lists ``goal``'s
    point (for a toggle: its bit and direction)."""
    return bool(_matching(goal, items))


def close(task: Task, testbench: str | None, evaluator: Evaluator,
          config: FormalConfig | None = None, seed: int = 0,
          tools: FormalTools | None = None) -> Closure:
    """Simulate ``testbench`` (the built-in random one when None), analyze its holes,
    replay the witnesses and confirm them with ``evaluator`` (see the module docstring).
    Give ``evaluator`` a large ``SimConfig.feedback_limit``: only the items it lists are
    analyzed, and confirmation reads the complete list of the closing run.

    Raises:
        FormalToolError: the formal tools are not installed.
        ValueError: the DUT is not declared in the task's RTL.
    """
    design = design_io(task)
    if testbench is None:
        testbench = random_testbench(task, seed)
    before = evaluator.evaluate(task, testbench)
    result = analyze(task, before.uncovered, config, tools)
    config = config or FormalConfig()
    phases = [Phase(f"trace {n}: " + ", ".join(sorted({
        f"{g.item.file}:{g.item.line} {g.what}" for g in result.goals if g.trace == n}))[:200],
        steps) for n, steps in enumerate(result.traces)]
    text, how, after = testbench, "unchanged", before
    if phases:
        text, how = closing_testbench(testbench, task, design.ports, design.clock, phases, seed)
        after = evaluator.evaluate(task, text)
        if not after.sim_pass and how == "merged":
            text, how = closing_testbench(None, task, design.ports, design.clock, phases, seed)
            after = evaluator.evaluate(task, text)
    if config.continue_steps and design.clock is not None and after.sim_pass:
        from llm4cov.formal.continuation import apply, continue_closure

        open_items = list({g.item.model_dump_json(): g.item for g in result.goals
                           if g.status in ("unknown", "reached")}.values())
        cont = continue_closure(task, text, open_items, evaluator.config, config, tools)
        apply(result, cont)
        if cont.phases:
            text, how = cont.testbench, ("continued" if how == "unchanged" else how)
            after = evaluator.evaluate(task, text)
    if not phases and text is testbench:
        return Closure(result=result, testbench=testbench, how="unchanged",
                       before=before, after=before)
    if after.sim_pass:
        result.goals = [g.model_copy(update={"confirmed": not _still_uncovered(g, after.uncovered)})
                        if g.status == "reached" else g for g in result.goals]
    return Closure(result=result, testbench=text, how=how, before=before, after=after)
