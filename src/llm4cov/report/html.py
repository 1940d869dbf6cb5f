"""The annotated HTML coverage report: one self-contained page (no network).

Rendered with a jinja2 template (``templates/report.html.j2``, autoescaped: every
string from the RTL, the testbench or the run is escaped) and pygments for
SystemVerilog highlighting; the CSS and one fixed script (:data:`SCRIPT`: sortable
tables, collapsible hierarchy) are inlined so the page works offline. Nothing from a
testbench ever reaches a script. It shows the runs behind the report, the per-metric
summary with the proven-unreachable (UNR) and parameter-constant figures, the
per-instance hierarchy with subtree scores, the module view, every RTL file with each
line marked covered / partial / uncovered / UNR / excluded and its points, the
uncovered items (in engineer's terms) linked to their lines, and toggles per signal.
Laid out to fit a 1,400-px window without sideways scrolling (long lines wrap).
"""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path

import jinja2
from pygments.formatters import HtmlFormatter
from pygments.lexers import SystemVerilogLexer
from pygments.token import STANDARD_TYPES, _TokenType

from llm4cov.report.data import ReportData, metric_names
from llm4cov.sim.model.observation import Observation, overall_percent

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("llm4cov.report", "templates"),
    autoescape=jinja2.select_autoescape(["html", "j2"]),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_STYLE = "default"
SCRIPT = _ENV.loader.get_source(_ENV, "report.js")[0] if _ENV.loader else ""
"""The page's only script (``templates/report.js``): fixed text, no data in it."""


@cache
def _styled_classes() -> frozenset[str]:
    """The pygments classes the style gives a rule (others need no span)."""
    css = HtmlFormatter(style=_STYLE).get_style_defs(".code")
    return frozenset(STANDARD_TYPES[t] for t in STANDARD_TYPES
                     if STANDARD_TYPES[t] not in ("", "w")  # whitespace needs no colour
                     and f".code .{STANDARD_TYPES[t]} " in css)


def highlight_lines(text: str) -> list[str]:
    """SystemVerilog ``text`` as one HTML fragment per source line (pygments classes,
    only those the style colors; a token spanning lines, e.g. a block comment, is split
    at each line end; neighbours of one class share a span)."""
    styled = _styled_classes()
    lines: list[list[tuple[str, str]]] = [[]]
    for ttype, value in SystemVerilogLexer(stripnl=False, ensurenl=False).get_tokens(text):
        css = _css_class(ttype)
        css = css if css in styled else ""
        for i, piece in enumerate(value.split("\n")):
            if i:
                lines.append([])
            if not piece:
                continue
            if lines[-1] and lines[-1][-1][0] == css:
                lines[-1][-1] = (css, lines[-1][-1][1] + piece)
            else:
                lines[-1].append((css, piece))
    out = ["".join(f'<span class="{c}">{html.escape(v)}</span>' if c else html.escape(v)
                   for c, v in line) for line in lines]
    want = len(text.splitlines()) or 1
    return (out + [""] * want)[:want]


def _css_class(ttype: _TokenType) -> str:
    while ttype not in STANDARD_TYPES:
        parent = ttype.parent
        assert parent is not None, ttype  # every type descends from Token, a standard type
        ttype = parent
    return STANDARD_TYPES[ttype]


def file_id(index: int) -> str:
    """The HTML id of the ``index``-th file section; lines are ``<id>-L<n>``."""
    return f"f{index}"


def render_html(data: ReportData, title: str, obs: Observation | None = None) -> str:
    """The report page as a string (UTF-8 HTML5)."""
    ids = {name: file_id(i) for i, name in enumerate(data.files)}
    highlighted = {  # one fragment per line, a last empty line too (highlight_lines
        # counts lines as splitlines does, which drops it)
        name: (highlight_lines("\n".join(line.text for line in lines)) + [""] * len(lines))
        [:len(lines)] for name, lines in data.files.items()
    }
    open_files = {name for name, lines in data.files.items()
                  if any(line.status in ("uncovered", "partial", "unr") for line in lines)}
    return _ENV.get_template("report.html.j2").render(
        title=title,
        obs=obs,
        data=data,
        metrics=metric_names(data.summary),
        ids=ids,
        highlighted=highlighted,
        open_files=open_files,
        overall=overall_percent,
        script=SCRIPT,
        pygments_css=HtmlFormatter(style=_STYLE).get_style_defs(".code"),
    )


def write_html(data: ReportData, out_dir: Path, title: str, obs: Observation | None = None
               ) -> Path:
    """Write ``out_dir/index.html`` and return its path.

    Raises:
        OSError: the directory cannot be written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "index.html"
    path.write_text(render_html(data, title, obs), encoding="utf-8")
    return path
