"""SystemVerilog structure via pyslang: modules, instances, top detection, DUT ports.

The RTL is read the way Verilator reads it: the compiled files (packages first) form
one compilation unit, with the task's macros, and `` `include`` files are searched in
Verilator's ``-I`` list (:func:`search_dirs`; never next to the including file, as
Verilator does not look there). So a port sized by a macro from an included header,
or a module inside `` `ifdef``, comes out as the compiler sees it. Module and
instance structure is syntax-level (no elaboration), so a testbench with semantic
errors still yields it; ports are elaborated.

No parse here reads a host file: :func:`parse_tree` never opens an `` `include`` (a
text alone), and :func:`parse_design` checks every text with the include rule of
:mod:`llm4cov.tasks.includes` first (raising :class:`UnsafeIncludeError`) and resolves
the includes in a private scratch copy. Nor does one run without bounds: RTL that uses
the preprocessor is parsed in every view this process uses (each file alone, the design,
the pre-check's with Verilator's macros) in a bounded child first, once per process
(:func:`check_bounded`, raising :class:`ParseBoundError`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import pyslang
from pyslang import ast, parsing, syntax

from llm4cov.tasks import includes
from llm4cov.tasks.includes import UnsafeIncludeError
from llm4cov.tasks.interface_ports import InterfacePort, interface_ports
from llm4cov.tasks.model import SourceFile, Task, TaskError

__all__ = ["UnsafeIncludeError"]

HDL_SUFFIXES = (".v", ".sv", ".vh", ".svh")
COMPILED_SUFFIXES = (".v", ".sv")
_INCLUDE = re.compile(r'^[ \t]*`include\s+"([^"]+)"', re.MULTILINE)


@dataclass(frozen=True)
class ModuleDecl:
    """A module declaration: its name, file, line, and the modules it instantiates.

    ``instances`` holds ``(module_type, instance_name)`` pairs in source order;
    ``has_ports``: the header declares at least one port (``module tb;`` and
    ``module tb();`` do not).
    """

    name: str
    file: str
    line: int
    instances: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    has_ports: bool = True
    #: Per instance (in ``instances``' order), the conditional generate blocks it lies
    #: in as a path prefix (``genblk1.``, ``g.``; empty: none), for its hierarchical
    #: path (:func:`instance_paths`): the simulator's names (its coverage's paths).
    scopes: tuple[str, ...] = ()
    #: The same prefixes as IEEE 1800 27.5 and pyslang name them (they differ where an
    #: ``if`` or ``case`` nests directly in a branch: :func:`_generate_scopes`).
    ieee_scopes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Port:
    """A DUT port after elaboration; ``width`` in bits (of one element for an
    unpacked array).

    ``type_text`` declares a variable of the port's type in a testbench (a package type
    name such as ``pkg::op_e``, else ``logic [W-1:0]``); ``cast`` says values must be
    cast to it (``T'(...)``); ``unpacked`` holds the unpacked dimensions as
    ``(left, right)`` pairs, outermost first.
    """

    name: str
    direction: str  # "input" | "output" | "inout"
    width: int
    signed: bool = False
    type_text: str = ""
    cast: bool = False
    unpacked: tuple[tuple[int, int], ...] = ()
    via: str = ""
    """A member of a DUT interface port: its name in the testbench's instance of the
    interface (``in_if.data``; :mod:`llm4cov.tasks.interface_ports`); "" for a port."""

    def declaration(self) -> str:
        """``<type> <name> [<dims>]``: a testbench variable that connects to the port."""
        dims = "".join(f" [{a}:{b}]" for a, b in self.unpacked)
        return f"{self.type_text or _vector(self.width, self.signed)} {self.name}{dims}"


def _vector(width: int, signed: bool) -> str:
    return "logic" + (" signed" if signed else "") + (f" [{width - 1}:0]" if width > 1 else "")


#: A backtick other than a directive that needs no macro: the text uses the
#: preprocessor, so its parse (macro expansion) is not bounded by its size.
USES_MACROS = re.compile(r"`(?!(?:timescale|default_nettype|celldefine|endcelldefine|"
                         r"resetall|begin_keywords|end_keywords|line)\b)")

#: The directory :func:`parse_tree` names as a text's home: it does not exist.
VIRTUAL_ROOT = "/llm4cov-virtual"


def isolated_source_manager() -> pyslang.SourceManager:
    """A pyslang source manager that never resolves `` `include`` against the host
    file system (local includes off, no search dirs)."""
    sm = pyslang.SourceManager()
    sm.setDisableLocalIncludes(True)
    return sm


def own_offset(sm: pyslang.SourceManager, token: Any, text: str) -> int | None:
    """Where ``token`` begins in ``text``, the text its tree was parsed from (a Python
    string index: pyslang counts UTF-8 bytes), or None when it is not written there: a
    macro expansion's token lies in the macro's buffer, whose offsets say nothing of
    the text. A thirty-first red team moved the evaluator's rewrite of the testbench
    into other code both ways (a `` `define`` body's ``<=``; two-byte characters in a
    comment before it): ``wdog #0 dut`` set the DUT's first parameter, 81.25 -> 94.79 %."""
    loc = token.location
    if sm.isMacroLoc(loc) or not sm.isFileLoc(loc) or sm.isIncludedFileLoc(loc):
        return None
    at = int(loc.offset)
    if text.isascii():
        return at
    return len(encodable(text).encode("utf-8")[:at].decode("utf-8", errors="ignore"))


