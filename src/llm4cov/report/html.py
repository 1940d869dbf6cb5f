"""The annotated HTML coverage report: one self-contained page (no network, no JS).

Rendered with a jinja2 template (``templates/report.html.j2``, autoescaped) and
pygments for SystemVerilog highlighting; the CSS is inlined so the page works offline.
It shows the per-instance hierarchy with per-metric percentages, every RTL file with
each line marked covered / partial / uncovered / excluded and its branch, expression and
toggle points, the uncovered items (in engineer's terms) linked to their lines, the
branches that are constant under the elaborated parameters (likely false holes), and
toggles per signal and bit range.
"""

from __future__ import annotations

import html
from pathlib import Path

import jinja2
from pygments.formatters import HtmlFormatter
from pygments.lexers import SystemVerilogLexer
from pygments.token import STANDARD_TYPES, _TokenType

from llm4cov.report.data import ReportData, metric_names
from llm4cov.sim.observation import Observation

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("llm4cov.report", "templates"),
    autoescape=jinja2.select_autoescape(["html", "j2"]),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def highlight_lines(text: str) -> list[str]:
    """SystemVerilog ``text`` as one HTML fragment per source line (pygments classes;
    a token spanning lines, e.g. a block comment, is split at each line end)."""
    lines: list[str] = [""]
    for ttype, value in SystemVerilogLexer(stripnl=False, ensurenl=False).get_tokens(text):
        css = _css_class(ttype)
        for i, piece in enumerate(value.split("\n")):
            if i:
                lines.append("")
            if piece:
                escaped = html.escape(piece)
                lines[-1] += f'<span class="{css}">{escaped}</span>' if css else escaped
    want = len(text.splitlines()) or 1
    return (lines + [""] * want)[:want]


def _css_class(ttype: _TokenType) -> str:
    while ttype not in STANDARD_TYPES:
        ttype = ttype.parent
    return STANDARD_TYPES[ttype]


def file_id(index: int) -> str:
    """The HTML id of the ``index``-th file section; lines are ``<id>-L<n>``."""
    return f"f{index}"


def render_html(data: ReportData, title: str, obs: Observation | None = None) -> str:
    """The report page as a string (UTF-8 HTML5)."""
    ids = {name: file_id(i) for i, name in enumerate(data.files)}
    highlighted = {
        name: highlight_lines("\n".join(line.text for line in lines))
        for name, lines in data.files.items()
    }
    summary = data.summary
    depth0 = data.dut_hier.count(".")
    instances = [
        (hier, hier.count(".") - depth0, metrics)
        for hier, metrics in (summary.per_instance.items() if summary else [])
    ]
    return _ENV.get_template("report.html.j2").render(
        title=title,
        obs=obs,
        data=data,
        metrics=metric_names(summary),
        instances=instances,
        ids=ids,
        highlighted=highlighted,
        pygments_css=HtmlFormatter(style="default").get_style_defs(".code"),
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
