"""What the evaluator tells beyond status and coverage, for any backend: the rewrites
around a simulator's known divergences from IEEE 1800 (as its capabilities say), the
RTL-error note, and testbench data files.

Everything here is decided from structured signals: the testbench's syntax tree
(pyslang) and the files present. Nothing reads text the testbench prints at run time.
A simulator's own failure rules and build warnings are its backend's (Verilator:
:mod:`llm4cov.sim.backends.verilator.failures`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from pyslang import parsing, syntax

from llm4cov.sim.analysis.structure import stop_offsets
from llm4cov.sim.safety.static_check import guard_pyslang, unsafe_path
from llm4cov.tasks.hdl import ParseLimitError, own_offset, parse_tree, syntax_nodes
from llm4cov.tasks.loaders import files_below
from llm4cov.tasks.model import SourceFile
from llm4cov.tasks.reading import bounded_bytes, check_total

_SK = syntax.SyntaxKind


def rtl_error_note(where: str, first_error: str, count: int) -> str:
    """The feedback when the design itself does not compile (``sim/analysis/rtl_check.py``):
    ``where`` is the RTL ``file:line`` of ``first_error``, the first of ``count``
    errors of the RTL compiled alone."""
    return (f"the design does not compile: the RTL fails with the simulator on its own, "
            f"at {where} ({first_error.strip()}; {count} error(s), all in RTL files); no "
            "testbench can pass until the RTL is fixed, so this is not the testbench's "
            "fault")


@dataclass(frozen=True)
class Workaround:
    """A testbench rewritten around known simulator bugs: same line numbers, and by
    IEEE 1800 the same meaning. ``nba_lines``: lines whose non-blocking assignments now
    carry ``#0``."""

    text: str
    notes: tuple[str, ...] = ()
    nba_lines: frozenset[int] = frozenset()


def testbench_workarounds(tb: SourceFile, nba: bool = True, disable: bool = True
                          ) -> Workaround:
    """Three rewrites of the testbench that keep its lines: ``$stop`` (written in its
    text) is compiled as ``$finish``, always, and two that insert text only (``nba``,
    ``disable``: whether to make each; a simulator that follows IEEE 1800 there needs
    neither):

    - ``$stop`` ends the run as ``$finish`` does (a batch run's end, as ``vvp -n``; the
      end is reported as ``finish``, with a note). Told apart from an error report by its own
      call, not by its line: the simulator reports ``$stop``, ``$error``, a failed
      ``assume`` and a ``unique`` violation through one hook that knows only the file
      and line, so a failing check on a ``$stop``'s line had passed as the end (a
      twenty-ninth red team), and the ``final`` blocks ran only after ``$finish`` (a
      scoreboard's ``$fatal`` there was skipped: 0 -> 81.25 %). A ``$stop`` a macro
      expands to stays one: it is then counted as an error.

    - ``x <= v`` in an ``initial`` block or a module's task becomes ``x <= #0 v``. The pinned
      Verilator runs a plain ``<=`` there as a blocking ``=`` (INITIALDLY;
      verilator/verilator#5210), so an input changed right after ``@(posedge clk)`` is
      seen by the flops at that same edge; IEEE 1800 10.4.2 schedules both forms in the
      NBA region, and Verilator honours that for the ``#0`` form.
    - ``disable NAME`` inside a branch of ``fork : NAME ... join`` becomes
      ``#0 disable NAME``: Verilator does not kill a sibling branch that has not
      started yet (verilator/verilator#7856), so a watchdog branch could end the run
      later; IEEE 1800 9.6.2 kills every branch, which the ``#0`` form gets.
    """
    tree = parse_tree(tb.content, tb.name)
    nbas = _nba_inserts(tree, tb.content) if nba else []
    disables = _disable_inserts(tree, tb.content) if disable else []
    stops = [at for at, _ in stop_offsets(tb)]
    inserts = {at: "#0 " for at in disables} | {at: " #0" for at in nbas}
    if not inserts and not stops:
        return Workaround(tb.content)
    text = _splice(tb.content, [(at, 0, s) for at, s in inserts.items()] +
                   [(at, len("$stop"), "$finish") for at in stops])

    def lines(offsets: list[int]) -> list[int]:
        return sorted({tb.content[:at].count("\n") + 1 for at in offsets})

    notes = []
    if nbas:
        notes.append(
            f"{tb.name}: non-blocking assignments in `initial` blocks and tasks (lines "
            f"{_line_list(lines(nbas))}) are compiled as `<= #0` (same meaning in IEEE "
            "1800; works around Verilator running them as blocking `=`, verilator#5210)"
        )
    if disables:
        notes.append(
            f"{tb.name}:{_line_list(lines(disables))}: `disable` of the enclosing fork runs "
            "as `#0 disable` (works around verilator#7856: a branch not yet started would "
            "survive the disable)"
        )
    if stops:
        notes.append(_stop_note(tb.name, lines(stops)))
    return Workaround(text, tuple(notes), frozenset(lines(nbas)))


