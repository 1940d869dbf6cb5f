"""The one rule for `` `include`` in text that pyslang parses in this process.

pyslang resolves an `` `include`` by opening the file on the machine it runs on: an
absolute name reads any host file, a name that climbs out of the sources with ``..``
too, and a device that never ends (``/dev/zero``, ``/dev/urandom``) allocates until
the process dies. Verilator runs in the OS sandbox, pyslang in llm4cov's own process.
So every in-process parse is one of two kinds:

- one text alone (:func:`llm4cov.tasks.hdl.parse_tree`: answers, testbenches, views,
  RTL files for their syntax): an include depth of 0, so pyslang never opens a file;
- a compilation that must resolve includes (the RTL with its include dirs,
  :func:`llm4cov.tasks.hdl.parse_design`; the pre-check,
  :func:`llm4cov.sim.safety.precheck.diagnose`): every text it may read is first checked
  with :func:`problems`, and a text that breaks the rule is never parsed there.

The rule, on every preprocessor branch at once (the text is lexed with pyslang's own
lexer, as IEEE 1800-2017 and as 1800-2023, whose triple-quoted strings lex
differently; comments and strings are what that lexer makes them, and a branch that
a macro such as ``VERILATOR`` or ``__slang__`` switches off is checked like any other):

- every `` `include`` is followed, on its line, by one plain string literal (no escape,
  no control character; not ``<...>``, not a macro: a computed name cannot be checked);
- its name is relative, and names a file inside the repository through at least one
  include dir; a name tried before the file is found (pyslang searches the include
  dirs in order) that lies outside the repository must not exist there (a parse that
  resolves names in a private scratch dir pads it, so nothing does), and what is found
  is a regular file inside the repository, checked the same way;
- no macro can build a directive, so the literal `` `include``s are all there is: no
  `` `name`` in a `` `define`` body where ``name`` is one of that macro's arguments
  (`` `define D(x) `x`` then `` `D(include) "/etc/x"``), and token pasting (``````)
  only where its result cannot start a directive (:func:`_paste_hazard`, the rule and
  why it holds). A paste that joins two macro arguments (pulp-platform axi's
  ``__lhs``__lhs_sep``id``) is judged where the macro is called: no backtick in the
  arguments it joins, at any call of the macro (:func:`_strict_problems`), so a header
  whose macros nobody calls, or calls with plain names, is kept;
- no `` `pragma protect`` envelope (pyslang skips its data block without lexing it,
  so what follows could be hidden from this check).

Task macros (``Task.defines``) are `` `define`` bodies and are checked the same way.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pyslang
from pyslang import parsing

from llm4cov.tasks.model import TaskError
from llm4cov.tasks.reading import bounded_bytes

#: Directive names whose presence (with a backtick) may need the lexer, a paste, or a
#: macro call with a backtick after its ``(``; a text without any of them cannot break
#: the rule (a fast path for the common RTL file). Every `` `define`` is read: its body
#: may call a macro that pastes its arguments (an alias, `` `define A `P``).
_NEEDS_LEXER = re.compile(r"`(?:include|pragma|protect|define)|``"
                          r"|`[A-Za-z_][A-Za-z0-9_$]*\s*\((?=[^`]*`)")
_NAME = re.compile(r"\\?[A-Za-z_][A-Za-z0-9_$]*")
_PLAIN = re.compile(r'"([^"\\\x00-\x1f\x7f]+)"')
_VERSIONS = (pyslang.LanguageVersion.v1800_2017, pyslang.LanguageVersion.v1800_2023)
#: Legacy protected envelopes (skipped unlexed where enabled).
_LEGACY_PROTECT = frozenset({"`protect", "`protected", "`endprotect", "`endprotected"})
#: How far a resolved name may climb above the repository root (``../``) at most.
MAX_CLIMB = 16
_TK = parsing.TokenKind
_TRIVIA = parsing.TriviaKind


class UnsafeIncludeError(TaskError):
    """A text names a file pyslang would read outside the repository, or could (the
    message names the file, line and why; see the module docstring): bad input."""


@dataclass(frozen=True)
class Problem:
    """One place that breaks the rule: ``file:line: why``."""

    file: str
    line: int
    why: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.why}"


@dataclass(frozen=True)
class _Include:
    file: str
    line: int
    target: str


class Tree:
    """What lies below the repository root, as the parse will see it: ``text(name)`` is
    the text of the regular file ``name`` (a normalized relative POSIX path), None when
    there is none; ``outside(name)`` says whether ``name`` (climbing above the root with
    ``..``) exists outside the repository, where a parse would read it."""

    def text(self, name: str) -> str | None:
        raise NotImplementedError

    def outside(self, name: str) -> str | None:
        """Why pyslang must not try ``name``, or None when nothing is there."""
        return None

    def other(self, name: str) -> str | None:
        """Why ``name`` inside the repository is neither missing nor a regular file
        pyslang may read (a device, a FIFO, a link out), or None."""
        return None


class Files(Tree):
    """The repository as file texts by name, nothing else around it (a parse that
    writes them into a fresh scratch dir, padded above, :func:`padding`)."""

    def __init__(self, texts: Mapping[str, str]) -> None:
        self.texts = {posixpath.normpath(k): v for k, v in texts.items()}

    def text(self, name: str) -> str | None:
        return self.texts.get(name)


class Disk(Tree):
    """The repository as a directory on disk (``root``: the sources folder of a work
    dir or scratch dir). Links are followed as pyslang follows them."""

    def __init__(self, root: Path | str) -> None:
        self.root = os.path.abspath(root)
        self.real = os.path.realpath(self.root)

    def _path(self, name: str) -> str:
        return os.path.normpath(os.path.join(self.root, name))

    def _inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return os.path.commonpath([self.real, real]) == self.real

    def text(self, name: str) -> str | None:
        path = self._path(name)
        if not self._inside(path) or not os.path.isfile(path):
            return None
        try:
            return bounded_bytes(path).decode("utf-8", errors="surrogateescape")
        except OSError:
            return None

    def outside(self, name: str) -> str | None:
        path = self._path(name)
        return "names an existing file outside the repository" if os.path.exists(path) \
            else None

    def other(self, name: str) -> str | None:
        path = self._path(name)
        if not os.path.lexists(path):
            return None
        if not self._inside(path):
            return "leads through a link out of the repository"
        if os.path.exists(path) and not (os.path.isfile(path) or os.path.isdir(path)):
            return "names something that is not a regular file (a device or a pipe)"
        return None


def problems(
    texts: Mapping[str, str],
    include_dirs: Sequence[str],
    defines: Mapping[str, str] | None = None,
    tree: Tree | None = None,
) -> list[Problem]:
    """Every place in ``texts`` (name -> text, names relative to the repository root)
    and in the task macros ``defines`` that breaks the rule (module docstring), and in
    every file they include (read from ``tree``; default: ``texts`` alone), in order.

    ``include_dirs`` are pyslang's search dirs relative to the root, in search order
    (:func:`llm4cov.tasks.hdl.search_dirs`); empty: no include resolves at all.
    """
    return analyse(texts, include_dirs, defines, tree)[0]


def analyse(
    texts: Mapping[str, str],
    include_dirs: Sequence[str],
    defines: Mapping[str, str] | None = None,
    tree: Tree | None = None,
) -> tuple[list[Problem], int]:
    """:func:`problems`, and how many folders above the root the names the includes
    try climb at most (a scratch copy pads that many, :data:`MAX_CLIMB` at most)."""
    tree = tree or Files(texts)
    dirs = [posixpath.normpath(d) for d in include_dirs]
    found: list[Problem] = []
    queue = list(texts.items())
    if defines:
        queue.append(("<task macros>", define_text(defines)))
    done = {posixpath.normpath(name) for name, _ in queue}
    up = 0
    macros: list[_Macro] = []
    calls: list[_Call] = []
    while queue:
        name, text = queue.pop(0)
        lexical, includes, defined, called = scan_all(text, name)
        found.extend(lexical)
        macros += defined
        calls += called
        for inc in includes:
            if not inc.target.startswith("/"):
                up = max(up, 0, *(climb(posixpath.normpath(posixpath.join(d, inc.target)))
                                  for d in dirs))
            why, hit = resolve(inc.target, dirs, tree)
            if why:
                found.append(Problem(inc.file, inc.line, f'`include "{inc.target}" {why}'))
            elif hit is not None and hit not in done:
                done.add(hit)
                body = tree.text(hit)
                if body is not None:
                    queue.append((hit, body))
    found.extend(_strict_problems(macros, calls))
    return list(dict.fromkeys(found)), min(up, MAX_CLIMB)


def _strict_problems(macros: Sequence[_Macro], calls: Sequence[_Call]) -> list[Problem]:
    """Where a macro that pastes two of its arguments together (a *strict* position,
    :func:`_paste_hazard`) may be given text holding a backtick there: a call whose
    argument at that position holds one, a default value that does, or a call whose
    arguments cannot be read. Without a backtick in what the paste joins (its fixed
    text holds none: :func:`_paste_hazard`), the re-lexed text holds none, and no
    directive starts without one.

    A strict position of a macro ``N`` called in the body of a macro ``E`` with an
    argument that names an argument of ``E`` makes that argument of ``E`` strict too
    (to a fixed point): what ``E`` is given there reaches ``N``'s paste. Every
    definition of a name counts (every preprocessor branch, every redefinition)."""
    strict: dict[str, set[int]] = {}
    for m in macros:
        strict.setdefault(m.name, set()).update(m.strict)
    changed = True
    while changed:
        changed = False
        for call in calls:
            if call.within is None or not (wanted := strict.get(call.name)):
                continue
            outer, outer_params = call.within
            reach: set[str] = set(outer_params) if call.args is None else set().union(
                *(a.names for n, a in enumerate(call.args) if -1 in wanted or n in wanted))
            new = {n for n, p in enumerate(outer_params) if p in reach}
            have = strict.setdefault(outer, set())
            if not new <= have:
                have |= new
                changed = True
    found: list[Problem] = []
    for m in macros:
        wanted = strict.get(m.name, set())
        if bad := sorted(n for n in m.bad_defaults if -1 in wanted or n in wanted):
            found.append(Problem(m.file, m.line, (
                f"the default value of the argument {m.params[bad[0]]} of the macro "
                f"`{m.name} holds a backtick, and the macro pastes that argument to "
                "another: the joined text can form a directive, such as an `include, "
                "whose file cannot be checked")))
    for call in calls:
        if not (wanted := strict.get(call.name)):
            continue
        if call.args is None:
            found.append(Problem(call.file, call.line, (
                f"`{call.name} is used without an argument list that can be read here, "
                "and the macro pastes its arguments to each other: they must be seen to "
                "hold no backtick (the joined text could form a directive, such as an "
                "`include, whose file cannot be checked)")))
            continue
        for n, arg in enumerate(call.args):
            if arg.backtick and (-1 in wanted or n in wanted):
                found.append(Problem(call.file, call.line, (
                    f"`{call.name} is given text holding a backtick as its argument "
                    f"{n + 1}, which the macro pastes to another argument: the joined "
                    "text can form a directive, such as an `include, whose file cannot "
                    "be checked (pass plain names there)")))
                break
    return found


def define_text(defines: Mapping[str, str]) -> str:
    """The task macros as the `` `define`` lines pyslang makes of them."""
    return "".join(f"`define {k} {v}\n" for k, v in defines.items())


