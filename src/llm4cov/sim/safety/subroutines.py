"""Which arguments of a subroutine call the callee writes (for :mod:`stimulus_only`).

A task or function writes the actual argument of every ``output``, ``inout`` and
``ref`` formal (``const ref`` is read only; IEEE 1800 13.5): ``poke(dut.st, 8'hEE)``
with ``task poke(output logic [7:0] x, ...)`` writes ``dut.st`` as surely as
``dut.st = 8'hEE``. A formal without a direction takes the one before it, the first
defaults to ``input`` (13.3, 13.4). The signatures are read from the syntax of the
testbench and of the RTL (a package function with an ``output`` argument): a name
declared more than once (methods of several classes, overloads in scopes) writes an
argument when any declaration does, so a doubt is a write.

Built-in methods write arguments too: an associative array's ``first``/``last``/
``next``/``prev`` write their ``ref`` index (7.9.4-7.9.7), a mailbox's ``get``/
``try_get``/``peek``/``try_peek`` their ``ref`` message (15.4.4-15.4.9), and
``randomize`` every variable it lists (18.11, 18.12). These apply to any method call of
those names (``x.get(v)``): which class ``x`` is would take elaboration.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyslang import syntax

#: Built-in array methods that reorder their array in place (IEEE 1800 7.12.2): a call
#: writes its receiver (``taps.reverse()`` on a DUT output array: 85.21 -> 93.06 %).
IN_PLACE_METHODS = frozenset({"reverse", "sort", "rsort", "shuffle"})
#: System tasks and the arguments they write: ``(first, last)`` indexes, None: to the end.
OUTPUT_ARGUMENTS: Mapping[str, tuple[int, int | None]] = {
    "$readmemh": (1, 1), "$readmemb": (1, 1), "$fread": (0, 0), "$fgets": (0, 0),
    "$fscanf": (2, None), "$sscanf": (2, None), "$value$plusargs": (1, 1),
    "$cast": (0, 0), "$sformat": (0, 0), "$swrite": (0, 0), "$swriteb": (0, 0),
    "$swriteo": (0, 0), "$swriteh": (0, 0), "$random": (0, 0), "$urandom": (0, 0),
    "$dist_uniform": (0, 0), "$dist_normal": (0, 0), "$dist_exponential": (0, 0),
    "$dist_poisson": (0, 0), "$dist_chi_square": (0, 0), "$dist_t": (0, 0),
    "$dist_erlang": (0, 0), "$ferror": (1, 1),
}


SK = syntax.SyntaxKind

WRITING = frozenset({"output", "inout", "ref"})
#: An associative array's traversal methods: their argument is a ``ref`` index they
#: write (IEEE 1800 7.9.4-7.9.7; slang calls them system methods, the array first).
INDEX_METHODS = frozenset({"first", "last", "next", "prev"})
#: Built-in methods whose first argument is a ``ref`` the method writes.
_FIRST_ARGUMENT_METHODS = INDEX_METHODS | frozenset({"get", "try_get", "peek", "try_peek"})

#: A signature: each formal's name and direction (``const ref`` as its own direction).
Signature = tuple[tuple[str, str], ...]


def signatures(trees: Iterable[syntax.SyntaxTree]) -> dict[str, list[Signature]]:
    """Every task/function prototype of ``trees`` (bodies, ``extern`` and class method
    prototypes, out-of-class definitions ``C::m``), by the subroutine's own name."""
    out: dict[str, list[Signature]] = {}

    def visit(node: object) -> bool:
        if isinstance(node, syntax.FunctionPrototypeSyntax):
            name = _last_name(node.name)
            if name:
                out.setdefault(name, []).append(_formals(node))
        return True

    for tree in trees:
        tree.root.visit(visit)
    return out


def _formals(proto: Any) -> Signature:
    if proto.portList is None:
        return ()
    return tuple((port.declarator.name.valueText, direction)
                 for port, direction in port_directions(proto.portList))


def port_directions(ports: Any) -> list[tuple[Any, str]]:
    """Each ``FunctionPortSyntax`` of a subroutine's port list with its direction (a
    formal without one takes the one before it, the first ``input``: IEEE 1800 13.3;
    ``const ref`` apart)."""
    out: list[tuple[Any, str]] = []
    direction = "input"
    for port in ports.ports:
        if not isinstance(port, syntax.FunctionPortSyntax):
            continue
        if port.direction is not None and port.direction.valueText:
            direction = port.direction.valueText
            if port.constKeyword is not None and port.constKeyword.valueText:
                direction = "const ref"
        out.append((port, direction))
    return out


def _last_name(name: Any) -> str:
    """``f`` of ``f``, ``C::f``, ``obj.f`` or ``a.b.f``; empty for anything else."""
    if name is None:
        return ""
    if name.kind in (SK.IdentifierName, SK.IdentifierSelectName):
        return name.identifier.valueText
    if name.kind == SK.ScopedName:
        return _last_name(name.right)
    if name.kind == SK.ConstructorName:
        return "new"
    return ""


def written_arguments(call: Any, sigs: Mapping[str, list[Signature]]
                      ) -> list[tuple[Any, str, bool]]:
    """``(argument expression, what writes it)`` for each actual argument of the
    ``InvocationExpression`` or ``NewClassExpression`` (a constructor, ``new(...)``)
    ``call`` that the callee writes (see the module docstring), and whether that is a
    declared ``ref`` formal (which a body may only read: ``task wait_high(ref logic
    sig)``; the elaboration tells); system calls are left to the caller (their own
    table)."""
    if call.kind == SK.NewClassExpression:  # a constructor: any class's ``new``
        callee, arglist, name = None, call.argList, "new"
    else:
        callee, arglist = call.left, call.arguments
        if callee.kind == SK.SystemName:
            return []
        name = _last_name(callee)
    if arglist is None:
        return []
    args = [a for a in arglist.parameters if isinstance(a, syntax.SyntaxNode)]
    out: list[tuple[Any, str, bool]] = []
    for i, arg in enumerate(args):
        expr = getattr(arg, "expr", None)
        if expr is None:
            continue
        named = arg.name.valueText if isinstance(arg, syntax.NamedArgumentSyntax) else None
        why, ref = _writer(name, i, named, sigs.get(name, []),
                           method=callee is not None and callee.kind == SK.ScopedName)
        if why:
            out.append((expr, why, ref))
    return out


def _writer(name: str, index: int, named: str | None, sigs: list[Signature],
            method: bool) -> tuple[str, bool]:
    """What writes the argument at ``index`` (or the one named ``named``) of a call of
    ``name`` (a declared formal's direction, or a built-in method's rule; empty: none),
    and whether it is a declared ``ref`` formal."""
    for sig in sigs:
        formal = (next((f for f in sig if f[0] == named), None) if named is not None
                  else sig[index] if index < len(sig) else None)
        if formal is not None and formal[1] in WRITING:
            return f"the {formal[1]} argument `{formal[0]}` of `{name}`", formal[1] == "ref"
    if name == "randomize":
        return "the variable `randomize` sets", False
    if method and index == 0 and named is None and name in _FIRST_ARGUMENT_METHODS:
        return f"the ref argument of the built-in method `{name}`", False
    return "", False