def syntax_nodes(root, kinds: tuple | frozenset) -> list:
    """Every node of one of ``kinds`` at or below ``root`` (pyslang syntax), in order."""
    found = []

    def visit(n) -> bool:
        if getattr(n, "kind", None) in kinds:
            found.append(n)
        return True

    root.visit(visit)
    return found


class ParseLimitError(ValueError):
    """pyslang gave up on a text: constructs nested too deeply (e.g. 20,000 ``(`` or
    ``begin``) exhaust its recursion guard, which it reports as a bare RuntimeError."""


MAX_ELABORATED_SYMBOLS = 500_000
"""The most symbols llm4cov elaborates in its own process for one design (its RTL and a
testbench): ~13x the largest benchmark design with its human testbench (RealBench's
``aes_cipher_top``: 38k), ~0.5 KB each. Past it, :class:`ElaborationLimitError`."""


class ElaborationLimitError(ParseLimitError):
    """A design elaborates to more than :data:`MAX_ELABORATED_SYMBOLS` symbols: a
    1.2 KB testbench whose modules instantiate the one below twice, 21 deep, made 2 M
    instances, took 6 GB in llm4cov's process and ended in ``std::bad_alloc``."""


def bounded_symbols(compilation: Any, limit: int | None = None) -> list[Any]:
    """Every symbol of ``compilation``'s design in visit order (packages included),
    made by this visit: pyslang elaborates an instance's body lazily, when a visit
    reaches it, so stopping the visit past ``limit`` (None:
    :data:`MAX_ELABORATED_SYMBOLS`) bounds the work and memory before any full
    elaboration (``getAllDiagnostics``).

    Raises:
        ElaborationLimitError: more than ``limit`` symbols.
    """
    limit = MAX_ELABORATED_SYMBOLS if limit is None else limit
    found: list[Any] = []

    def visit(sym: Any) -> ast.VisitAction:
        found.append(sym)
        return ast.VisitAction.Interrupt if len(found) > limit else ast.VisitAction.Advance

    compilation.getRoot().visit(visit)
    if len(found) > limit:
        raise ElaborationLimitError(
            f"the design elaborates to more than {limit:,} symbols (instances, generate "
            "blocks, variables, ...), more than llm4cov elaborates to check it")
    return found


def parse_tree(
    text: str, name: str, source_manager: pyslang.SourceManager | None = None
) -> syntax.SyntaxTree:
    """Parse one source text alone into a pyslang syntax tree (syntax errors are
    diagnostics in the tree).

    No `` `include`` is ever opened, whatever its name, branch or macros (an include
    depth of 0: each one is a diagnostic, ``ExceededMaxIncludeDepth``; an isolated
    source manager, a virtual path): an untrusted text cannot make the parser read a
    file of the machine it runs on. Macros are expanded (unbounded: an untrusted text
    that uses the preprocessor is parsed in a bounded child first,
    :mod:`llm4cov.sim.safety.ppguard`, or in one, :mod:`llm4cov.bench.answer_checks`). Trees
    that go into one compilation must share ``source_manager`` (from
    :func:`isolated_source_manager`).

    Raises:
        ParseLimitError: pyslang cannot parse the text (nesting too deep).
    """
    sm = source_manager or isolated_source_manager()
    try:
        return syntax.SyntaxTree.fromText(encodable(text), sm, name,
                                          f"{VIRTUAL_ROOT}/{name}",
                                          pyslang.Bag([_no_includes({})]))
    except RuntimeError as exc:
        raise ParseLimitError(f"{name}: nesting too deep for the parser "
                              f"({str(exc) or 'pyslang gave up'})") from None


def _no_includes(defines: Mapping[str, str]) -> parsing.PreprocessorOptions:
    """Preprocessor options that open no `` `include`` (depth 0), with ``defines``."""
    pp = parsing.PreprocessorOptions()
    pp.maxIncludeDepth = 0
    pp.predefines = [f"{k}={v}" for k, v in defines.items()]
    return pp


