"""One escaping rule per output format, for text a testbench, a model or a task wrote.

Every such text is hostile (docs/evaluator.md, "Untrusted testbenches"): a testbench prints what it
likes, a model answers what it likes, a task row names what it likes. Where it reaches

- **a terminal** (stdout, stderr, logs): :func:`terminal` shows every C0 control
  character but TAB and LF, DEL, every C1 control character (U+0080-U+009F) and every
  Unicode format character (category Cf: the bidirectional marks, embeddings,
  overrides and isolates, zero-width characters, the BOM, tag characters) as a visible
  escape (``\\x1b``, ``\\x9b``, ``\\u202e``, ``\\u200f``), so no escape sequence (title,
  clipboard, clear screen, cursor moves), no reordering of the line and no invisible
  text takes effect; a CR before an LF is dropped, any other CR is shown as ``\\r``;
- **Markdown** (CommonMark/GFM): :func:`md_block` puts text in a fenced code block whose
  fence is longer than any backtick run in the text (CommonMark 0.31, 4.5: a closing
  fence is at least as long as the opening one), :func:`md_code` in a code span
  delimited the same way (6.1), :func:`md_text` backslash-escapes every character that
  can start inline structure (6: raw HTML, links, images, emphasis, entities, code; GFM
  tables and strikethrough); the inline forms are one line (a blank line would end the
  paragraph, and with it the span);
- **a model's prompt** (chat messages, also training data): :func:`prompt_block` fences
  a multi-line text (testbench, log, spec and RTL files) as :func:`md_block` does but
  keeps it byte for byte; :func:`prompt_line` keeps a text that our own words surround
  (a note, an uncovered item) on one line that starts no block; :func:`md_code` shows a
  name (a file, an instance) in a code span; :func:`prompt_prose` keeps the task's
  instruction as prose whose lines start no heading, fence, HTML block or setext
  underline. So no text of a testbench, a model or a task can end its delimiter or
  pass a heading off as one of the prompt's own sections (CommonMark 0.31, 4.2-4.6);
  all three also break the chat-template control strings (:func:`no_special_tokens`),
  since the model reads tokens, not Markdown;
- **JSON** printed to a terminal: :func:`json_terminal` writes the characters JSON
  leaves raw (DEL, C1, the format characters) as ``\\uXXXX`` escapes, which parse to
  the same string (RFC 8259, 7).

The terminal rule is applied inside the Markdown and JSON rules, so their outputs are
terminal-safe too; of the prompt rules, only :func:`prompt_block` leaves control
characters as they are (see there). HTML is escaped by jinja2's autoescape
(``report/html.py``); LCOV and UCIS take only names checked at load time
(``tasks/model.py``, ``report/lcov.py``).
"""

from __future__ import annotations

import re

#: Unicode's format characters (general category Cf, Unicode 15; a test checks it
#: against the running Python's ``unicodedata``): invisible, and the bidi ones reorder.
_FORMAT = ("\xad\u0600-\u0605\u061c\u06dd\u070f\u0890-\u0891\u08e2\u180e\u200b-\u200f"
           "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
           "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001"
           "\U000e0020-\U000e007f")
_CONTROL = re.compile(rf"\r(?!\n)|[\x00-\x08\x0b-\x1f\x7f-\x9f{_FORMAT}]")
_CRLF = re.compile(r"\r\n")
_JSON_RAW = re.compile(rf"[\x7f-\x9f{_FORMAT}]")
_MD_INLINE = re.compile(r"([\\`*_\[\]<>&|~!])")
# The chat-template control strings of the common model families: ``<|...|>``
# (ChatML/Qwen/SmolLM, Llama 3, Phi, harmony) and DeepSeek's fullwidth ``<｜...｜>``,
# Llama 2/Mistral ``<s>``, ``</s>``, ``[INST]``, ``<<SYS>>`` and Mistral's bracketed tool
# and prompt tokens, Gemma's ``<start_of_turn>``/``<end_of_turn>``/``<bos>``/``<eos>``.
# Group 1: the opening character the break goes after.
_SPECIAL_TOKEN = re.compile(
    r"(<)(?=[|\uff5c])|(<)(?=/?(?:s|bos|eos|pad|unk|start_of_turn|end_of_turn)>)"
    r"|(\[)(?=/?(?:INST|SYSTEM_PROMPT|TOOL_CALLS|AVAILABLE_TOOLS|TOOL_RESULTS)\])"
    r"|(<)(?=</?SYS>>)")