def check(texts: Mapping[str, str], include_dirs: Sequence[str],
          defines: Mapping[str, str] | None = None, tree: Tree | None = None) -> None:
    """Raise when :func:`problems` finds any.

    Raises:
        UnsafeIncludeError: names the first problem and how many more there are.
    """
    found = problems(texts, include_dirs, defines, tree)
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise UnsafeIncludeError(f"{found[0]}{more}")


def climb(name: str) -> int:
    """How many folders a normalized relative name climbs above the root (``../``)."""
    parts = name.split("/")
    n = 0
    while n < len(parts) and parts[n] == "..":
        n += 1
    return n


def resolve(target: str, dirs: Sequence[str], tree: Tree) -> tuple[str | None, str | None]:
    """``(why the include is refused, or None; the repository file it reads, or
    None)`` for the plain name ``target``, searched in ``dirs`` as pyslang does (the
    first dir where it is a file wins; local includes are off)."""
    if target.startswith("/"):
        return "is an absolute path: pyslang would read it from this machine", None
    candidates = [posixpath.normpath(posixpath.join(d, target)) for d in dirs]
    if candidates and all(climb(c) for c in candidates):
        return "names a file outside the repository (from every include dir)", None
    for cand in candidates:
        up = climb(cand)
        if up > MAX_CLIMB:
            return f"climbs {up} folders above the repository root", None
        if up:
            if why := tree.outside(cand):
                return why, None
            continue
        if why := tree.other(cand):
            return why, None
        if tree.text(cand) is not None:
            return None, cand
    return None, None


