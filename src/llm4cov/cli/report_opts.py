"""CLI options for coverage reports, exports, waveforms and exclusions (``sim``, ``gen``).

``--html DIR``, ``--lcov FILE``, ``--ucis FILE`` need the raw ``coverage.dat``:
``sim`` runs its testbench through :func:`llm4cov.report.capture.capture`, ``gen``
keeps the coverage data of its rounds (``SimCall.keep_coverage``) and writes the
reports from the best round's own run (:func:`write_reports`). ``--trace vcd|fst`` and
``--keep-workdir`` need a build of their own (``gen``: one more run of the best
testbench). ``--exclude FILE`` applies exclusion rules to every count
(``SimConfig.exclusions``). See ``docs/reports.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import typer

from llm4cov.cli import common
from llm4cov.cli.options import F, with_options
from llm4cov.report.capture import TRACE_FORMATS, Capture, capture, fst_headers_missing
from llm4cov.report.data import ReportData, TestRow, build_report_data
from llm4cov.sim.config import SimConfig
from llm4cov.sim.model.call import Simulate
from llm4cov.sim.model.coverage import dut_points
from llm4cov.sim.model.exclusions import (
    ExclusionError,
    ProvenUnreachable,
    Rule,
    load_rules,
    split_points,
    unreachable_misses,
)
from llm4cov.sim.model.observation import Observation
from llm4cov.tasks.model import Task
from llm4cov.util.escape import one_line

HTML = typer.Option(None, "--html", file_okay=False,
                    help="Write the annotated HTML coverage report to DIR/index.html.")
LCOV = typer.Option(None, "--lcov", dir_okay=False,
                    help="Write an LCOV tracefile (lines and branches; genhtml reads it).")
UCIS = typer.Option(None, "--ucis", dir_okay=False,
                    help="Write the coverage as UCIS XML (pyucis).")
TRACE = typer.Option(None, "--trace", help="Dump waveforms: vcd or fst (Verilator "
                     "--trace/--trace-fst); the dump is kept next to the reports.")
KEEP_WORKDIR = typer.Option(False, "--keep-workdir",
                            help="Keep the simulation work dir (sources, build, coverage.dat) "
                                 "and print its path.")
EXCLUDE = typer.Option(None, "--exclude", dir_okay=False,
                       help="Exclusion file: FILE:LINE[-LAST] or 'hier PATTERN' rules, "
                            "optionally with metrics (docs/reports.md).")
NO_HTML = typer.Option(False, "--no-html", help="Skip the HTML report.")
"""``--no-html`` of the commands that write one by default (``gen``, ``close``)."""


#: The report options of ``sim`` and ``gen``: parameter -> (type, option).
REPORT_OPTIONS = {"html": (Path, HTML), "lcov": (Path, LCOV), "ucis": (Path, UCIS),
                  "trace": (str, TRACE), "keep_workdir": (bool, KEEP_WORKDIR),
                  "exclude": (Path, EXCLUDE)}


def with_reports(*names: str) -> Callable[[F], F]:
    """Add the report options ``names`` (all of :data:`REPORT_OPTIONS` when none: ``--html
    --lcov --ucis --trace --keep-workdir --exclude``) to a Typer command that takes
    ``ctx`` and a parameter ``reports``: it gets them as one :class:`ReportRequest`."""
    options = {n: REPORT_OPTIONS[n] for n in names or REPORT_OPTIONS}
    return with_options("reports", options, lambda _ctx, values: ReportRequest(**values))


@dataclass(frozen=True)
class ReportRequest:
    """What the user asked for; paths as given on the command line."""

    html: Path | None = None
    lcov: Path | None = None
    ucis: Path | None = None
    trace: str | None = None
    keep_workdir: bool = False
    exclude: Path | None = None

    def needs_capture(self) -> bool:
        """True when an output needs the raw coverage data (``sim``: its run goes
        through the report capture)."""
        return any((self.html, self.lcov, self.ucis, self.trace, self.keep_workdir))

    def needs_rerun(self) -> bool:
        """True when an output needs a build of its own (a waveform, a kept work dir):
        ``gen`` then runs its best testbench once more for it."""
        return bool(self.trace or self.keep_workdir)

    def rules(self) -> tuple[Rule, ...]:
        """The exclusion rules of ``--exclude`` (none without it).

        Raises:
            CliError: (exit 2) an unreadable or malformed exclusion file, a bad --trace.
        """
        if self.trace is not None and self.trace not in TRACE_FORMATS:
            raise common.fail(f"--trace must be one of {', '.join(TRACE_FORMATS)}, "
                              f"got {self.trace!r}")
        if self.trace == "fst" and (why := fst_headers_missing()):
            raise common.fail(why, code=3)
        if self.exclude is None:
            return ()
        try:
            return load_rules(self.exclude)
        except OSError as exc:
            raise common.fail(f"{self.exclude}: {exc.strerror or exc}") from exc
        except (ExclusionError, UnicodeDecodeError) as exc:
            raise common.fail(str(exc)) from exc

    def config(self, config: SimConfig) -> SimConfig:
        """``config`` with the exclusion rules applied to every count (the request is
        checked first: a clear one-line error, see :meth:`rules`)."""
        self.rules()
        if self.exclude is None:
            return config
        lines = self.exclude.read_text(encoding="utf-8").splitlines()
        return replace(config, exclusions=tuple(lines))


def produce(
    task: Task,
    testbench: str,
    config: SimConfig,
    request: ReportRequest,
    out_dir: Path | None,
    *,
    title: str,
    tb_name: str = "tb.sv",
    any_instance: bool = False,
    rtl_dir: Path | None = None,
) -> Capture:
    """Run ``testbench`` once keeping ``coverage.dat`` (and a waveform dump) in
    ``out_dir`` (None: only in a kept work dir) and write every requested report
    (:func:`write_reports`); prints where each output went.

    Raises:
        ToolchainError: the simulator toolchain is missing (exit 3).
    """
    cap = capture(task, testbench, request.config(config), out_dir, tb_name=tb_name,
                  any_instance=any_instance, keep_workdir=request.keep_workdir,
                  trace=request.trace)
    obs = cap.observation
    write_reports(cap, task, request, title=title, rtl_dir=rtl_dir, tests=[
        TestRow(tb_name, obs.status.value, obs.overall(), tb_name, best=True)])
    return cap


def say(text: str) -> None:
    """Print ``text`` as is: paths are never wrapped or styled (they are copied)."""
    common.console.print(text, soft_wrap=True, markup=False, highlight=False)


def write_reports(
    cap: Capture,
    task: Task,
    request: ReportRequest,
    *,
    title: str,
    rtl_dir: Path | None = None,
    proven: Sequence[ProvenUnreachable] = (),
    tests: Sequence[TestRow] = (),
    warnings: Sequence[str] = (),
) -> ReportData:
    """Write the requested HTML, LCOV and UCIS outputs from ``cap`` (a run's own
    coverage data) and print where each went, the waveform dump and kept work dir
    too. ``warnings``: shown first in the HTML. ``proven``: goals proven unreachable (UNR
    in the HTML and UCIS); ``tests``:
    the runs the HTML lists. Returns the report's content (also without ``--html``).

    Raises:
        OSError: an output cannot be written.
    """
    from llm4cov.report.html import write_html  # jinja2, pygments: only for a report
    from llm4cov.report.lcov import lcov_text, mark_unreachable_ucis, write_ucis_xml

    rules = request.rules()
    sources = {f.name: f.content for f in task.rtl_files}
    data = build_report_data(cap.points, cap.dut_hier, sources, rules, cap.modules,
                             proven=proven, tests=tests)
    data.warnings = list(warnings)
    if request.html:
        say(f"HTML report: {write_html(data, request.html, title, cap.observation)}")
    if request.lcov:
        paths = _source_paths(task, request.lcov, rtl_dir)
        request.lcov.parent.mkdir(parents=True, exist_ok=True)
        request.lcov.write_text(
            lcov_text(cap.points, cap.dut_hier, sources, paths, rules,
                      test_name=task.id, modules=cap.modules),
            encoding="utf-8")
        say(f"LCOV tracefile: {request.lcov}")
    fmt = cap.coverage_format
    if request.ucis and cap.coverage_dat and fmt and fmt.ucis_format:
        request.ucis.parent.mkdir(parents=True, exist_ok=True)
        skipped = write_ucis_xml(cap.coverage_dat, request.ucis, fmt)
        kept, _ = split_points(dut_points(cap.points, cap.dut_hier, sources, cap.modules),
                               rules)
        unr = mark_unreachable_ucis(request.ucis, unreachable_misses(kept, proven, sources))
        say(f"UCIS XML: {request.ucis}" + (
            f" (pyucis skipped {skipped} points whose name has a quote)" if skipped else "")
            + (f" ({unr} bins marked UNR)" if unr else ""))
    say_kept(cap)
    return data


def say_kept(cap: Capture) -> None:
    """Print where ``cap``'s waveform dump and kept work dir went, and its notes, each
    on one line (:func:`~llm4cov.util.escape.one_line`: a note may quote the testbench,
    a dump's name is the testbench's; a line break there would print lines of its own,
    a fake report: a twenty-sixth red team)."""
    lines = ([f"waveform dump: {cap.trace}"] if cap.trace else []) + (
        [f"kept work dir (sources, obj/ build, coverage data): {cap.workdir}"]
        if cap.workdir else []) + [f"note: {n}" for n in cap.notes]
    for line in lines:
        say(one_line(line))


def _source_paths(task: Task, lcov: Path, rtl_dir: Path | None) -> dict[str, Path]:
    """Where genhtml finds each RTL file: in the RTL directory when it holds it, else a
    copy written next to the tracefile (``<name>_src/``)."""
    paths = {}
    copies = lcov.parent / f"{lcov.stem}_src"
    for f in task.rtl_files:
        on_disk = (rtl_dir / f.name).resolve() if rtl_dir else None
        if on_disk and on_disk.is_file():
            paths[f.name] = on_disk
            continue
        target = (copies / f.name).resolve()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(f.content, encoding="utf-8")
        paths[f.name] = target
    return paths


class BestRun:
    """Keeps the coverage data of the best simulation so far, in the agent's order
    (:func:`llm4cov.agent.loop.state_key`, the earliest on ties), and drops the others',
    so that an agent run holds one run's coverage data at a time (``gen``)."""

    def __init__(self) -> None:
        self.testbench: str | None = None
        self.observation: Observation | None = None

    def wrap(self, simulate: Simulate) -> Simulate:
        """``simulate`` asking for the coverage data, returning observations without it
        (the best one is kept here)."""
        async def keeping(task: Task, testbench: str) -> Observation:
            obs = await simulate(task, testbench)
            from llm4cov.agent.loop import state_key  # asyncio: not at start-up

            if self.observation is None or (state_key(obs, task)
                                            > state_key(self.observation, task)):
                self.testbench, self.observation = testbench, obs
            return obs.model_copy(update={"coverage_data": None})

        return keeping

    def of(self, testbench: str | None) -> Observation | None:
        """The kept observation (with its coverage data) when it is ``testbench``'s."""
        return self.observation if testbench is not None and testbench == self.testbench \
            else None