def rtl_workarounds(files: Iterable[SourceFile]) -> tuple[dict[str, str], tuple[str, ...]]:
    """The RTL files as compiled for simulation (name -> text, only those changed) and
    notes: a bare ``$stop`` (:func:`~llm4cov.sim.analysis.structure.stop_offsets` with
    ``bare``) is compiled as ``$finish``, on its line, so it ends the run as the
    testbench's does. Before, the driver told an RTL ``$stop`` from an error report by
    its ``file:line``, which a testbench names at will (`` `line 9 "dut.sv" 0`` before an
    ``$error``: the failing check ended the run as that ``$stop``, no error counted); now
    the driver counts every such call as an error. A ``$stop`` on a line with
    ``$error``/``$fatal``/``assert`` (an assertion's action) or from a macro stays one and
    is counted as an error report."""
    texts: dict[str, str] = {}
    notes: list[str] = []
    for f in files:
        stops = stop_offsets(f, bare=True)
        if stops:
            texts[f.name] = _splice(f.content, [(at, len("$stop"), "$finish")
                                                for at, _ in stops])
            notes.append(_stop_note(f.name, sorted({line for _, line in stops})))
    return texts, tuple(notes)


def _splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    """``text`` with each ``(offset, cut, put)`` edit made: ``cut`` characters at
    ``offset`` replaced by ``put`` (offsets into the original text, none overlapping)."""
    for at, cut, put in sorted(edits, reverse=True):
        text = text[:at] + put + text[at + cut:]
    return text


def _stop_note(name: str, lines: list[int]) -> str:
    return (f"{name}:{_line_list(lines)}: `$stop` is compiled as `$finish` (the end of "
            "the run, `final` blocks included; an error report on its line stays one)")


def _line_list(lines: list[int]) -> str:
    return ", ".join(map(str, lines[:8])) + (" ..." if len(lines) > 8 else "")


def _nba_inserts(tree, text: str) -> list[int]:
    """Where ``#0`` goes after each ``<=`` of an ``initial`` block or a module's task:
    not one with its own delay, nor a clocking drive (``cb.x <= v``, any name of its
    left side a clocking block of the text: IEEE 1800 14.16 allows only a cycle delay
    there, and Verilator refuses ``#0``)."""
    found = []
    clocking = {n.blockName.valueText
                for n in syntax_nodes(tree.root, (_SK.ClockingDeclaration,))}
    for node in syntax_nodes(tree.root, (_SK.NonblockingAssignmentExpression,)):
        if node.right.kind == _SK.TimingControlExpression or (clocking and any(
                t.valueText in clocking for t in syntax_tokens(node.left))):
            continue
        scope = node.parent
        while scope is not None and scope.kind not in (
            _SK.InitialBlock, _SK.TaskDeclaration, _SK.FunctionDeclaration, _SK.FinalBlock,
            _SK.AlwaysBlock, _SK.AlwaysFFBlock, _SK.AlwaysCombBlock, _SK.AlwaysLatchBlock,
        ):
            scope = scope.parent
        if (scope is not None and scope.kind in (_SK.InitialBlock, _SK.TaskDeclaration)
                and not _in_class(scope)):
            op = node.operatorToken
            at = own_offset(tree.sourceManager, op, text)
            if at is not None:  # (one a macro writes cannot be rewritten in place)
                found.append(at + len(op.rawText))
    return found


def _in_class(node) -> bool:
    """Class methods are left alone (virtual-interface drives are Verilator's own
    territory there)."""
    while node is not None:
        if node.kind == _SK.ClassDeclaration:
            return True
        node = node.parent
    return False


def _disable_inserts(tree, text: str) -> list[int]:
    found: list[int] = []
    for fork in syntax_nodes(tree.root, (_SK.ParallelBlockStatement,)):
        if fork.end.kind != parsing.TokenKind.JoinKeyword:
            continue
        name = _block_name(fork)
        if not name:
            continue
        found.extend(at for dis in syntax_nodes(fork, (_SK.DisableStatement,))
                     if str(dis.name).strip() == name and
                     (at := own_offset(tree.sourceManager, dis.disable, text)) is not None)
    return sorted(set(found))


