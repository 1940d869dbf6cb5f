"""Verilator's lexical view of preprocessed text, as far as the safety check needs it.

The rules mirror Verilator's own lexer (``src/verilog.l`` of the pinned 5.048 wheel), not
the SystemVerilog standard, because the check must see what Verilator compiles:

- strings: ``"..."`` with backslash escapes (a raw newline does not end one) and
  triple-quoted strings (SV-2023, accepted in every language mode);
- attributes ``(* name ... *)``: Verilator skips everything up to the first ``*)``,
  quotes included;
- ``/*verilator ...*/`` meta-comments and ``//`` comments (other comments are already
  gone after ``verilator -E``; a stray ``/*`` is code, and a syntax error there);
- escaped identifiers ``\\name`` up to white space, identifiers with ``$``, system
  identifiers ``$name``, directives ```name``.

Every other non-blank character is code (``other``). Where this view and Verilator's
could differ (``table`` bodies, library maps), Verilator reports a syntax error and
nothing is built; so does a string or attribute left open, which here runs to the end
of the text (each pattern matches in one pass: the scan is linear in the text).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass

_WS = r"[ \t\f\r\n]"
_ID = r"[a-zA-Z_][a-zA-Z0-9_$]*"
_ESCID = r"\\[^ \t\f\r\n]+"
_TOKEN = re.compile(
    rf"""
    (?P<str>\"\"\"(?>\\(?:.|\n|\Z)|[^\\])*?(?:\"\"\"|\Z)
            |"(?>[^"\\]+|\\(?:\r*\n|.|\Z))*(?:"|\Z))
  | (?P<skip>/\*verilator[^*]*\*/|/\*\*/|//[^\n]*
            |\(\*{_WS}*(?:{_ID}|{_ESCID})[\s\S]*?(?:\*\)|\Z))
  | (?P<id>{_ESCID}|{_ID})
  | (?P<sys>\$[a-zA-Z0-9_$]+)
  | (?P<dir>`[a-zA-Z_0-9]+)
  | (?P<punct>[(),])
  | (?P<other>[^\s"\\/($`a-zA-Z_),]+|\S)
    """,
    re.VERBOSE,
)
_LINE_MARKER = re.compile(r'^`line[ \t]+(\d+)[ \t]+"(.*)"[ \t]+([0-2])[ \t]*\r?$', re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Token:
    """One code token: ``kind`` is ``str``, ``id``, ``sys``, ``dir``, ``punct`` or
    ``other``; ``offset`` is the character offset in the lexed text."""

    kind: str
    text: str
    offset: int


def tokens(text: str) -> Iterator[Token]:
    """The code tokens of ``text`` in order (comments, meta-comments, attributes skipped)."""
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or ""
        if kind != "skip":
            yield Token(kind, match.group(), match.start())


_META = re.compile(r"(?:/\*|//)[ \t]*verilator\b", re.IGNORECASE)


def metacomments(text: str) -> Iterator[Token]:
    """Verilator's meta-comments in ``text`` (``/*verilator ...*/``, ``// verilator ...``:
    Verilator reads a line comment whose first word is ``verilator`` as one, in any
    case), as ``meta`` tokens holding the whole comment."""
    for match in _TOKEN.finditer(text):
        if match.lastgroup == "skip" and _META.match(match.group()):
            yield Token("meta", match.group(), match.start())


def string_value(token: str) -> str:
    """The characters a string literal token stands for (quotes removed, escapes decoded)."""
    body = token[3:-3] if token.startswith('"""') else token[1:-1]
    return unquote(body)


def unquote(body: str) -> str:
    """Decode escapes exactly as Verilator does (``VString::unquoteSVString``).

    ``\\n \\t \\r \\a \\f \\v``, ``\\xHH`` (two hex digits), one to three digits as octal
    (Verilator also takes 8 and 9 and wraps at 256), any other ``\\c`` is ``c``; an
    unknown letter escape is an error there and ends the value here. An octal escape left
    open at the end is dropped, like Verilator does.
    """
    named = {"n": "\n", "a": "\a", "f": "\f", "r": "\r", "t": "\t", "v": "\v"}
    out: list[str] = []
    quoted, value, digits, i = False, 0, 0, 0
    while i < len(body):
        c = body[i]
        if not quoted:
            if c == "\\":
                quoted, digits = True, 0
            else:
                out.append(c)
        elif "0" <= c <= "9":
            value = (value * 8 + ord(c) - 48) & 0xFF
            digits += 1
            if digits == 3:
                out.append(chr(value))
                quoted, value, digits = False, 0, 0
        elif digits:
            out.append(chr(value))
            quoted, value, digits = False, 0, 0
            continue  # the character after a short octal escape is plain text
        else:
            quoted = False
            if c in named:
                out.append(named[c])
            elif c == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", body[i + 1 : i + 3]):
                out.append(chr(int(body[i + 1 : i + 3], 16)))
                i += 2
            elif c.isascii() and c.isalnum():
                break
            else:
                out.append(c)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class LineMarker:
    """A `` `line N "file" level`` marker of ``verilator -E`` output: the next output line
    is line ``line`` of ``file``; level 1 enters an include, 2 returns from one."""

    offset: int
    line: int
    file: str
    level: int


def line_markers(text: str) -> list[LineMarker]:
    """Every line marker in ``text`` (also ones a source forged with `` `line``)."""
    return [
        LineMarker(m.start(), int(m.group(1)), m.group(2), int(m.group(3)))
        for m in _LINE_MARKER.finditer(text)
    ]


class SourceMap:
    """Maps an offset in ``verilator -E`` output back to ``file:line``."""

    def __init__(self, text: str, markers: list[LineMarker], default_file: str) -> None:
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._marks = [(self._line_of(m.offset), m) for m in markers]
        self._mark_lines = [line for line, _ in self._marks]
        self._default = default_file

    def _line_of(self, offset: int) -> int:
        return bisect_right(self._line_starts, offset) - 1

    def where(self, offset: int) -> str:
        """``file:line`` of the source text that produced ``offset``."""
        line = self._line_of(offset)
        k = bisect_right(self._mark_lines, line) - 1
        if k < 0:
            return f"{self._default}:{line + 1}"
        mark_line, mark = self._marks[k]
        if mark_line == line:  # on the marker: the line it announces
            return f"{mark.file}:{mark.line}"
        return f"{mark.file}:{mark.line + line - mark_line - 1}"