#: What :func:`no_special_tokens` puts inside a control string (ZERO WIDTH SPACE).
TOKEN_BREAK = "\u200b"
_BACKTICKS = re.compile(r"`+")
# Line breaks that terminal() keeps: LF, and the Unicode line and paragraph separators
# (str.splitlines and some tokenizers break lines there; CommonMark does not).
_KEPT_BREAKS = re.compile(r"[\n\u2028\u2029]")
# What opens a block at the start of a line (after spaces or tabs), CommonMark 0.31
# 4.1-4.6, 5.1-5.2: an ATX heading, a code fence, a block quote, an HTML block, a bullet
# or ordered list item, a thematic break or setext underline. Group 1: the leading blanks;
# group 2: the digits of an ordered-list marker (the backslash goes after them).
_BLOCK_START = re.compile(
    r"([ \t]*)(?:[#><]|`{3}|~{3}|[-+*_=](?=[-+*_= \t]|$)|(\d{1,9})(?=[.)](?:[ \t]|$)))")
# The part of it that can outlive its line or pass as a heading, for prose: an ATX
# heading, a code fence, an HTML block (its kinds 1-5 end only at their own closer), a
# setext underline or thematic break (a line of ``=`` or ``-`` only), at the start of a
# line or of the list items and block quotes that start there (``- > ## x``). Group 1:
# the blanks and container markers before it.
_PROSE_BLOCK_START = re.compile(
    r"(?m)^((?:[ \t]*+(?:(?:[-+*]|\d{1,9}[.)])(?=[ \t])|>))*+[ \t]*+)"
    r"(?=[#<]|`{3}|~{3}|[=-][=\- \t]*$)")


def _visible(char: str) -> str:
    if char == "\r":
        return "\\r"
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}" if code <= 0xFFFF \
        else f"\\U{code:08x}"


def terminal(text: str) -> str:
    """``text`` safe to print on a terminal: control characters shown as escapes (see
    the module docstring); TAB and LF are kept, CRLF becomes LF."""
    return _CONTROL.sub(lambda m: _visible(m.group(0)), _CRLF.sub("\n", text))


def _break(char: str) -> str:
    return "\\n" if char == "\n" else f"\\u{ord(char):04x}"


def _one_line_keeping_tabs(text: str) -> str:
    return _KEPT_BREAKS.sub(lambda m: _break(m.group(0)), terminal(text))


def one_line(text: str) -> str:
    """:func:`terminal` with LF and TAB shown as ``\\n`` and ``\\t`` too, and the
    Unicode line and paragraph separators as ``\\u2028`` and ``\\u2029``: one line."""
    return _one_line_keeping_tabs(text).replace("\t", "\\t")


def json_terminal(json_text: str) -> str:
    """JSON text (as ``json.dumps`` or pydantic writes it) with the characters that
    JSON leaves raw but a terminal acts on written as ``\\uXXXX``; the same value."""
    return _JSON_RAW.sub(lambda m: _json_escape(m.group(0)), json_text)


def _json_escape(char: str) -> str:
    """``\\uXXXX``, a surrogate pair past the BMP (RFC 8259, 7)."""
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def longest_backtick_run(text: str) -> int:
    """The length of the longest run of backticks in ``text`` (0 when none)."""
    return max((len(m.group(0)) for m in _BACKTICKS.finditer(text)), default=0)


def code_fence(text: str) -> str:
    """The backtick fence that no line of ``text`` can close: one backtick longer than
    its longest backtick run, at least 3 (CommonMark 0.31, 4.5: a closing fence is of
    the opening fence's character and at least as long; a tilde line never closes a
    backtick fence, so tilde runs need not count)."""
    return "`" * max(3, longest_backtick_run(text) + 1)