def parse_unit(parts: list[tuple[str, str]], source_manager: pyslang.SourceManager,
               options: list | None = None, defines: Mapping[str, str] | None = None
               ) -> tuple[syntax.SyntaxTree, list]:
    """Parse ``(name, text)`` parts as one compilation unit (as Verilator reads its
    files: a name declared outside a module in one part is seen by the next), with
    :func:`parse_tree`'s rules (no include is opened); ``options``: more pyslang option
    objects (no preprocessor options: ``defines`` are its macros, ``name -> value``).
    Returns the tree and each part's pyslang buffer id, in order.

    Raises:
        ParseLimitError: pyslang cannot parse the texts (nesting too deep).
    """
    buffers = [source_manager.assignText(f"{VIRTUAL_ROOT}/{name}", encodable(text))
               for name, text in parts]
    try:
        tree = syntax.SyntaxTree.fromBuffers(
            buffers, source_manager, pyslang.Bag([_no_includes(defines or {}), *(options or [])]))
    except RuntimeError as exc:
        raise ParseLimitError(f"{parts[-1][0]}: nesting too deep for the parser "
                              f"({str(exc) or 'pyslang gave up'})") from None
    return tree, [b.id for b in buffers]


_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> str:
    """``text`` as pyslang can take it: a lone surrogate (a JSON ``"\\ud800"``, a byte
    read with ``surrogateescape``) becomes U+FFFD, one character for one."""
    return _SURROGATE.sub("\ufffd", text)


def text_decls(text: str, name: str) -> list[ModuleDecl]:
    """The modules one text declares, parsed alone (:func:`parse_tree`: no include is
    opened, no macro but its own): for an untrusted testbench.

    Raises:
        ParseLimitError: see :func:`parse_tree`.
    """
    return Design(parse_tree(text, name), VIRTUAL_ROOT).decls()


def include_names(text: str) -> list[str]:
    """The file names of the `` `include "..."`` directives in ``text``, in order."""
    return _INCLUDE.findall(text)


def search_dirs(files: Sequence[SourceFile], include_dirs: Iterable[str] = ()) -> list[str]:
    """Verilator's ``-I`` list for a repository, relative to its root, in search order.

    The explicit ``include_dirs``, then the directories that make an `` `include``
    resolve when it names a file by a path below one (`` `include "cc/a.svh"`` with the
    file at ``inc/cc/a.svh`` adds ``inc``), then ``.`` and every RTL file's directory.
    """
    names = {f.name for f in files}
    dirs = list(dict.fromkeys(str(PurePosixPath(d)) for d in include_dirs))
    for f in files:
        for inc in include_names(f.content):
            if any(_join(d, inc) in names for d in [*dirs, "."]):
                continue
            for name in sorted(names):
                if name.endswith("/" + inc):
                    dirs.append(name[: -len(inc) - 1])
                    break
    dirs += [".", *sorted({str(PurePosixPath(f.name).parent) for f in files} - {"."})]
    return list(dict.fromkeys(dirs))


def _join(directory: str, name: str) -> str:
    return str(PurePosixPath(directory) / name)


def compile_order(
    files: Sequence[SourceFile], compile_files: Sequence[str] = ()
) -> list[SourceFile]:
    """The files to compile (``compile_files`` if given, else every ``.v``/``.sv``),
    reordered so a file declaring a package comes before the files that use it
    (stable otherwise; a package cycle keeps the given order).

    Raises:
        ParseBoundError: see :func:`check_bounded` (each file is parsed alone here).
    """
    check_bounded(files, search_dirs(files), None, compile_files)
    return compile_order_unchecked(files, compile_files)


def compile_order_unchecked(files: Sequence[SourceFile], compile_files: Sequence[str] = ()
                            ) -> list[SourceFile]:
    """:func:`compile_order` after :func:`check_bounded` (of the caller's view)."""
    by_name = {f.name: f for f in files}
    chosen = ([by_name[n] for n in compile_files] if compile_files
              else [f for f in files if f.name.endswith(COMPILED_SUFFIXES)])
    declared: dict[str, str] = {}
    used: dict[str, frozenset[str]] = {}
    for f in chosen:
        decl, refs = packages_of(f.content, f.name)
        for pkg in decl:
            declared.setdefault(pkg, f.name)
        used[f.name] = refs - decl
    ordered: list[SourceFile] = []
    done: set[str] = set()
    pending = list(chosen)
    while pending:
        ready = next((f for f in pending if all(
            declared.get(p, f.name) in done | {f.name} for p in used[f.name])), pending[0])
        ordered.append(ready)
        done.add(ready.name)
        pending.remove(ready)
    return ordered


@functools.lru_cache(maxsize=256)
def packages_of(text: str, name: str) -> tuple[frozenset[str], frozenset[str]]:
    """(packages the text ``name`` declares, package names it refers to) from its
    syntax, parsed alone with no include opened (remembered: a design's files are read
    again on every call)."""
    declared: set[str] = set()
    refs: set[str] = set()
    if "package" not in text and "::" not in text:
        return frozenset(), frozenset()

    def visit(node: object) -> bool:
        # pyslang hands each node over as its concrete syntax class; the isinstance
        # checks only narrow the type (ModuleDeclarationSyntax is also a module's or an
        # interface's, hence the kind check).
        if (isinstance(node, syntax.ModuleDeclarationSyntax)
                and node.kind == syntax.SyntaxKind.PackageDeclaration):
            declared.add(node.header.name.valueText)
        elif isinstance(node, syntax.PackageImportItemSyntax):
            refs.add(node.package.valueText)
        elif isinstance(node, syntax.ScopedNameSyntax) and node.separator.valueText == "::":
            left = getattr(node.left, "identifier", None)
            if left is not None:
                refs.add(left.valueText)
        return True

    parse_tree(text, name).root.visit(visit)
    return frozenset(declared), frozenset(refs)


