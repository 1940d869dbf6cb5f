"""CLI options for coverage reports, exports, waveforms and exclusions (``sim``, ``gen``).

``--html DIR``, ``--lcov FILE``, ``--ucis FILE``, ``--trace vcd|fst``,
``--keep-workdir`` need the raw ``coverage.dat``, so they run the testbench through
:func:`llm4cov.report.capture.capture`; ``--exclude FILE`` applies exclusion rules to
every count (``SimConfig.exclusions``). See ``docs/reports.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import typer

from llm4cov.cli import common
from llm4cov.report.capture import TRACE_FORMATS, Capture, capture, fst_headers_missing
from llm4cov.report.data import build_report_data
from llm4cov.report.html import write_html
from llm4cov.report.lcov import lcov_text, write_ucis_xml
from llm4cov.sim.config import SimConfig
from llm4cov.sim.exclusions import ExclusionError, Rule, load_rules, parse_rules
from llm4cov.tasks.model import Task

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
        """True when an output needs the raw coverage data (one more evaluator run)."""
        return any((self.html, self.lcov, self.ucis, self.trace, self.keep_workdir))

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
    ``out_dir`` (None: only in a kept work dir) and write every requested report;
    prints where each output went.

    Raises:
        ToolchainError: the simulator toolchain is missing (exit 3).
    """
    cap = capture(task, testbench, request.config(config), out_dir, tb_name=tb_name,
                  any_instance=any_instance, keep_workdir=request.keep_workdir,
                  trace=request.trace)
    rules = parse_rules(request.config(config).exclusions)
    sources = {f.name: f.content for f in task.rtl_files}

    def say(text: str) -> None:  # paths are never wrapped or styled: they are copied
        common.console.print(text, soft_wrap=True, markup=False, highlight=False)

    if request.html:
        data = build_report_data(cap.points, cap.dut_hier, sources, rules, cap.modules)
        say(f"HTML report: {write_html(data, request.html, title, cap.observation)}")
    if request.lcov:
        paths = _source_paths(task, request.lcov, rtl_dir)
        request.lcov.parent.mkdir(parents=True, exist_ok=True)
        request.lcov.write_text(
            lcov_text(cap.points, cap.dut_hier, sources, paths, rules,
                      test_name=task.id, modules=cap.modules),
            encoding="utf-8")
        say(f"LCOV tracefile: {request.lcov}")
    if request.ucis and cap.coverage_dat:
        request.ucis.parent.mkdir(parents=True, exist_ok=True)
        skipped = write_ucis_xml(cap.coverage_dat, request.ucis)
        say(f"UCIS XML: {request.ucis}" + (
            f" (pyucis skipped {skipped} points whose name has a quote)" if skipped else ""))
    if cap.trace:
        say(f"waveform dump: {cap.trace}")
    if cap.workdir:
        say(f"kept work dir (sources, obj/ build, coverage data): {cap.workdir}")
    for note in cap.notes:
        say(f"note: {note}")
    return cap


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