# -- the lexical part ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Macro:
    """A `` `define`` with arguments: its ``params`` in order, the positions whose
    argument a paste joins to another argument (``strict``; -1: every position), and
    the positions whose default value holds a backtick."""

    file: str
    line: int
    name: str
    params: tuple[str, ...]
    strict: frozenset[int]
    bad_defaults: frozenset[int]


@dataclass(frozen=True)
class _Arg:
    """One actual argument of a macro call: whether its text holds a backtick, and the
    names in it (the enclosing macro's arguments among them pass theirs on)."""

    backtick: bool
    names: frozenset[str]


@dataclass(frozen=True)
class _Call:
    """A macro call `` `name(...)``: its arguments (None: none can be read, such as a
    `` `name`` with no ``(`` after it), and the macro whose body holds it (None: plain
    text)."""

    file: str
    line: int
    name: str
    args: tuple[_Arg, ...] | None
    within: tuple[str, tuple[str, ...]] | None


class _Scan(NamedTuple):
    problems: list[Problem]
    includes: list[_Include]
    macros: list[_Macro]
    calls: list[_Call]


def scan(text: str, name: str) -> tuple[list[Problem], list[_Include]]:
    """``(problems, plain includes)`` of one text, over both lexers' views (cached: the
    RTL of a task is checked on every call; do not change the lists). The problems of
    a paste that joins two macro arguments depend on the macro's calls, in any text
    (:func:`analyse`), and are not among them."""
    return scan_all(text, name)[:2]