def module_parameters(f: SourceFile | syntax.SyntaxTree, module: str) -> set[str]:
    """Names of the overridable parameters (not ``localparam``) of ``module`` in ``f``
    (a file, or its parsed tree)."""
    names: set[str] = set()

    def in_module(node: object) -> bool:
        if (isinstance(node, syntax.ModuleDeclarationSyntax)
                and node.kind == syntax.SyntaxKind.ModuleDeclaration):
            if node.header.name.valueText == module:
                node.visit(param)
            return False
        return True

    def param(node: object) -> bool:
        if (isinstance(node, syntax.ParameterDeclarationSyntax)
                and node.keyword.valueText != "localparam"):
            names.update(d.name.valueText for d in node.declarators if hasattr(d, "name"))
        return True

    tree = f if isinstance(f, syntax.SyntaxTree) else parse_tree(f.content, f.name)
    tree.root.visit(in_module)
    return names


def define_args(defines: Mapping[str, str]) -> list[str]:
    """``NAME=VALUE`` (or ``NAME`` for an empty value), as pyslang and Verilator take them."""
    return [f"{k}={v}" if v != "" else k for k, v in defines.items()]


class Design:
    """The RTL parsed as one compilation unit (see the module docstring).

    Build it with :func:`parse_design` or :func:`task_design`.
    """

    def __init__(self, tree: syntax.SyntaxTree, root: str):
        self.tree = tree
        self._root = root.rstrip("/") + "/"

    def _name(self, location: pyslang.SourceLocation) -> str:
        """The repository name of a location's file: its path under the tree's root,
        or a relative name as it stands (a `` `line`` marker of Verilator's view names
        files relative to the sources folder, not to this process's cwd)."""
        name = self.tree.sourceManager.getFileName(location)
        full = os.path.abspath(name)  # pyslang may name a file relative to the cwd
        if full.startswith(self._root) or os.path.isabs(name):
            return full.removeprefix(self._root)
        return os.path.normpath(name)

    def decls(self) -> list[ModuleDecl]:
        """Every module declared, in compilation order."""
        found: list[ModuleDecl] = []
        sm = self.tree.sourceManager

        def visit(node: object) -> bool:
            if (isinstance(node, syntax.ModuleDeclarationSyntax)
                    and node.kind == syntax.SyntaxKind.ModuleDeclaration):
                loc = node.header.name.location
                insts, scopes, ieee = _instances(node)
                found.append(ModuleDecl(node.header.name.valueText, self._name(loc),
                                        sm.getLineNumber(loc), insts,
                                        _has_ports(node.header.ports), scopes, ieee))
            return True

        self.tree.root.visit(visit)
        return found

    def ports(self, module: str, parameters: Mapping[str, str] | None = None) -> list[Port]:
        """Ports of ``module`` elaborated as the top with ``parameters`` overridden.

        Raises:
            ValueError: the module is not declared (with the compiler's view of the
                macros) or has an interface port (a testbench cannot drive it as a signal).
        """
        ports: list[Port] = []
        _comp, top = self._top(module, parameters)
        for p in top.body.portList:
            if p.kind == ast.SymbolKind.InterfacePort:
                raise ValueError(f"port {p.name!r} of {module!r} is an interface port")
            if p.kind == ast.SymbolKind.Port:
                ports.append(_port(p))
        return ports


    def flat_ports(self, module: str, parameters: Mapping[str, str] | None = None
                   ) -> tuple[list[Port], list[InterfacePort]]:
        """:meth:`ports`, with each interface port's members as ports of their own
        (:func:`~llm4cov.tasks.interface_ports.interface_ports`), and those interface
        ports.

        Raises:
            ValueError: the module is not declared, or an interface port is not one
                that reading flattens.
        """
        comp, top = self._top(module, parameters)
        ports = [_port(p) for p in top.body.portList if p.kind == ast.SymbolKind.Port]
        interfaces, members = interface_ports(comp, top, _typed_port,
                                              {p.name for p in ports})
        return ports + members, interfaces

    def parameter_values(self, module: str, parameters: Mapping[str, str] | None = None
                         ) -> dict[str, dict[str, int]]:
        """The integer parameters (local ones too) of ``module`` elaborated as the top
        with ``parameters``, and of every instance below it, by instance path relative
        to it ("" for the top, ``u_sub``, ``g[0].u``); a value with an unknown bit, a
        real, a string or a type is left out.

        Raises:
            ValueError: the module is not declared.
        """
        _comp, top = self._top(module, parameters)
        out: dict[str, dict[str, int]] = {}
        prefix = top.hierarchicalPath + "."

        def visit(sym: Any) -> bool:
            if isinstance(sym, ast.InstanceSymbol):
                rel = "" if sym is top or sym.hierarchicalPath == top.hierarchicalPath \
                    else sym.hierarchicalPath.removeprefix(prefix)
                values = out.setdefault(rel, {})
                for p in sym.body.parameters:
                    value = getattr(p, "value", None)
                    v = getattr(value, "value", None)
                    if isinstance(v, pyslang.SVInt) and not v.hasUnknown:
                        values[p.name] = int(v.toString(pyslang.LiteralBase.Decimal, False))
            return True

        top.visit(visit)
        return out

    def parameters(self, module: str) -> list[str]:
        """Names of the parameters of ``module`` an instance may override (``parameter``
        and type parameters, not ``localparam``; a body ``parameter`` is local when the
        module has a parameter port list, IEEE 1800-2017 6.20.1), in declaration order.

        Raises:
            ValueError: the module is not declared.
        """
        _comp, top = self._top(module)
        return [p.name for p in top.body.parameters if not p.isLocalParam]

    def _top(self, module: str, parameters: Mapping[str, str] | None = None) -> tuple:
        """``(compilation, instance)``: ``module`` elaborated as the top instance with
        ``parameters`` overridden (hold the compilation while using the instance's
        symbols: they live in it).

        Raises:
            ValueError: the module is not declared (with the compiler's view of the macros).
        """
        options = ast.CompilationOptions()
        options.topModules = {module}
        options.paramOverrides = [f"{k}={v}" for k, v in (parameters or {}).items()]
        comp = ast.Compilation(pyslang.Bag([options]))
        comp.addSyntaxTree(self.tree)
        tops = [i for i in comp.getRoot().topInstances if i.name == module]
        if not tops:
            raise ValueError(f"module {module!r} is not declared in the RTL files")
        return comp, tops[0]


