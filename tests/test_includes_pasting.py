"""The include rule on token pasting that joins two macro arguments (tasks/includes.py).

pulp-platform axi's ``include/axi/assign.svh`` (and its copies in cva6, snitch, idma...)
pastes two macro arguments together, ``__lhs``__lhs_sep``id``, and an RTL folder that
held it could not be loaded at all, even when nothing included it. Such a paste can
build a directive only from a backtick in the arguments (`` `inclu`` and ``de``), so it
is judged where the macro is called: plain names are kept, a backtick is refused (also
through a macro that passes its own argument on, a default value, or an alias that hides
the argument list). The headers below are written for these tests in the style of
pulp's (no line of it is copied).
"""

from __future__ import annotations

from pathlib import Path

import pyslang
import pytest

from llm4cov.tasks import includes
from llm4cov.tasks.hdl import UnsafeIncludeError, parse_design
from llm4cov.tasks.model import SourceFile

#: Two levels as in pulp's assign.svh: an inner macro that pastes ``__lhs``__lhs_sep``,
#: an outer one that passes its own arguments on, and a flat-port macro (``.``pat``).
PULP_STYLE = """`ifndef MY_ASSIGN_SVH_
`define MY_ASSIGN_SVH_
`define __MY_TO_A(__opt_as, __lhs, __lhs_sep, __rhs, __rhs_sep) \\
  __opt_as __lhs``__lhs_sep``id   = __rhs``__rhs_sep``id;        \\
  __opt_as __lhs``__lhs_sep``data = __rhs``__rhs_sep``data;
`define MY_ASSIGN_A(dst, src)              \\
  `__MY_TO_A(assign, dst.a, _, src.a, _)   \\
  assign dst.a_valid = src.a_valid;        \\
  assign src.a_ready = dst.a_ready;
`define MY_SET_FROM_REQ(lhs, req) `__MY_TO_A(, lhs.a, _, req.a, .)
`define MY_TO_FLAT_PORT(pat, req) \\
  .``pat``_aid   ( req.a.id   ), \\
  .``pat``_adata ( req.a.data )
`endif
"""

USER = """`include "my/assign.svh"
interface my_if; logic [3:0] a_id, a_data; logic a_valid, a_ready; endinterface
module top(my_if slv, my_if mst);
  `MY_ASSIGN_A(slv, mst)
endmodule
"""


def _problems(texts: dict[str, str]) -> list[str]:
    return [str(p) for p in includes.problems(texts, ["include", "."])]


def test_pulp_style_header_nothing_includes_is_kept():
    assert _problems({"include/my/assign.svh": PULP_STYLE, "a.sv": "module a; endmodule\n"}) \
        == []


def test_pulp_style_header_called_with_plain_names_is_kept():
    texts = {"include/my/assign.svh": PULP_STYLE, "top.sv": USER}
    assert _problems(texts) == []
    files = [SourceFile(name=n, content=t) for n, t in texts.items()]
    design = parse_design(files, ["include"])
    assert "top" in {m.name for m in design.decls()}


@pytest.mark.parametrize(("call", "why"), [
    ("`__MY_TO_A(assign, `inclu, de, b, _)",
     "`__MY_TO_A is given text holding a backtick as its argument 2"),
    ("`MY_ASSIGN_A(`inclu, mst)",  # the outer macro passes dst on to __lhs
     "`MY_ASSIGN_A is given text holding a backtick as its argument 1"),
    ('`MY_SET_FROM_REQ(x, "`define X")',  # a string an escaped name could expose
     "`MY_SET_FROM_REQ is given text holding a backtick as its argument 2"),
])
def test_pulp_style_macro_given_a_backtick_is_refused(call, why):
    texts = {"include/my/assign.svh": PULP_STYLE,
             "top.sv": f'`include "my/assign.svh"\nmodule top; {call} endmodule\n'}
    found = _problems(texts)
    assert len(found) == 1 and found[0].startswith(f"top.sv:2: {why}, which the macro pastes")
    files = [SourceFile(name=n, content=t) for n, t in texts.items()]
    with pytest.raises(UnsafeIncludeError):
        parse_design(files, ["include"])


def test_alias_hiding_the_argument_list_is_refused():
    text = "`define P(a, b) a``b\n`define ALIAS `P\n"
    # in another file too (the alias's file alone has no paste and no argument list)
    assert _problems({"a.sv": "`define ALIAS `P\n", "b.sv": "`define P(a, b) a``b\n"})
    assert _problems({"t.sv": text}) == [
        "t.sv:2: `P is used without an argument list that can be read here, and the macro "
        "pastes its arguments to each other: they must be seen to hold no backtick (the "
        "joined text could form a directive, such as an `include, whose file cannot be "
        "checked)"]


def test_default_value_with_a_backtick_is_refused():
    text = "`define P(a = `inclu, b = de) a``b\n"
    assert _problems({"t.sv": text}) == [
        "t.sv:1: the default value of the argument a of the macro `P holds a backtick, and "
        "the macro pastes that argument to another: the joined text can form a directive, "
        "such as an `include, whose file cannot be checked"]
    assert _problems({"t.sv": "`define P(a, b, c = `Y) a``b c\n"}) == []  # c: not pasted


def test_escaped_name_before_a_pasted_argument_is_refused():
    assert _problems({"t.sv": "`define P(a) x``\\z ``a\n"}) == [
        "t.sv:1: token pasting (``) of a macro argument after \\z: no escaped name (no "
        "backslash) may come before a pasted argument (an escaped name swallows the "
        "argument's quote and exposes its text as directives, such as an `include, whose "
        "file cannot be checked)"]


# The verdicts against pyslang itself: each hostile text makes pyslang open a file no
# `include names (a marker beside it); the kept texts do not. The first two were kept
# by the rule before (fixed text before two pasted arguments; one argument between fixed
# texts that end a directive name).
HOSTILE = [
    '`define P(a, b) a``b\n`P(`inclu, de) "marker.vh"\n',
    '`define P(a, b) x``a``b\n`P(`inclu, de) "marker.vh"\n',
    '`define P(a) x``a``de\n`P(`inclu) "marker.vh"\n',
    '`define P(a, b) a``b\n`define Q(c) `P(c, de)\n`Q(`inclu) "marker.vh"\n',
    '`define P(a, b) a``b\n`define ALIAS `P\n`ALIAS(`inclu, de) "marker.vh"\n',
]


def _opens_marker(tmp_path: Path, text: str) -> bool:
    (tmp_path / "marker.vh").write_text("`define MARKER 1\n")
    sm = pyslang.SourceManager()
    sm.setDisableLocalIncludes(True)
    sm.addUserDirectories(str(tmp_path))
    buf = sm.assignText(str(tmp_path / "t.sv"), text)
    pyslang.syntax.SyntaxTree.fromBuffers([buf], sm, pyslang.Bag([]))
    return any("marker" in str(sm.getFullPath(b)) for b in sm.getAllBuffers())


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_pasting_is_refused_and_really_builds_an_include(tmp_path: Path, text):
    assert _problems({"t.sv": text})
    assert _opens_marker(tmp_path, text)


def test_pulp_style_kept_text_builds_no_include(tmp_path: Path):
    text = PULP_STYLE + USER.split("\n", 1)[1] + '// "marker.vh"\n'
    assert _problems({"t.sv": text}) == []
    assert not _opens_marker(tmp_path, text)