@functools.lru_cache(maxsize=512)
def scan_all(text: str, name: str) -> _Scan:
    """:func:`scan`, and the macros defined and called in the text (cached)."""
    if not _NEEDS_LEXER.search(text):
        return _Scan([], [], [], [])
    out = _Scan([], [], [], [])
    # the two versions lex alike but for triple-quoted strings
    for version in _VERSIONS if '""' in text else _VERSIONS[:1]:
        for mine, theirs in zip(out, _scan_version(text, name, version), strict=True):
            mine += theirs  # type: ignore[operator]
    return _Scan(*(list(dict.fromkeys(part)) for part in out))  # type: ignore[arg-type]


class _Tok(NamedTuple):
    """One token of the raw lexer, copied out of pyslang's memory."""

    kind: object
    raw: str
    value: str
    trivia: tuple[tuple[object, str], ...]
    line: int


def _tokens(text: str, version: pyslang.LanguageVersion) -> list[_Tok]:
    """The tokens of ``text`` lexed raw (no preprocessing), to the end."""
    sm = pyslang.SourceManager()
    data = re.sub("[\ud800-\udfff]", "\ufffd", text)  # lone surrogates: one char each
    buffer = sm.assignText("/llm4cov-virtual/include-check.sv", data)
    options = parsing.LexerOptions()
    options.languageVersion = version
    options.maxErrors = 1 << 30  # never stop early: pyslang's own lexer may not
    alloc, diags = pyslang.BumpAllocator(), pyslang.Diagnostics()  # hold the tokens' text
    lexer = parsing.Lexer(buffer, alloc, diags, sm, options)
    out: list[_Tok] = []
    while True:
        token = lexer.lex()
        if token.kind == _TK.EndOfFile:
            return out
        out.append(_Tok(token.kind, token.rawText, token.valueText,
                        tuple((t.kind, t.getRawText()) for t in token.trivia),
                        sm.getLineNumber(token.location)))