def _has_ports(ports: syntax.PortListSyntax | None) -> bool:
    """Whether a module header declares a port: ``module m(.*);`` (the ports of its
    ``extern`` declaration) does, ``module tb;`` and ``module tb();`` do not."""
    if isinstance(ports, syntax.WildcardPortListSyntax):
        return True
    return (isinstance(ports, (syntax.AnsiPortListSyntax, syntax.NonAnsiPortListSyntax))
            and len(ports.ports) > 0)


def _instances(module: syntax.SyntaxNode) -> tuple[
        tuple[tuple[str, str], ...], tuple[str, ...], tuple[str, ...]]:
    """The module's ``(module_type, instance_name)`` pairs in source order, and each
    one's generate scope, the simulator's and IEEE 1800's (:func:`_generate_scopes`)."""
    insts: list[tuple[str, str]] = []
    scopes: list[str] = []
    ieee: list[str] = []
    scope_of = _generate_scopes(module)
    ieee_of = _generate_scopes(module, ieee=True)

    def inner(n: object) -> bool:
        if isinstance(n, syntax.HierarchyInstantiationSyntax):
            for inst in n.instances:
                if not hasattr(inst, "decl"):
                    continue  # the comma tokens between `m a(...), b(...);`
                decl = inst.decl
                insts.append((n.type.valueText, decl.name.valueText if decl is not None else ""))
                scopes.append(scope_of.get(n.sourceRange.start.offset, ""))
                ieee.append(ieee_of.get(n.sourceRange.start.offset, ""))
        return True

    module.visit(inner)
    return tuple(insts), tuple(scopes), tuple(ieee)


def _generate_scopes(module: syntax.SyntaxNode, ieee: bool = False) -> dict[int, str]:
    """Offset of each instantiation in a conditional generate block of ``module`` ->
    the block names it lies in (``g.``, ``genblk2.``), as the simulator names them (its
    coverage points carry these paths): a block's label, else ``genblk<n>`` with ``n``
    the construct's number in its scope (IEEE 1800 27.6: every generate construct
    counts). An ``if`` directly in an ``else`` is part of its chain; any other ``if`` or
    ``case`` directly in a branch, without ``begin``, is a block of its own
    (``if (A) if (B) m u();`` is ``genblk1.genblk1.u``): IEEE 1800 27.5 makes every such
    direct nesting one scope (``genblk1.u``, pyslang's name), but Verilator, 5.052 as the
    pinned build, merges only the ``else if`` chain (measured with ``--json-only``).
    ``ieee``: the standard's names instead (pyslang's elaboration's paths).
    Instantiations in a generate loop are left out (their index is not read here)."""
    scopes: dict[int, str] = {}

    def members(items: Iterable[Any], prefix: str) -> None:
        count = 0

        def item(x: Any) -> None:
            nonlocal count
            if isinstance(x, syntax.GenerateRegionSyntax):
                for m in x.members:
                    item(m)
            elif isinstance(x, (syntax.IfGenerateSyntax, syntax.CaseGenerateSyntax)):
                count += 1
                construct(x, prefix, count)
            elif isinstance(x, syntax.LoopGenerateSyntax):
                count += 1
            elif isinstance(x, syntax.HierarchyInstantiationSyntax):
                scopes[x.sourceRange.start.offset] = prefix

        for x in items:
            item(x)

    def construct(x: Any, prefix: str, number: int) -> None:
        is_if = isinstance(x, syntax.IfGenerateSyntax)
        clauses = [x.block, x.elseClause.clause if x.elseClause is not None else None] \
            if is_if else [i.clause for i in x.items]
        for i, clause in enumerate(clauses):
            nested = isinstance(clause, (syntax.IfGenerateSyntax, syntax.CaseGenerateSyntax))
            if nested and (ieee or (is_if and i == 1 and
                                    isinstance(clause, syntax.IfGenerateSyntax))):
                construct(clause, prefix, number)  # one scope (the `else if` chain)
            elif isinstance(clause, syntax.GenerateBlockSyntax):
                named = clause.label or clause.beginName
                name = named.name.valueText if named is not None else f"genblk{number}"
                members(clause.members, f"{prefix}{name}.")
            elif clause is not None:
                members([clause], f"{prefix}genblk{number}.")

    members(getattr(module, "members", []), "")
    return scopes


