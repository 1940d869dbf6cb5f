"""``llm4cov close``: build a regression until merged coverage stops growing (or the
budget is spent), explain every remaining point; ``--replay DIR`` re-simulates it."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import replace
from pathlib import Path

import typer

from llm4cov.bench.config import BenchConfig
from llm4cov.cli import common, formal_opts, report_opts
from llm4cov.cli.options import PRINT_CONFIG, flag, print_config, with_flags, with_options
from llm4cov.close.model import CloseSettings, StepRecord
from llm4cov.exec.settings import SimSettings
from llm4cov.tasks.model import Task
from llm4cov.util.escape import one_line
from llm4cov.util.files import write_text_atomic
from llm4cov.util.settings import load

_D = CloseSettings()
STATE = "close.json"
TASK = "task.json"


def _task_or_saved(ctx: typer.Context, values: dict) -> Task:
    """The task the options name; with ``--replay DIR`` and no RTL, the one saved there."""
    replay = ctx.params.get("replay")
    if replay is not None and not common.given_rtl(ctx) and values["tasks"] is None:
        try:
            return Task.model_validate_json((Path(replay) / TASK).read_text(encoding="utf-8"))
        except OSError as exc:
            raise common.fail(f"{replay}: no closure run here ({exc.strerror or exc})") from exc
    task = common._task_of(ctx, values)
    assert task is not None
    return task


#: The options of the closure loop itself (:class:`CloseSettings`).
CLOSE_OPTIONS = {
    "budget": (float, typer.Option(_D.budget_s, "--budget", min=1.0, help="Wall seconds for "
                                     "the loop (no step starts after it).")),
    "lengths": (str, typer.Option(",".join(map(str, _D.lengths)), "--lengths", help="Random "
                                    "stimulus lengths (cycles) tried in turn, comma-separated.")),
    "start_seed": (int, typer.Option(_D.seed, "--start-seed", help="Seed of the first test "
                                       "(step k uses start + k).")),
    "formal": (bool, typer.Option(_D.formal, "--formal/--no-formal", help="Formal witnesses "
                                    "and unreachability proofs for the merged holes.")),
    **formal_opts.budget_options(_D, "cover_depth", "prove_depth", "prove_budget_s",
                                 "continue_steps", "continue_budget_s", prefix="formal: "),
    "model": (str, typer.Option(None, "--model", help="A model for model tests (any "
                                  "OpenAI-compatible server with --base-url, or local:PATH).")),
    "base_url": (str, flag("base_url").option(BenchConfig)),
    "minimize": (bool, typer.Option(True, "--minimize/--no-minimize", help="Final greedy "
                                      "set-cover pass over the kept tests.")),
}


def _settings(_ctx: typer.Context, v: dict) -> CloseSettings:
    """The :class:`CloseSettings` of the options (``--lengths`` checked)."""
    return CloseSettings(
        budget_s=v["budget"], lengths=_lengths(v["lengths"]), seed=v["start_seed"],
        formal=v["formal"], cover_depth=v["cover_depth"], prove_depth=v["prove_depth"],
        prove_budget_s=v["prove_budget_s"], continue_steps=v["continue_steps"],
        continue_budget_s=v["continue_budget_s"], model=v["model"], base_url=v["base_url"],
        minimize=v["minimize"])


@with_options("task", common.TASK_OPTIONS, _task_or_saved)
@with_options("settings", CLOSE_OPTIONS, _settings)
@report_opts.with_reports("html", "lcov", "ucis", "exclude")
@with_flags(SimSettings, *(f for f in common.EVALUATOR_FLAGS if f.key != "cache"))
def close(
    ctx: typer.Context,
    rtl: list[Path] = common.RTL_ARGUMENT,
    out: Path = typer.Option(None, "--out", file_okay=False, help="Run directory (tests/, "
                             "coverage.md, run.json, html/); a rerun resumes it."),
    replay: Path = typer.Option(None, "--replay", file_okay=False, help="Re-simulate the "
                                "saved regression in DIR and compare the merged figure."),
    no_html: bool = report_opts.NO_HTML,
    show: bool = PRINT_CONFIG,
    task: Task | None = None,
    flags: dict | None = None,
    reports: report_opts.ReportRequest | None = None,
    settings: CloseSettings | None = None,
) -> None:
    """Close coverage with a regression: random seeds and lengths, formal witnesses and a
    model's answers aimed at the merged holes; tests that add nothing are dropped, the
    rest minimized (greedy set cover). Writes OUT/tests/<name>/{tb.sv,test.json},
    OUT/coverage.md, OUT/run.json, OUT/coverage.dat (merged), OUT/html/. Every point left
    is explained (proven unreachable, parameter-constant, excluded, not reached, tool
    error). Killed at any moment, the same command resumes. Exit 0 when the regression
    has a passing test (replay: when the figure is reproduced), 1 otherwise.

    Example: llm4cov close examples/traffic_fsm --out runs/traffic_close
    """
    assert task is not None and flags is not None  # the decorators give them
    assert reports is not None and settings is not None
    sim = load(SimSettings, flags=flags)
    if show:
        print_config({"close": settings, "sim": sim})
        return
    page = None if no_html else reports.html or (out / "html" if out else None)
    raise typer.Exit(_dispatch(task, out, replay, settings, sim, replace(reports, html=page)))


def _dispatch(task: Task, out: Path | None, replay: Path | None, settings: CloseSettings,
              sim: SimSettings, request: report_opts.ReportRequest) -> int:
    """Run (or resume) the loop into ``out``, or replay ``replay``."""
    config = request.config(sim.sim_config())
    if replay is not None:
        if out is not None:
            raise common.fail("give --out DIR (run or resume) or --replay DIR (re-simulate "
                              "it), not both")
        return _replay(task, replay, config, request)
    if out is None:
        raise common.fail("give --out DIR (or --replay DIR)")
    return _run(task, out, settings, config, request, sim.sandbox)


def _lengths(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise common.fail(f"--lengths {text!r}: give positive cycle counts, e.g. 200,1000")
    return values


def _simulate(config):
    """A simulator call that keeps its coverage data (in this process, sandboxed, on
    one evaluator)."""
    from llm4cov.sim.evaluator import Evaluator
    from llm4cov.sim.model.call import SimCall

    evaluator = Evaluator(config)

    def simulate(task: Task, testbench: str):
        return evaluator.evaluate_call(SimCall(task, testbench, keep_coverage=True))

    return simulate


def _formal_ready() -> bool:
    from llm4cov.formal import FormalToolError, find_tools
    from llm4cov.formal.tools import yowasp_cache_dir

    try:
        find_tools()
    except FormalToolError:
        return False
    cache = yowasp_cache_dir()
    return cache.is_dir() and any(cache.iterdir())


def _claim(out: Path, task: Task, settings: CloseSettings, exclusions: tuple[str, ...]) -> None:
    """Record what this run directory is for; a rerun must name the same task, settings
    and exclusion rules (the budget may change)."""
    digest = hashlib.sha256(task.model_dump_json().encode()).hexdigest()
    mine = {"task_id": task.id, "task_sha256": digest, "settings": settings.identity(),
            "exclusions": list(exclusions)}
    path = out / STATE
    if path.exists():
        saved = json.loads(path.read_text(encoding="utf-8"))
        if saved != mine:
            raise common.fail(f"{out} holds a closure run of other {_differs(saved, mine)} "
                              f"({saved.get('task_id')}); use another --out")
        return
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / TASK, task.model_dump_json())
    write_text_atomic(path, json.dumps(mine, indent=2))


def _differs(saved: dict, mine: dict) -> str:
    """What differs between a run directory's claim and this command's, in words:
    ``RTL`` (the task), ``settings (a, b)`` (their names), ``exclusion rules``."""
    parts = []
    if (saved.get("task_id"), saved.get("task_sha256")) != (mine["task_id"],
                                                             mine["task_sha256"]):
        parts.append("RTL")
    given = saved.get("settings")
    theirs: dict = given if isinstance(given, dict) else {}
    names = sorted(k for k in {*theirs, *mine["settings"]}
                   if theirs.get(k) != mine["settings"].get(k))
    if names:
        parts.append(f"settings ({', '.join(names)})")
    if saved.get("exclusions") != mine["exclusions"]:
        parts.append("exclusion rules")
    return " and ".join(parts) or "contents"


def _run(task: Task, out: Path, settings: CloseSettings, config, request, sandbox: bool) -> int:
    from llm4cov.close.loop import Closer
    from llm4cov.close.report import finalize, write_outputs
    from llm4cov.policies import get_policy
    from llm4cov.util.rundir import exclusive

    request.rules()
    with exclusive(out):
        _claim(out, task, settings, config.exclusions)
        policy = get_policy(settings.model, settings.base_url) if settings.model else None
        closer = Closer(task, out, settings, _simulate(config), request.rules(), policy,
                        settings.formal and _formal_ready(), on_step=_say_step,
                        sim_config=config)
        closer.formal_sandbox = sandbox
        if done := closer.resume():
            report_opts.say(f"resuming {out}: {done} steps already finished")
        if protocols := _protocols(task):
            report_opts.say(f"{task.id}: random stimulus speaks {', '.join(protocols)}")
        with common.console.status(f"{task.id}: closing coverage ..."):
            regression = closer.run()
            if regression.state.rtl_error is not None:
                raise common.fail(f"{task.id}: {regression.state.rtl_error}; after fixing "
                                  "the RTL, use another --out")
            final = finalize(closer, regression)
            summary = write_outputs(task, closer, regression, final, request,
                                    common.rtl_root(task), config.backend)
    overall = summary["merged"]["overall"]
    report_opts.say(f"merged coverage {overall or 0:.2f}% of {len(final.names)} tests, "
                    f"closure {final.closure:.2f}% ({regression.ended}) -> {out / 'coverage.md'}")
    return 0 if final.names else 1


def _protocols(task: Task) -> list[str]:
    """The DUT's protocols the random testbenches speak (none when its ports cannot be
    read: the run says why later)."""
    from llm4cov.policies.random_stimulus import recognised_protocols

    try:
        return recognised_protocols(task)
    except ValueError:
        return []


def _say_step(record: StepRecord) -> None:
    o = record.origin
    what = (f"{one_line(o.policy)} seed {o.seed}" + (f", {o.length} cycles" if o.length else "")
            + (f", {len(o.goals)} goals reached" if o.goals else "")) if o else (
        "formal-continuation" if record.phase == "continue" else "formal")
    counts = Counter(v.status for v in record.verdicts)
    verdicts = ("; formal: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
                if counts else "")
    if record.kept:
        fate = f"+{record.added} points, kept {record.name}"
    elif record.name:
        fate = f"{record.status}, added nothing, dropped"
    elif record.phase == "continue":
        fate = "no test"
    else:
        fate = "no new holes to analyze" if not record.analyzed else "no test"
    report_opts.say(f"step {record.step}: {what}: {fate}{verdicts} ({record.wall_s:.0f} s)"
                    + (f" ({record.note})" if record.note else ""))


def _replay(task: Task, out: Path, config, request) -> int:
    from llm4cov.close.report import replay
    from llm4cov.sim.model.exclusions import parse_rules

    rules = request.rules()
    if request.exclude is None and (out / STATE).exists():  # the run's own rules
        saved = json.loads((out / STATE).read_text(encoding="utf-8")).get("exclusions", [])
        rules = parse_rules(saved, str(out / STATE))
    result = replay(task, out, _simulate(config), rules)
    (out / "replay.json").write_text(json.dumps(
        {"saved": result.saved, "replayed": result.replayed, "statuses": result.statuses,
         "same": result.same}, indent=2), encoding="utf-8")
    saved, again = result.saved["overall"] or 0, result.replayed["overall"] or 0
    report_opts.say(f"replayed {len(result.statuses)} tests: merged {again:.4f}% (saved "
                    f"{saved:.4f}%): {'reproduced' if result.same else 'DIFFERENT'}")
    report_opts.say("note: a replay re-simulates the tests on the RTL given (with none, the "
                    "run directory's own task.json: give your RTL to check a run made by "
                    "someone else); the closure's proven-unreachable verdicts are the run's, "
                    "not proven again")
    return 0 if result.same else 1


def register(app: typer.Typer) -> None:
    app.command("close", short_help="Close coverage with a regression; explain what is "
                                     "left.")(close)