def _line_ends(token: _Tok, continued: bool, block_ends: bool) -> tuple[bool, bool]:
    """``(whether a line ends before token, a continuation still open)``: a line ends at
    an end of line that no ``\\`` continues (a line comment ending in ``\\`` continues
    it too, as pyslang reads a `` `define``); with ``block_ends`` also at a block comment
    that spans lines (pyslang: not on the same line)."""
    ended = False
    for kind, raw in token.trivia:
        if kind == _TRIVIA.EndOfLine:
            ended, continued = ended or not continued, False
        elif kind == _TRIVIA.LineComment:
            continued = raw.rstrip().endswith("\\")
        elif kind == _TRIVIA.BlockComment and block_ends and ("\n" in raw or "\r" in raw):
            ended = True
    return ended, continued


def _bare(name: str) -> str:
    return name.lstrip("`").lstrip("\\")


def _next_on_line(tokens: list[_Tok], i: int) -> _Tok | None:
    """The token after ``tokens[i]`` when it is on the same line, else None."""
    if i + 1 >= len(tokens):
        return None
    token = tokens[i + 1]
    return None if _line_ends(token, False, True)[0] else token


def _scan_version(text: str, name: str, version) -> _Scan:
    found: list[Problem] = []
    includes: list[_Include] = []
    macros: list[_Macro] = []
    calls: list[_Call] = []
    tokens = _tokens(text, version)
    formals: set[str] = set()  # of the `define whose body is open
    head = _Head("", (), frozenset(), False, 0)
    strict: set[str] = set()
    opened: list[_Open] = []  # macro calls whose argument list is open, innermost last
    in_body = continued = False

    def close() -> None:  # the `define whose body is open ends
        if head.name and (head.params or strict):
            positions = {head.params.index(f) for f in strict if f in head.params}
            if strict and head.irregular:  # an argument may be missing from params
                positions.add(-1)
            macros.append(_Macro(name, head.line, head.name, head.params,
                                 frozenset(positions), head.bad_defaults))
    i = 0
    while i < len(tokens):
        token = tokens[i]
        line = token.line
        ended, continued = _line_ends(token, continued, False)
        if in_body and ended:
            close()
            in_body, strict = False, set()
            while opened and opened[-1].within is not None:  # a call the body leaves open
                calls.append(opened.pop().done(False))
        kind, raw = token.kind, token.raw
        if opened and opened[-1].feed(token):
            calls.append(opened.pop().done(True))
        if kind == _TK.MacroPaste:
            why, joined = _paste_hazard(tokens, i, formals if in_body else set())
            if why:
                found.append(Problem(name, line, why))
            strict |= joined
        elif in_body and kind == _TK.Identifier and raw.startswith("\\") and "``" in raw:
            found.append(Problem(name, line, f"the escaped name {raw.split('``')[0]} "
                                 "followed by `` in a `define body: pyslang splits it and "
                                 "pastes the pieces, and an escaped name swallows a pasted "
                                 "argument's quote, exposing its text as directives (write "
                                 "a space after the escaped name)"))
        elif kind == _TK.Directive:
            if in_body and _bare(raw) in formals:
                found.append(Problem(name, line, f"{raw} in a `define body uses the macro "
                                     f"argument {_bare(raw)!r} as a directive (it can build "
                                     "an `include whose file cannot be checked)"))
            elif _bare(raw) not in DIRECTIVE_NAMES:
                call = _Open(name, line, _bare(raw),
                             (head.name, head.params) if in_body else None)
                nxt = tokens[i + 1] if i + 1 < len(tokens) else None
                if nxt is not None and nxt.kind == _TK.OpenParenthesis and not (
                        in_body and _line_ends(nxt, False, False)[0]):
                    opened.append(call)
                else:
                    calls.append(call.done(False))
            if raw == "`include":
                nxt = _next_on_line(tokens, i)
                match = _PLAIN.fullmatch(nxt.raw) \
                    if nxt is not None and nxt.kind == _TK.StringLiteral else None
                if match is not None:
                    includes.append(_Include(name, line, match.group(1)))
                else:
                    shown = " ".join(nxt.raw.split())[:60] if nxt is not None else ""
                    found.append(Problem(name, line, (
                        f"`include {shown} is not a plain string literal" if shown else
                        "`include is not followed, on its line, by a plain string literal")
                        + " (a computed, escaped or <...> file name cannot be checked)"))
            elif raw == "`pragma":
                nxt = _next_on_line(tokens, i)
                if nxt is None or nxt.kind != _TK.Identifier or nxt.value == "protect":
                    found.append(Problem(name, line, "`pragma protect (or a `pragma whose "
                                         "name is computed) is not allowed: an envelope "
                                         "hides text from this check"))
            elif raw in _LEGACY_PROTECT:
                found.append(Problem(name, line, f"{raw} is not allowed: an envelope hides "
                                     "text from this check"))
            elif raw == "`define":
                if in_body:
                    close()
                i, formals, head = _define_head(tokens, i + 1)
                in_body, continued, strict = True, False, set()
                continue
        if kind == _TK.LineContinuation or raw.endswith("\\"):
            continued = True  # an escaped name ending in \\ continues a `define, too
        i += 1
    if in_body:
        close()
    calls += [call.done(False) for call in opened]
    return _Scan(found, includes, macros, calls)