def _port(p: ast.PortSymbol) -> Port:
    direction = {"In": "input", "Out": "output", "InOut": "inout"}.get(
        p.direction.name, p.direction.name.lower())
    return _typed_port(p.type, p.name, direction)


def _typed_port(ty: Any, name: str, direction: str, via: str = "") -> Port:
    dims: list[tuple[int, int]] = []
    while isinstance(ty, ast.FixedSizeUnpackedArrayType):  # the unpacked arrays with a range
        dims.append((ty.range.left, ty.range.right))
        ty = ty.elementType
    width = max(1, int(ty.bitWidth))
    text = str(ty)
    if ty.isAlias and "::" in text and "." not in text and "$" not in text:
        type_text, cast = text, True  # a package type: enum, struct, typedef'd vector
    elif ty.isIntegral:
        type_text, cast = _vector(width, ty.isSigned), False
    else:
        type_text, cast = text, False  # real, string, ...
    return Port(name, direction, width, bool(ty.isSigned), type_text, cast, tuple(dims), via)


def parse_design(
    files: Sequence[SourceFile],
    include_dirs: Iterable[str] = (),
    defines: Mapping[str, str] | None = None,
    compile_files: Sequence[str] = (),
) -> Design:
    """Parse ``files`` as Verilator compiles them (see the module docstring).

    Every text (and the macros) is first checked with the include rule
    (:func:`llm4cov.tasks.includes.problems`) and for bounds (:func:`check_bounded`);
    the files are then written to a fresh scratch dir, below as many empty folders as a
    ``../`` name climbs, so every name an `` `include`` tries lies inside it.

    Never raises on bad code: pyslang recovers and its diagnostics are not checked here.

    Raises:
        UnsafeIncludeError: a text breaks the include rule (names the file and line).
        ParseBoundError: the parse went past its bounds in a child.
    """
    dirs = search_dirs(files, include_dirs)
    found = includes.problems({f.name: f.content for f in files}, dirs, defines)
    if found:
        raise UnsafeIncludeError(includes.first_problem(found))
    check_bounded(files, dirs, defines, compile_files)
    return compiled(files, dirs, define_args(defines or {}), compile_files)


def compiled(files: Sequence[SourceFile], dirs: Sequence[str], predefines: Sequence[str],
             compile_files: Sequence[str] = (),
             version: pyslang.LanguageVersion | None = None) -> Design:
    """:func:`parse_design` with the search ``dirs`` and ``predefines`` as given (and a
    language ``version``), checked with the include rule but not for bounds: for
    :func:`parse_design` and the bounded child (:mod:`llm4cov.sim.safety.ppguard`).

    Raises:
        UnsafeIncludeError: a text breaks the include rule; :class:`OutsideFileError`
            when the parse read a file outside the scratch dir all the same
            (:func:`opened_outside`; the tree is dropped unread).
    """
    macros = dict(d.partition("=")[::2] for d in predefines)
    found, climb = includes.analyse({f.name: f.content for f in files}, dirs, macros)
    if found:
        raise UnsafeIncludeError(includes.first_problem(found))
    order = compile_order_unchecked(files, compile_files)
    with tempfile.TemporaryDirectory(prefix="llm4cov-hdl-") as tmp:
        root = Path(tmp).joinpath(*["up"] * climb, "repo")
        for f in files:
            path = root / f.name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f.content, encoding="utf-8", errors="surrogateescape")
        sm = pyslang.SourceManager()
        sm.setDisableLocalIncludes(True)
        for d in dirs:
            if (root / d).is_dir():
                sm.addUserDirectories(str(root / d))
        options: list = []
        pp = parsing.PreprocessorOptions()
        pp.predefines = list(predefines)
        if version is not None:
            pp.languageVersion = version
            lexer = parsing.LexerOptions()
            lexer.languageVersion = version
            options.append(lexer)
        buffers = [sm.assignText(str(root / f.name), f.content) for f in order]
        tree = (syntax.SyntaxTree.fromBuffers(buffers, sm, pyslang.Bag([pp, *options]))
                if buffers else syntax.SyntaxTree.fromText("", "empty.sv"))
        if outside := opened_outside(sm, tmp) + missing_outside(tree):
            raise OutsideFileError(
                f"an `include reached for {outside[0]}, outside the sources (its name was "
                "built by macros the include rule cannot follow); refused")
    return Design(tree, str(root))