def _block_name(fork) -> str:
    if fork.blockName is not None and getattr(fork.blockName, "name", None) is not None:
        return fork.blockName.name.valueText
    if fork.label is not None and getattr(fork.label, "name", None) is not None:
        return fork.label.name.valueText
    return ""


#: System tasks that read a file named by their first argument.
_READERS = ("$readmemh", "$readmemb")


def data_files(tb: SourceFile) -> list[tuple[str, int]]:
    """``(file name, line)`` of every file the testbench reads by a string literal or a
    string parameter declared once (``localparam HEX = "rom.hex"``):
    ``$fopen(NAME, "r...")`` and ``$readmemh/$readmemb(NAME, ...)``, unless the
    testbench also writes that name (``$fopen`` in another mode, ``$writemem*``)."""
    tree = parse_tree(tb.content, tb.name)
    constants = _string_parameters(tree)
    found: list[tuple[str, int]] = []
    written: set[str] = set()
    for call in syntax_nodes(tree.root, (_SK.InvocationExpression,)):
        if call.left.kind != _SK.SystemName or call.arguments is None:
            continue
        task = call.left.systemIdentifier.valueText
        if task != "$fopen" and task not in _READERS and not task.startswith("$writemem"):
            continue
        args = [_string_literal(a, constants) for a in call.arguments.parameters
                if getattr(a, "kind", None) == _SK.OrderedArgument]
        name = _text(args[0]) if args and args[0] is not None else None
        if name is None:
            continue
        if task == "$fopen":
            mode = (_text(args[1]) or "") if len(args) > 1 and args[1] is not None else ""
            if not mode.startswith("r"):
                written.add(name)
                continue
        elif task.startswith("$writemem"):
            written.add(name)
            continue
        elif task not in _READERS:
            continue
        found.append((name, tree.sourceManager.getLineNumber(call.left.getFirstToken().location)))
    return [(n, line) for n, line in found if n not in written]


def _text(literal) -> str | None:
    """A string literal's value, None when its escapes make bytes that are not UTF-8
    (``"\\233"``: no file of the repo has such a name)."""
    try:
        return literal.valueText
    except UnicodeDecodeError:
        return None


def _string_parameters(tree) -> dict[str, object]:
    """Parameter name -> its string literal token, for the parameters declared once
    with one string literal as their value."""
    found: dict[str, list] = {}
    for decl in syntax_nodes(tree.root, (_SK.ParameterDeclaration,)):
        for d in decl.declarators:
            init = getattr(d, "initializer", None)
            if init is not None and init.expr.kind == _SK.StringLiteralExpression:
                found.setdefault(d.name.valueText, []).append(init.expr.literal)
    return {name: lits[0] for name, lits in found.items() if len(lits) == 1}


def _string_literal(arg, constants: dict[str, object]):
    """The string literal token an argument is (through pyslang's property/sequence
    wrappers of system-call arguments), or names (one of ``constants``), or None."""
    node = arg.expr
    while node.kind != _SK.StringLiteralExpression:
        if node.kind == _SK.IdentifierName:
            return constants.get(node.identifier.valueText)
        node = getattr(node, "expr", None)
        if node is None:
            return None
    return node.literal


def missing_data_notes(tb: SourceFile, present: set[str]) -> list[str]:
    """A note per data file the testbench reads that is not in the work dir
    (``present``: the names written there). ``$fopen`` then returns 0 and nothing is
    read, so the testbench may run zero test cases and still pass."""
    notes = []
    for name, line in data_files(tb):
        if name.removeprefix("./") not in present:
            notes.append(
                f"{tb.name}:{line} reads `{name}`, which is not in the simulation "
                "directory: the open fails ($fopen returns 0) and nothing is read. "
                "Pass it with `llm4cov sim --aux FILE`, or generate the data in the "
                "testbench"
            )
    return notes


def syntax_tokens(root) -> list:
    """Every token at or below ``root`` (pyslang syntax), in order, without trivia."""
    found = []

    def visit(n) -> bool:
        if isinstance(n, parsing.Token):
            found.append(n)
        return True

    root.visit(visit)
    return found