class _Open:
    """A macro call whose ``(`` is open: its arguments so far. Every token up to its
    ``)`` is fed to the innermost open call only (:meth:`feed`): a call nested in an
    argument makes that argument hold a backtick (its own `` `name``), so what it holds
    itself does not matter to the outer call, and the scan stays linear."""

    def __init__(self, file: str, line: int, name: str,
                 within: tuple[str, tuple[str, ...]] | None) -> None:
        self.file, self.line, self.name, self.within = file, line, name, within
        self.args: list[_Arg] = []
        self.stack: list[object] = []  # the closing brackets expected, innermost last
        self.backtick, self.names, self.odd = False, set[str](), False

    def done(self, read: bool) -> _Call:
        """The call (its arguments when ``read``, else None: they cannot be read)."""
        return _Call(self.file, self.line, self.name,
                     tuple(self.args) if read and not self.odd else None, self.within)

    def feed(self, token: _Tok) -> bool:
        """Take the next token; True when it closes the call (split at the commas
        outside brackets, as pyslang does; a closing bracket that does not match makes
        the arguments unreadable)."""
        kind = token.kind
        if kind in _OPENERS:
            self.stack.append(_OPENERS[kind])
            if len(self.stack) == 1:
                return False
        elif kind in _CLOSERS:
            if not self.stack or self.stack.pop() != kind:
                self.odd = True
            if not self.stack:
                self.args.append(_Arg(self.backtick, frozenset(self.names)))
                return True
        elif kind == _TK.Comma and len(self.stack) == 1:
            self.args.append(_Arg(self.backtick, frozenset(self.names)))
            self.backtick, self.names = False, set()
            return False
        self.backtick = (self.backtick or "`" in token.raw
                         or any("`" in t for _, t in token.trivia))
        if _NAME.fullmatch(token.raw):
            self.names.add(_bare(token.raw))
        return False


_OPENERS = {_TK.OpenParenthesis: _TK.CloseParenthesis, _TK.OpenBracket: _TK.CloseBracket,
            _TK.OpenBrace: _TK.CloseBrace, _TK.ApostropheOpenBrace: _TK.CloseBrace}
_CLOSERS = frozenset(_OPENERS.values())


