"""Good testbenches from the shared data, and deterministic mutations of them.

Seeds (:func:`seeds`): every reference testbench of ``rtllm.jsonl`` and
``cvdp_example.jsonl``, every LLM-written testbench of
``corpus/llm_testbenches.jsonl`` (as written: many of them do not compile) and every
reproducer testbench of ``corpus/repro/``. Mutations (:data:`OPERATORS`) are the
mistakes LLM testbenches make (a missing ``;``, a misspelt port, an undeclared
signal, an illegal literal, a driven DUT output, ...) plus edits that keep the
testbench legal (renaming a signal everywhere, an oversized literal, a removed
`` `timescale``) so both verdicts are represented. Each operator picks its site with a
``random.Random`` seeded by the seed's name and the operator, so a corpus is
reproducible.

Used by ``precheck_agreement.py`` and ``sim_throughput.py``.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pyslang import parsing, syntax

from llm4cov.tasks.hdl import dut_ports, module_decls, top_modules
from llm4cov.tasks.loaders import load_tasks
from llm4cov.tasks.model import SourceFile, Task

SHARED = Path(__file__).resolve().parents[2] / "shared"


@dataclass(frozen=True)
class Seed:
    """A testbench as found, with its task (``any_instance``: keep its own DUT name)."""

    name: str
    task: Task
    tb: SourceFile
    aux: tuple[SourceFile, ...] = ()


@dataclass(frozen=True)
class Variant:
    """One testbench to evaluate: a seed as is (``op == "original"``) or mutated."""

    seed: Seed
    op: str
    tb: SourceFile


def seeds(shared: Path = SHARED) -> list[Seed]:
    """Every good or LLM-written testbench of the shared data (see the module doc)."""
    found = []
    for file in ("benchmarks/rtllm.jsonl", "benchmarks/cvdp_example.jsonl"):
        for task in load_tasks(shared / file):
            ref = task.reference_tb
            if ref is not None:
                tb = SourceFile(name=ref.name, content=ref.content)
                found.append(Seed(f"ref:{task.id}", task, tb, tuple(ref.aux_files)))
    for line in (shared / "corpus/llm_testbenches.jsonl").read_text().splitlines():
        row = json.loads(line)
        task = Task(id=row["id"], rtl_files=row["rtl_files"],
                    dut_module_name=row["dut_module_name"])
        found.append(Seed(f"llm:{row['id']}", task, SourceFile(**row["testbench"])))
    for folder in sorted((shared / "corpus/repro").iterdir()):
        rtl = [SourceFile(name="rtl.sv", content=(folder / "rtl.sv").read_text())]
        top = top_modules(module_decls(rtl))[0]
        task = Task(id=f"repro/{folder.name}", rtl_files=rtl, dut_module_name=top)
        tb = SourceFile(name="tb.sv", content=(folder / "tb.sv").read_text())
        found.append(Seed(f"repro:{folder.name}", task, tb))
    return found


def variants(seed: Seed, operators: dict[str, Operator] | None = None) -> Iterator[Variant]:
    """The seed itself, then one mutant per operator that applies to it."""
    yield Variant(seed, "original", seed.tb)
    for name, op in (operators or OPERATORS).items():
        rng = random.Random(f"{seed.name}/{name}")
        text = op(_Source(seed.tb.content, seed.task), rng)
        if text is not None and text != seed.tb.content:
            yield Variant(seed, name, SourceFile(name=seed.tb.name, content=text))


class _Source:
    """A testbench's text with its tokens and syntax, for the operators."""

    def __init__(self, text: str, task: Task) -> None:
        self.text = text
        self.task = task
        self.tree = syntax.SyntaxTree.fromText(text, "tb.sv")
        self.tokens: list[tuple[str, str, int]] = []  # (kind, raw text, offset)
        self.nodes: list = []

        def visit(node: object) -> bool:
            if isinstance(node, parsing.Token):
                off = node.location.offset
                raw = node.rawText
                if raw and not node.isMissing and text[off:off + len(raw)] == raw:
                    self.tokens.append((node.kind.name, raw, off))
            else:
                self.nodes.append(node)
            return True

        self.tree.root.visit(visit)

    def of_kind(self, *kinds: str) -> list[tuple[str, str, int]]:
        return [t for t in self.tokens if t[0] in kinds]

    def replace(self, offset: int, old: str, new: str) -> str:
        return self.text[:offset] + new + self.text[offset + len(old):]

    def syntax_of(self, kind: syntax.SyntaxKind) -> list:
        return [n for n in self.nodes if n.kind == kind]

    def dut_connections(self) -> list[tuple[str, object]]:
        """``(port name, connection node)`` of named connections to the DUT instance."""
        found = []
        for inst in self.syntax_of(syntax.SyntaxKind.HierarchyInstantiation):
            if inst.type.valueText != self.task.dut_module_name:
                continue
            for instance in inst.instances:
                for conn in instance.connections:
                    if conn.kind == syntax.SyntaxKind.NamedPortConnection:
                        found.append((conn.name.valueText, conn))
        return found

    def offset(self, node) -> int:
        return node.sourceRange.start.offset

    def end_of_top(self) -> int | None:
        """Offset of the last ``endmodule`` (to insert statements into the tb top)."""
        ends = self.of_kind("EndModuleKeyword")
        return ends[-1][2] if ends else None