def md_block(text: str, info: str = "text") -> str:
    """A fenced code block holding ``text`` (terminal-safe) that no line of ``text``
    can close: the fence is one backtick longer than its longest run, at least 3.
    ``info`` is the info string (a fixed word of ours, e.g. ``text``)."""
    fence = code_fence(text)
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


def no_special_tokens(text: str) -> str:
    """``text`` with every chat-template control string of the common model families
    (``<|im_end|>``, ``<|eot_id|>``, ``<s>``, ``[INST]``, ``<start_of_turn>``, ...) broken
    by a :data:`TOKEN_BREAK` after its first character, so a tokenizer reads it as plain
    text, not as the special token that ends a turn or starts a ``system`` one (a
    testbench that printed ``<|im_end|><|im_start|>system`` gave the next prompt a
    ``system`` turn of its own). Idempotent; other text is unchanged (SystemVerilog has
    no such string outside its string literals and comments)."""
    return _SPECIAL_TOKEN.sub(lambda m: f"{m.group(0)}{TOKEN_BREAK}", text)


def prompt_block(text: str, info: str = "text") -> str:
    """``text`` as a fenced code block of a model's prompt: ``text`` without its trailing
    white space, between two :func:`code_fence` lines (``info``, a fixed word of ours
    such as ``systemverilog``, after the opening one). No line of ``text``, however it
    breaks lines (LF, CR, U+2028 ...), can close the block, so nothing in it can end
    the block and write prompt sections of its own; a text without a run of three
    backticks gets the plain three-backtick fence, so such prompts are as before.

    Unlike :func:`md_block`, the text is kept byte for byte but for the chat-template
    control strings :func:`no_special_tokens` breaks (control characters are not made
    visible): the model reads the testbench and the RTL to rewrite them and must
    see the very characters it is to reproduce, and a control character means nothing
    to Markdown inside a code block. A prompt that is printed goes through
    :func:`terminal` where it is printed, as any other text."""
    body = no_special_tokens(text.rstrip())
    fence = code_fence(body)
    return f"{fence}{info}\n{body}\n{fence}"


def prompt_line(text: str) -> str:
    """``text`` as one line of a model's prompt after words of ours (``Note: ...``, a
    list item ``- ...``): :func:`terminal`, with every line break (LF, and the U+2028
    and U+2029 separators; CR, VT, FF, NEL are already escaped) shown as an escape, so
    it cannot start a line of its own; a character that would open a block where the
    text starts (``#`` heading, code fence, ``>``, HTML, list marker, thematic break or
    setext underline: what a list item's content may open) gets a backslash before it
    (CommonMark 2.4), so ``- ## Task`` stays a list item's text. TAB is kept (an RTL
    source line keeps its layout); a text that starts no block is unchanged, as is any
    inline markup in it (the code spans of uncovered items and notes), which cannot
    leave the line."""
    body = no_special_tokens(_one_line_keeping_tabs(text))
    m = _BLOCK_START.match(body)
    if m is None:
        return body
    at = m.end(2) if m.group(2) is not None else m.end(1)
    return f"{body[:at]}\\{body[at:]}"


def prompt_prose(text: str) -> str:
    """``text`` (the task's instruction) as Markdown prose of a model's prompt, on as
    many lines as it has: :func:`terminal` (CR, VT, FF, NEL escaped; LF kept), the U+2028
    and U+2029 separators escaped, and a backslash before any line start that would open
    a heading (``#``, or a setext underline: a line of ``=`` or ``-`` only), a code
    fence (which would hide the rest of the prompt) or an HTML block (CommonMark 2.4,
    4.2-4.6), there or after the list and block-quote markers that start the line
    (``- ## x`` is a heading in a list item). Lists, block quotes, emphasis, code spans
    and links keep their Markdown; a text without such a line start is unchanged."""
    body = re.sub(r"[\u2028\u2029]", lambda m: _break(m.group(0)),
                  no_special_tokens(terminal(text)))
    return _PROSE_BLOCK_START.sub(lambda m: f"{m.group(1)}\\", body)