#: The names pyslang reads as a compiler directive rather than a macro (slang's
#: ``LexerFacts.cpp`` directive table, with the legacy ``protect`` envelope and the
#: ``__FILE__``/``__LINE__`` intrinsics), and Verilator's own (``systemc_*``,
#: ``verilog``, ``verilator_config``): what a paste must never complete.
DIRECTIVE_NAMES = frozenset({
    "begin_keywords", "celldefine", "default_nettype", "define", "else", "elsif",
    "end_keywords", "endcelldefine", "endif", "ifdef", "ifndef", "include", "line",
    "nounconnected_drive", "pragma", "resetall", "timescale", "unconnected_drive", "undef",
    "undefineall", "default_decay_time", "default_trireg_strength",
    "delay_mode_distributed", "delay_mode_path", "delay_mode_unit", "delay_mode_zero",
    "protect", "endprotect", "protected", "endprotected", "__FILE__", "__LINE__",
    "systemc_header", "systemc_header_post", "systemc_interface", "systemc_implementation",
    "systemc_imp_header", "systemc_ctor", "systemc_dtor", "verilog", "verilator_config",
    "coverage_block_off",
})
_NAME_CHARS = re.compile(r"[A-Za-z0-9_$]*")
_MACRO_QUOTES = frozenset({_TK.MacroQuote, _TK.MacroTripleQuote, _TK.MacroEscapedQuote})



def _paste_hazard(tokens: list[_Tok], i: int, formals: set[str]
                  ) -> tuple[str | None, set[str]]:
    """``(why the paste tokens[i] can build a directive, or None when it cannot; the
    macro arguments it joins to each other)``: the second are *strict*, judged at the
    macro's calls (:func:`_strict_problems`).

    What pyslang does (slang ``Preprocessor_macros.cpp``, ``MacroOpEvaluator``): after
    the arguments are substituted, ``a``b`` re-lexes the raw text of the last token
    before it joined to the first token after it, keeping every token the re-lex makes,
    and goes on joining each following token written without space before it (the
    *run*); ``/``*`` ... ``*``/`` (and ``/``/``) instead turns the tokens between into a
    comment. A run can start a directive only through a backtick: one in the run's
    text, or one in an argument's last token (`` `inclu`` and ``de``). So:

    - a token of the run other than a macro argument must hold no backtick (no
      directive, no lone `````, no string or name holding one);
    - a run that joins two or more macro arguments (``__lhs``__lhs_sep``id``,
      pulp-platform axi ``assign.svh``; also with fixed text before or between them)
      can make any directive from its arguments' text (`` `inclu`` and ``de``, or an
      escaped name that swallows the other's quote), and only from a backtick in it:
      its fixed text holds none, so the joined text of arguments without a backtick
      holds none, and no directive starts without one. Those arguments are returned,
      and every call of the macro must pass them text without a backtick;
    - a run with one macro argument followed by fixed text (``__name``KnownEnable``,
      upstream common_cells ``assertions.svh``) joins only that argument's last token,
      whatever it is, to fixed text: the re-lex reads that token as before, extended
      at most by the fixed text's leading name characters, so the one directive it
      can make is `` `<name><those characters>`` (the fixed text cannot open a string
      or an escaped name, it holds no backtick). That is a macro call, whose body this
      rule checks like any other, unless a directive name ends with those characters
      (``de``: `` `include``), which is refused; the same holds where fixed text comes
      before the argument too (``x``a``de``);
    - fixed text may come before an argument (``errors_``signal``, ``.``pat``, pulp
      axi ``AXI_ASSIGN_TO_FLAT_PORT``) when none of it holds a backslash: only an
      escaped name reaches into the argument (it would swallow a quote and expose a
      string's text); a name, number or operator ends where the argument's first
      token starts, and a comment it builds only hides text;
    - building a comment (``/``*`` ... ``*``/``) is fine: it only hides tokens of the
      expansion from pyslang, tokens this scan reads in full in the raw text, and it
      cannot hide text after the macro call (upstream common_cells ``registers.svh``).
    """
    j = i - 1
    while j >= 1 and tokens[j - 1].kind == _TK.MacroPaste:
        j -= 2
    if j < 0 or tokens[j].kind == _TK.MacroPaste:
        return "token pasting (``) with nothing before it is not allowed", set()
    head = tokens[j]
    run: list[_Tok] = []
    k, after_paste = j + 1, False
    while k < len(tokens):
        token = tokens[k]
        if token.kind == _TK.MacroPaste:
            after_paste = True
        elif (token.trivia or token.kind in (_TK.LineContinuation, _TK.EndOfFile)
              or (token.kind in _MACRO_QUOTES and not after_paste)):
            break  # pyslang joins no token after space, nor a macro quote it applies
        else:
            run.append(token)
            after_paste = False
        k += 1
    for token in (head, *run):
        if "`" in token.raw and (token is head or _bare(token.raw) not in formals):
            return (f"token pasting (``) joins {' '.join(token.raw.split())[:40]}, which "
                    "holds a backtick: the joined text can form a directive, such as an "
                    "`include, whose file cannot be checked"), set()
    joined = [head, *run]
    args = [n for n, t in enumerate(joined) if _bare(t.raw) in formals]
    if len(args) > 1:
        return None, {_bare(joined[n].raw) for n in args}
    if not args:
        return None, set()
    at = args[0]
    if odd := [t.raw for t in joined[:at] if "\\" in t.raw]:
        return (f"token pasting (``) of a macro argument after {odd[0][:40]}: no "
                "escaped name (no backslash) may come before a pasted argument (an escaped "
                "name swallows the argument's quote and exposes its text as directives, "
                "such as an `include, whose file cannot be checked)"), set()
    suffix = _NAME_CHARS.match("".join(t.raw for t in joined[at + 1:]))
    tail = suffix.group(0) if suffix else ""
    if tail and (hit := sorted(d for d in DIRECTIVE_NAMES if d.endswith(tail))):
        return (f"token pasting (``) of the macro argument {joined[at].raw} onto {tail} can "
                f"complete the directive `{hit[0]} (from an argument ending in "
                f"`{hit[0][:-len(tail)]}), whose file cannot be checked (rename the "
                "pasted text so that it ends no directive name)"), set()
    return None, set()


