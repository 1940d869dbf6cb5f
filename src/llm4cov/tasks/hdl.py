"""SystemVerilog structure via pyslang: modules, instances, top detection, DUT ports.

Everything here works on the syntax tree (no elaboration) unless it says otherwise,
so a testbench with semantic errors still yields its module and instance structure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pyslang
from pyslang import ast, syntax

from llm4cov.tasks.model import SourceFile

HDL_SUFFIXES = (".v", ".sv", ".vh", ".svh")
COMPILED_SUFFIXES = (".v", ".sv")


@dataclass(frozen=True)
class ModuleDecl:
    """A module declaration: its name, file, line, and the modules it instantiates.

    ``instances`` holds ``(module_type, instance_name)`` pairs in source order.
    """

    name: str
    file: str
    line: int
    instances: tuple[tuple[str, str], ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Port:
    """A DUT port after elaboration with default parameters; ``width`` in bits."""

    name: str
    direction: str  # "input" | "output" | "inout"
    width: int
    signed: bool = False


def parse_tree(text: str, name: str) -> syntax.SyntaxTree:
    """Parse one source text into a pyslang syntax tree (never raises on bad code)."""
    return syntax.SyntaxTree.fromText(text, name)


def module_decls(files: Iterable[SourceFile]) -> list[ModuleDecl]:
    """Every module declared in ``files`` (syntax level), in file order."""
    decls: list[ModuleDecl] = []
    for f in files:
        tree = parse_tree(f.content, f.name)
        decls.extend(_decls_in_tree(tree, f.name))
    return decls


def _decls_in_tree(tree: syntax.SyntaxTree, file_name: str) -> list[ModuleDecl]:
    found: list[ModuleDecl] = []

    def visit(node: object) -> bool:
        if getattr(node, "kind", None) == syntax.SyntaxKind.ModuleDeclaration:
            insts: list[tuple[str, str]] = []

            def inner(n: object) -> bool:
                if getattr(n, "kind", None) == syntax.SyntaxKind.HierarchyInstantiation:
                    for inst in n.instances:
                        if not hasattr(inst, "decl"):
                            continue  # the comma tokens between `m a(...), b(...);`
                        decl = inst.decl
                        name = decl.name.valueText if decl is not None else ""
                        insts.append((n.type.valueText, name))
                return True

            node.visit(inner)
            loc = tree.sourceManager.getLineNumber(node.header.name.location)
            found.append(ModuleDecl(node.header.name.valueText, file_name, loc, tuple(insts)))
        return True

    tree.root.visit(visit)
    return found


def top_modules(decls: list[ModuleDecl]) -> list[str]:
    """Modules that no other declared module instantiates, in declaration order."""
    instantiated = {mtype for d in decls for mtype, _ in d.instances if mtype != d.name}
    seen: list[str] = []
    for d in decls:
        if d.name not in instantiated and d.name not in seen:
            seen.append(d.name)
    return seen


def instance_paths(decls: list[ModuleDecl], top: str, module: str) -> list[str]:
    """Hierarchical paths (``top.a.b``) of every instance of ``module`` below ``top``.

    Paths are found by walking the declared instance tree; recursion is cut at depth 32.
    """
    by_name = {d.name: d for d in decls}
    paths: list[str] = []

    def walk(mod: str, path: str, depth: int) -> None:
        decl = by_name.get(mod)
        if decl is None or depth > 32:
            return
        for mtype, iname in decl.instances:
            child = f"{path}.{iname}"
            if mtype == module:
                paths.append(child)
            walk(mtype, child, depth + 1)

    walk(top, top, 0)
    return paths


def dut_ports(rtl_files: Iterable[SourceFile], module: str) -> list[Port]:
    """Ports of ``module`` elaborated as a top with its default parameters.

    Raises:
        ValueError: the module is not declared in ``rtl_files``.
    """
    options = ast.CompilationOptions()
    options.topModules = {module}
    comp = ast.Compilation(pyslang.Bag([options]))
    for f in rtl_files:
        if f.name.endswith(HDL_SUFFIXES):
            comp.addSyntaxTree(parse_tree(f.content, f.name))
    tops = [i for i in comp.getRoot().topInstances if i.name == module]
    if not tops:
        raise ValueError(f"module {module!r} is not declared in the RTL files")
    ports: list[Port] = []
    for p in tops[0].body.portList:
        if p.kind != ast.SymbolKind.Port:
            continue
        direction = {"In": "input", "Out": "output", "InOut": "inout"}.get(
            p.direction.name, p.direction.name.lower()
        )
        ports.append(Port(p.name, direction, max(1, int(p.type.bitWidth)), p.type.isSigned))
    return ports