Operator = Callable[[_Source, random.Random], "str | None"]


def _pick(rng: random.Random, items: list):
    return rng.choice(items) if items else None


def _drop_token(kinds: tuple[str, ...] | None) -> Operator:
    def op(src: _Source, rng: random.Random) -> str | None:
        tok = _pick(rng, src.of_kind(*kinds) if kinds else src.tokens)
        return src.replace(tok[2], tok[1], "") if tok else None
    return op


def _duplicate_token(src: _Source, rng: random.Random) -> str | None:
    tok = _pick(rng, src.tokens)
    return src.replace(tok[2], tok[1], f"{tok[1]} {tok[1]}") if tok else None


def _swap_tokens(src: _Source, rng: random.Random) -> str | None:
    if len(src.tokens) < 2:
        return None
    i = rng.randrange(len(src.tokens) - 1)
    (_, a, ao), (_, b, bo) = src.tokens[i], src.tokens[i + 1]
    return src.text[:ao] + b + src.text[ao + len(a):bo] + a + src.text[bo + len(b):]


def _drop_line(src: _Source, rng: random.Random) -> str | None:
    lines = src.text.splitlines(keepends=True)
    code = [i for i, ln in enumerate(lines) if ln.strip() and not ln.strip().startswith("//")]
    if not code:
        return None
    del lines[rng.choice(code)]
    return "".join(lines)


def _misspell_identifier(src: _Source, rng: random.Random) -> str | None:
    tok = _pick(rng, src.of_kind("Identifier"))
    return src.replace(tok[2], tok[1], tok[1] + "_x") if tok else None


_KEYWORDS = ("BeginKeyword", "EndKeyword", "InitialKeyword", "AlwaysKeyword", "RegKeyword",
             "WireKeyword", "LogicKeyword", "IntegerKeyword", "IfKeyword", "ForKeyword",
             "AssignKeyword", "PosEdgeKeyword", "NegEdgeKeyword", "RepeatKeyword",
             "EndModuleKeyword", "ModuleKeyword", "ForeverKeyword", "ElseKeyword")


def _misspell_keyword(src: _Source, rng: random.Random) -> str | None:
    tok = _pick(rng, src.of_kind(*_KEYWORDS))
    if tok is None:
        return None
    word = tok[1]
    cut = rng.randrange(1, len(word)) if len(word) > 2 else len(word) - 1
    return src.replace(tok[2], word, word[:cut] + word[cut + 1:])


def _wrong_port_name(src: _Source, rng: random.Random) -> str | None:
    conn = _pick(rng, src.dut_connections())
    if conn is None:
        return None
    name_tok = conn[1].name
    off = name_tok.location.offset
    return src.replace(off, name_tok.rawText, name_tok.rawText + "_x")


def _extra_port(src: _Source, rng: random.Random) -> str | None:
    conn = _pick(rng, src.dut_connections())
    return None if conn is None else (
        src.text[:src.offset(conn[1])] + ".llm4cov_no_such_port(1'b0), "
        + src.text[src.offset(conn[1]):]
    )


def _drop_declaration(src: _Source, rng: random.Random) -> str | None:
    decls = [n for n in src.nodes if n.kind in (syntax.SyntaxKind.DataDeclaration,
                                                 syntax.SyntaxKind.NetDeclaration)]
    node = _pick(rng, decls)
    if node is None:
        return None
    start, end = node.sourceRange.start.offset, node.sourceRange.end.offset
    return src.text[:start] + src.text[end:]


def _illegal_digit(src: _Source, rng: random.Random) -> str | None:
    bases = [(i, t) for i, t in enumerate(src.tokens) if t[0] == "IntegerBase"]
    found = _pick(rng, [(i, t) for i, t in bases if i + 1 < len(src.tokens)])
    if found is None:
        return None
    i, base = found
    bad = {"b": "2", "o": "9", "d": "a", "h": "g"}.get(base[1][-1].lower(), "g")
    _, digits, off = src.tokens[i + 1]
    return src.replace(off, digits, digits[:-1] + bad + digits[-1:])


def _missing_digits(src: _Source, rng: random.Random) -> str | None:
    bases = [i for i, t in enumerate(src.tokens) if t[0] == "IntegerBase"]
    idx = _pick(rng, [i for i in bases if i + 1 < len(src.tokens)])
    if idx is None:
        return None
    _, digits, off = src.tokens[idx + 1]
    return src.replace(off, digits, "")