class OutsideFileError(UnsafeIncludeError):
    """The parse read a file outside the sources although the include rule passed (a
    name macros built): the text is refused, the tree dropped."""


def missing_outside(tree: syntax.SyntaxTree) -> list[str]:
    """Absolute or climbing names of `` `include``s the parse tried and did not find:
    the include rule refuses such names written out, so a macro built them (in the
    bounded child's OS sandbox the host's files are not there to be found)."""
    code = pyslang.Diags.CouldNotOpenIncludeFile
    names = [str(d.args[0]) for d in tree.diagnostics if d.code == code and d.args]
    return [n for n in names if os.path.isabs(n) or ".." in PurePosixPath(n).parts]


def opened_outside(sm: pyslang.SourceManager, root: str) -> list[str]:
    """The files ``sm`` read that lie outside the folder ``root`` (real paths compared;
    virtual names, not absolute, are the texts given). The last line behind the include
    rule: whatever a macro builds, a file read from elsewhere is seen."""
    real_root = os.path.realpath(root)
    out = []
    for buffer in sm.getAllBuffers():
        path = str(sm.getFullPath(buffer))
        if os.path.isabs(path) and os.path.commonpath(
                [real_root, os.path.realpath(path)]) != real_root:
            out.append(path)
    return sorted(set(out))


#: True in a child that is bounded itself (the guards): nothing is checked again there.
BOUNDED_PROCESS = False
#: This process's bound checks: key -> None (bounded) or why not.
_BOUNDED: dict[str, str | None] = {}


class ParseBoundError(TaskError):
    """pyslang's parse of the RTL, in a bounded child, went past its bounds (a macro
    that expands without end): it is never parsed in this process (bad input)."""


def _bound_item(files: Sequence[SourceFile], dirs: Sequence[str],
                defines: Mapping[str, str] | None, compile_files: Sequence[str]
                ) -> tuple[str, dict] | None:
    """``(key, the child's item)``, or None when nothing needs a child: no text uses the
    preprocessor, or this process is a bounded child."""
    if BOUNDED_PROCESS or not any(USES_MACROS.search(f.content) for f in files):
        return None
    item = {"files": [[f.name, f.content] for f in files], "dirs": list(dirs),
            "defines": dict(defines or {}), "compile_files": list(compile_files)}
    text = json.dumps(item, sort_keys=True).encode("utf-8", errors="surrogatepass")
    return hashlib.sha256(text).hexdigest(), item


def check_bounded(files: Sequence[SourceFile], dirs: Sequence[str] | None = None,
                  defines: Mapping[str, str] | None = None,
                  compile_files: Sequence[str] = ()) -> None:
    """Raise unless every in-process parse of ``files`` (with the search ``dirs``,
    default :func:`search_dirs`, and ``defines``) is known to end within bounds: RTL
    that uses the preprocessor is parsed once per process in a bounded child first
    (:func:`check_bounded_many`).

    Raises:
        ParseBoundError: the child went past its bounds.
    """
    check_bounded_many([(files, search_dirs(files) if dirs is None else dirs, defines,
                         compile_files)])


def check_bounded_many(sets: Sequence[tuple[Sequence[SourceFile], Sequence[str],
                                            Mapping[str, str] | None, Sequence[str]]]
                       ) -> None:
    """:func:`check_bounded` for many RTL sets ``(files, dirs, defines, compile_files)``
    at once: one child for every set not checked yet (each parse of a set with 10 CPU
    seconds and 512 MiB, in the OS sandbox where it runs; :mod:`llm4cov.sim.safety.ppguard`).

    Raises:
        ParseBoundError: for the first set whose parse went past its bounds.
    """
    todo: dict[str, dict] = {}
    for files, dirs, defines, compile_files in sets:
        found = _bound_item(files, dirs, defines, compile_files)
        if found is not None and found[0] not in _BOUNDED:
            todo.setdefault(*found)
    if todo:
        from llm4cov.sim.safety.ppguard import rtl_bounds  # runs a child: sim's machinery

        for key, why in zip(todo, rtl_bounds(list(todo.values())), strict=True):
            _BOUNDED[key] = why
    for files, dirs, defines, compile_files in sets:
        found = _bound_item(files, dirs, defines, compile_files)
        if found is not None and (why := _BOUNDED.get(found[0])):
            names = ", ".join(f.name for f in files[:3]) + (", ..." if len(files) > 3 else "")
            raise ParseBoundError(f"RTL {names}: {why}")