class _Head(NamedTuple):
    """A `` `define``'s name, its arguments in order, the positions whose default holds
    a backtick, whether the argument list could not be read plainly, and its line."""

    name: str
    params: tuple[str, ...]
    bad_defaults: frozenset[int]
    irregular: bool
    line: int


def _define_head(tokens: list[_Tok], i: int) -> tuple[int, set[str], _Head]:
    """After a `` `define`` at ``tokens[i - 1]``: the index of the token after the macro
    name (the argument list is read as body too: a superset), the argument names
    (every name in a ``(...)`` after the name, defaults included, whatever the space
    before it) and the macro's head (:class:`_Head`)."""
    line = tokens[i - 1].line
    if i >= len(tokens) or _line_ends(tokens[i], False, False)[0]:
        return i, set(), _Head("", (), frozenset(), False, line)
    macro = _bare(tokens[i].raw)
    i += 1
    names: set[str] = set()
    params: list[str] = []
    bad: set[int] = set()
    irregular = False
    if i < len(tokens) and tokens[i].kind == _TK.OpenParenthesis \
            and not _line_ends(tokens[i], False, False)[0]:
        depth, start = 0, True
        for token in tokens[i:]:
            if token.kind == _TK.OpenParenthesis:
                depth += 1
                if depth == 1:
                    continue
            elif token.kind == _TK.CloseParenthesis:
                depth -= 1
                if depth == 0:
                    break
            elif token.kind == _TK.Comma and depth == 1:
                start = True
                continue
            if _NAME.fullmatch(token.raw):
                names.add(_bare(token.raw))
            if start:
                if _NAME.fullmatch(token.raw) and depth == 1:
                    params.append(_bare(token.raw))
                else:
                    irregular = True
                start = False
            elif "`" in token.raw and params:
                bad.add(len(params) - 1)
    return i, names, _Head(macro, tuple(params), frozenset(bad), irregular, line)


def first_problem(found: Sequence[Problem]) -> str:
    """One line: the first problem and how many more there are."""
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"{found[0]}{more}"