def aux_files(
    paths: Iterable[Path], tb_path: Path, tb: SourceFile
) -> tuple[list[SourceFile], list[str]]:
    """Testbench data files for the work dir: exactly the ``paths`` given (a file, named
    by its base name, or a directory, every file below it named relative to it; links
    out of a directory are refused, :func:`~llm4cov.tasks.loaders.files_below`). A file
    that lies below the testbench's folder, whose path from there the testbench reads by
    that name (``$readmemh("d/x.hex")``, ``--aux d/x.hex``), is named by that path
    instead (:func:`_aux_name`). Contents keep their bytes (surrogate escapes). Nothing
    is copied implicitly: a file below ``tb_path``'s folder that the testbench reads
    (:func:`data_files`) only gets a note, since a hostile testbench could otherwise
    print any file beside it.

    Raises:
        FileNotFoundError: a path does not exist.
        TaskError: a file is over :data:`~llm4cov.tasks.reading.MAX_FILE_BYTES`, or all
            of them over :data:`~llm4cov.tasks.reading.MAX_REPO_BYTES`.
    """
    # the testbench is untrusted: parse it only when that is bounded (static_check.py)
    try:
        reads = [] if guard_pyslang(tb.content, tb.name) else data_files(tb)
    except ParseLimitError:
        reads = []  # the evaluator rejects it
    wanted = {rel for name, _line in reads
              if unsafe_path(rel := name.removeprefix("./")) is None}
    found: dict[str, Path] = {}
    notes: list[str] = []
    for path in paths:
        if path.is_dir():
            found.update({_aux_name(p, rel.as_posix(), tb_path.parent, wanted): p
                          for rel, p in files_below(path, notes)})
        elif path.is_file():
            found[_aux_name(path, path.name, tb_path.parent, wanted)] = path
        else:
            raise FileNotFoundError(f"--aux {path}: no such file or directory")
    for name, _line in reads:
        rel = name.removeprefix("./")
        beside = tb_path.parent / rel
        if rel not in found and unsafe_path(rel) is None and beside.is_file() \
                and _below(beside, tb_path.parent, resolve=True):
            notes.append(f"{tb.name} reads `{name}`; a file of that name sits next to the "
                         f"testbench: pass it with --aux {beside}")
    check_total([p.stat().st_size for p in found.values()], "the aux files")
    files = [SourceFile(name=n, content=bounded_bytes(p).decode("utf-8", "surrogateescape"))
             for n, p in sorted(found.items())]
    return files, notes


def _below(path: Path, folder: Path, resolve: bool = False) -> str | None:
    """``path`` relative to ``folder`` as a POSIX name when it lies below it (as
    written, ``.`` and ``..`` collapsed; with ``resolve`` also after every link), or
    None."""
    try:
        if resolve:
            rel = os.path.relpath(os.path.realpath(path), os.path.realpath(folder))
        else:
            rel = os.path.relpath(os.path.abspath(path), os.path.abspath(folder))
    except ValueError:
        return None
    name = PurePosixPath(Path(rel).as_posix())
    return None if name.is_absolute() or ".." in name.parts else name.as_posix()


def _aux_name(path: Path, default: str, tb_dir: Path, wanted: set[str]) -> str:
    """The work-dir name of the aux file ``path``: its path from the testbench's folder
    ``tb_dir`` when the testbench reads that name (``wanted``, each a relative name with
    no ``..``) and the file lies below the folder (also after every link: a link does not
    lead a name out of it), else ``default``."""
    rel = _below(path, tb_dir)
    if rel is None or rel == default or rel not in wanted or unsafe_path(rel) is not None \
            or _below(path, tb_dir, resolve=True) is None:
        return default
    return rel


@dataclass(frozen=True)
class Rewrite:
    """What the evaluator changed in the sources before building: ``originals`` and
    ``rewritten`` texts by file name (same line count), the notes to report and the
    testbench lines whose non-blocking assignments were fixed; ``refused``: why the
    testbench may not be built as it would be counted (empty: it may)."""

    notes: list[str]
    nba_lines: frozenset[int]
    originals: dict[str, str]
    rewritten: dict[str, str]
    refused: tuple[str, ...] = ()

    def caused(self, error_sites: Iterable[tuple[str, int]]) -> bool:
        """Whether an error of the build points at a line the rewrite changed
        (``error_sites``: the build's located errors as ``(file, line)``,
        :meth:`~llm4cov.sim.backends.base.SimBackend.error_sites`; then the sources are
        built again as given)."""
        changed = {
            (name, n) for name, new in self.rewritten.items()
            for n, (a, b) in enumerate(zip(self.originals[name].splitlines(),
                                           new.splitlines(), strict=False), 1) if a != b
        }
        return any(site in changed for site in error_sites)