def _misspell_system_task(src: _Source, rng: random.Random) -> str | None:
    tok = _pick(rng, src.of_kind("SystemIdentifier"))
    if tok is None or len(tok[1]) < 4:
        return None
    return src.replace(tok[2], tok[1], tok[1][:2] + tok[1][3:])


def _output_nets(src: _Source) -> list[str]:
    try:
        outputs = {p.name for p in dut_ports(src.task.rtl_files, src.task.dut_module_name)
                   if p.direction == "output"}
    except ValueError:
        return []
    nets = []
    for port, conn in src.dut_connections():
        expr = str(conn.expr).strip() if getattr(conn, "expr", None) else ""
        if port in outputs and re.fullmatch(r"[A-Za-z_]\w*", expr):
            nets.append(expr)
    return nets


def _drive_output(procedural: bool) -> Operator:
    def op(src: _Source, rng: random.Random) -> str | None:
        net, end = _pick(rng, _output_nets(src)), src.end_of_top()
        if net is None or end is None:
            return None
        stmt = f"initial {net} = '0;\n" if procedural else f"assign {net} = '0;\n"
        return src.text[:end] + stmt + src.text[end:]
    return op


def _reg_to_wire(src: _Source, rng: random.Random) -> str | None:
    tok = _pick(rng, src.of_kind("RegKeyword", "LogicKeyword"))
    return src.replace(tok[2], tok[1], "wire") if tok else None


def _call_missing_task(src: _Source, rng: random.Random) -> str | None:
    tok = _pick(rng, src.of_kind("BeginKeyword"))
    return src.replace(tok[2], tok[1], "begin llm4cov_missing_task();") if tok else None


def _identifier_everywhere(replacement: Callable[[str, random.Random], str]) -> Operator:
    def op(src: _Source, rng: random.Random) -> str | None:
        modules = {d.name for d in module_decls([*src.task.rtl_files])} | {
            d.name for d in module_decls([SourceFile(name="tb.sv", content=src.text)])}
        name = _pick(rng, sorted({t[1] for t in src.of_kind("Identifier")} - modules))
        if name is None:
            return None
        new = replacement(name, rng)
        return re.sub(rf"(?<![\w$.`']){re.escape(name)}(?![\w$])", new, src.text)
    return op


def _oversized_literal(src: _Source, rng: random.Random) -> str | None:
    sizes = [(i, t) for i, t in enumerate(src.tokens[:-1])
             if t[0] == "IntegerLiteral" and src.tokens[i + 1][0] == "IntegerBase"]
    found = _pick(rng, sizes)
    return src.replace(found[1][2], found[1][1], "1") if found else None


def _drop_timescale(src: _Source, rng: random.Random) -> str | None:
    text = re.sub(r"^\s*`timescale[^\n]*\n", "", src.text, count=1, flags=re.MULTILINE)
    return text if text != src.text else None


def _add_unused_signal(src: _Source, rng: random.Random) -> str | None:
    end = src.end_of_top()
    return None if end is None else src.text[:end] + "wire [3:0] llm4cov_unused;\n" + src.text[end:]


OPERATORS: dict[str, Operator] = {
    "drop_semicolon": _drop_token(("Semicolon",)),
    "drop_paren": _drop_token(("CloseParenthesis",)),
    "drop_token": _drop_token(None),
    "duplicate_token": _duplicate_token,
    "swap_tokens": _swap_tokens,
    "drop_line": _drop_line,
    "misspell_identifier": _misspell_identifier,
    "misspell_keyword": _misspell_keyword,
    "wrong_port_name": _wrong_port_name,
    "extra_port": _extra_port,
    "drop_declaration": _drop_declaration,
    "illegal_digit": _illegal_digit,
    "missing_digits": _missing_digits,
    "misspell_system_task": _misspell_system_task,
    "drive_output_procedural": _drive_output(procedural=True),
    "drive_output_continuous": _drive_output(procedural=False),
    "reg_to_wire": _reg_to_wire,
    "call_missing_task": _call_missing_task,
    "keyword_as_identifier": _identifier_everywhere(
        lambda _name, rng: rng.choice(["sequence", "property", "do", "ref", "bit"])),
    # edits that keep a testbench legal (controls for false rejections)
    "rename_everywhere": _identifier_everywhere(lambda name, _rng: name + "_renamed"),
    "oversized_literal": _oversized_literal,
    "drop_timescale": _drop_timescale,
    "add_unused_signal": _add_unused_signal,
}

#: Operators that make a typical testbench illegal (for ``sim_throughput.py``'s set).
BREAKING = ("drop_semicolon", "misspell_identifier", "wrong_port_name", "extra_port",
            "drop_declaration", "illegal_digit", "misspell_system_task",
            "drive_output_procedural", "call_missing_task", "misspell_keyword")