def task_design(task: Task) -> Design:
    """The design of ``task`` with its include dirs, macros and compile list."""
    return parse_design(task.rtl_files, task.include_dirs, task.defines, task.compile_files)


def task_ports(task: Task) -> list[Port]:
    """The DUT's ports as the compiler elaborates them with the task's parameters.

    Raises:
        ValueError: see :meth:`Design.ports`.
    """
    return task_design(task).ports(task.dut_module_name, task.parameters)


def module_decls(
    files: Iterable[SourceFile],
    include_dirs: Iterable[str] = (),
    defines: Mapping[str, str] | None = None,
    compile_files: Sequence[str] = (),
) -> list[ModuleDecl]:
    """Every module declared in ``files`` compiled together (syntax level)."""
    return parse_design(list(files), include_dirs, defines, compile_files).decls()


def top_modules(decls: list[ModuleDecl]) -> list[str]:
    """Modules that no other declared module instantiates, in declaration order."""
    instantiated = {mtype for d in decls for mtype, _ in d.instances if mtype != d.name}
    seen: list[str] = []
    for d in decls:
        if d.name not in instantiated and d.name not in seen:
            seen.append(d.name)
    return seen


#: The most instance paths :func:`instance_paths` enumerates (a module tree can double
#: per level: 41 modules make 2**40 paths).
MAX_INSTANCE_PATHS = 10_000


class InstanceLimitError(ValueError):
    """More instance paths than :data:`MAX_INSTANCE_PATHS` (message names the count)."""


def _path_counts(decls: list[ModuleDecl], top: str, module: str) -> dict[str, int]:
    """Module -> number of instance paths of ``module`` below it, over the module DAG
    (memoized, iterative: linear in the number of instantiations). A module reached
    again below itself (recursive instantiation) contributes nothing there."""
    by_name = {d.name: d for d in decls}
    counts: dict[str, int] = {}
    open_: set[str] = set()
    stack: list[tuple[str, bool]] = [(top, False)]
    while stack:
        mod, done = stack.pop()
        kids = [m for m, _ in by_name[mod].instances] if mod in by_name else []
        if done:
            open_.discard(mod)
            counts[mod] = sum((m == module) + counts.get(m, 0) for m in kids)
        elif mod not in counts and mod not in open_:
            open_.add(mod)
            stack.append((mod, True))
            stack.extend((m, False) for m in kids if m not in counts and m not in open_)
    return counts


def instance_paths(decls: list[ModuleDecl], top: str, module: str, ieee: bool = False
                   ) -> list[str]:
    """Hierarchical paths (``top.a.b``, ``top.genblk1.b`` in a conditional generate
    block) of every instance of ``module`` below ``top``, in source order (depth first):
    the simulator's names, or IEEE 1800's (pyslang's) with ``ieee``
    (:attr:`ModuleDecl.ieee_scopes`).

    Paths are counted over the declared module DAG first (:func:`_path_counts`) and
    only subtrees that contain ``module`` are walked, so the cost is bounded by the
    number of paths returned times the depth, whatever the size of the rest.

    Raises:
        InstanceLimitError: more than :data:`MAX_INSTANCE_PATHS` paths.
    """
    counts = _path_counts(decls, top, module)
    if counts.get(top, 0) > MAX_INSTANCE_PATHS:
        raise InstanceLimitError(
            f"`{top}` holds {counts[top]} instances of `{module}` (more than "
            f"{MAX_INSTANCE_PATHS}): the instance tree is too large to evaluate"
        )
    by_name = {d.name: d for d in decls}
    paths: list[str] = []

    def below(mod: str, path: str, above: frozenset[str]) -> list:
        decl = by_name.get(mod)
        kids = decl.instances if decl is not None else ()
        named = (decl.ieee_scopes if ieee else decl.scopes) if decl is not None else ()
        scopes = named or ("",) * len(kids)
        return [(m, f"{path}.{scope}{i}", above | {m})
                for (m, i), scope in reversed(list(zip(kids, scopes, strict=True)))
                if m not in above]

    stack = below(top, top, frozenset({top}))
    while stack:
        mod, path, above = stack.pop()
        if mod == module:
            paths.append(path)
        if counts.get(mod, 0):
            stack.extend(below(mod, path, above))
    return paths


def dut_ports(
    rtl_files: Iterable[SourceFile],
    module: str,
    include_dirs: Iterable[str] = (),
    defines: Mapping[str, str] | None = None,
    parameters: Mapping[str, str] | None = None,
) -> list[Port]:
    """Ports of ``module`` elaborated as a top (default parameters unless overridden).

    Raises:
        ValueError: the module is not declared in ``rtl_files``.
    """
    return parse_design(list(rtl_files), include_dirs, defines).ports(module, parameters)
