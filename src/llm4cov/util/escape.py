"""One escaping rule per output format, for text a testbench, a model or a task wrote.

Every such text is hostile (README, "Untrusted testbenches"): a testbench prints what it
likes, a model answers what it likes, a task row names what it likes. Where it reaches

- **a terminal** (stdout, stderr, logs): :func:`terminal` shows every C0 control
  character but TAB and LF, DEL, every C1 control character (U+0080-U+009F) and the
  Unicode bidirectional overrides/isolates (U+202A-U+202E, U+2066-U+2069) as a visible
  escape (``\\x1b``, ``\\x9b``, ``\\u202e``), so no escape sequence (title, clipboard,
  clear screen, cursor moves) and no reordering of the line takes effect; a CR before
  an LF is dropped, any other CR is shown as ``\\r``;
- **Markdown** (CommonMark/GFM): :func:`md_block` puts text in a fenced code block whose
  fence is longer than any backtick run in the text (CommonMark 0.31, 4.5: a closing
  fence is at least as long as the opening one), :func:`md_code` in a code span
  delimited the same way (6.1), :func:`md_text` backslash-escapes every character that
  can start inline structure (6: raw HTML, links, images, emphasis, entities, code; GFM
  tables and strikethrough); the inline forms are one line (a blank line would end the
  paragraph, and with it the span);
- **JSON** printed to a terminal: :func:`json_terminal` writes the characters JSON
  leaves raw (DEL, C1, the bidi controls) as ``\\uXXXX`` escapes, which parse to the
  same string (RFC 8259, 7).

The terminal rule is applied inside the Markdown and JSON rules, so their outputs are
terminal-safe too. HTML is escaped by jinja2's autoescape (``report/html.py``); LCOV
and UCIS take only names checked at load time (``tasks/model.py``, ``report/lcov.py``).
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"\r(?!\n)|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CRLF = re.compile(r"\r\n")
_JSON_RAW = re.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_MD_INLINE = re.compile(r"([\\`*_\[\]<>&|~!])")
_BACKTICKS = re.compile(r"`+")


def _visible(char: str) -> str:
    if char == "\r":
        return "\\r"
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal(text: str) -> str:
    """``text`` safe to print on a terminal: control characters shown as escapes (see
    the module docstring); TAB and LF are kept, CRLF becomes LF."""
    return _CONTROL.sub(lambda m: _visible(m.group(0)), _CRLF.sub("\n", text))


def one_line(text: str) -> str:
    """:func:`terminal` with LF and TAB shown as ``\\n`` and ``\\t`` too: one line."""
    return terminal(text).replace("\n", "\\n").replace("\t", "\\t")


def json_terminal(json_text: str) -> str:
    """JSON text (as ``json.dumps`` or pydantic writes it) with the characters that
    JSON leaves raw but a terminal acts on written as ``\\uXXXX``; the same value."""
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group(0)):04x}", json_text)


def longest_backtick_run(text: str) -> int:
    """The length of the longest run of backticks in ``text`` (0 when none)."""
    return max((len(m.group(0)) for m in _BACKTICKS.finditer(text)), default=0)


def md_block(text: str, info: str = "text") -> str:
    """A fenced code block holding ``text`` (terminal-safe) that no line of ``text``
    can close: the fence is one backtick longer than its longest run, at least 3.
    ``info`` is the info string (a fixed word of ours, e.g. ``text``)."""
    fence = "`" * max(3, longest_backtick_run(text) + 1)
    body = terminal(text)
    return f"{fence}{info}\n{body}{'' if body.endswith(chr(10)) else chr(10)}{fence}"


def md_code(text: str, in_table: bool = False) -> str:
    """An inline code span showing ``text`` literally on one line: delimited by one
    backtick more than its longest run; padded by a space on each side (CommonMark
    strips exactly one) when it starts or ends with a backtick or a space;
    ``in_table``: ``|`` is escaped (GFM splits cells at it even inside a code span and
    shows ``\\|`` as ``|``)."""
    body = one_line(text)
    if in_table:
        body = body.replace("|", "\\|")
    ticks = "`" * (longest_backtick_run(body) + 1)
    pad = " " if body[:1] in ("`", " ") or body[-1:] in ("`", " ") else ""
    return f"{ticks}{pad}{body}{pad}{ticks}"


def md_text(text: str) -> str:
    """``text`` as literal Markdown prose on one line: every character that can start
    inline structure (``\\ ` * _ [ ] < > & | ~ !``) is backslash-escaped (CommonMark
    2.4: any ASCII punctuation may be escaped), so no HTML, link, image, entity,
    emphasis, code span or table cell comes out of it."""
    return _MD_INLINE.sub(r"\\\1", one_line(text))
