"""The built-in non-LLM baseline: a clock/reset-aware constrained-random testbench.

From the DUT's ports (pyslang, default parameters) it writes a testbench that
- runs every clock-like input (``*clk*``/``*clock*``, 1 bit) as a free-running clock,
- holds every reset-like input (``*rst*``/``*reset*``, 1 bit; active low when the name
  ends in ``n``/``_n``/``b``/``_l`` or starts with ``n``) active for two steps, releases
  it, and pulses it once more two thirds of the way through,
- drives the other inputs exhaustively when the design has no clock and at most
  ``exhaustive_bits`` input bits, and otherwise with ``length`` random vectors (all
  zeros and all ones first), generated here from ``seed`` so the stimulus does not
  depend on the simulator's random generator,
- applies each vector at the falling clock edge (``#10`` without a clock), then
  calls ``$finish``.
"""

from __future__ import annotations

import random
import re
import time
from typing import Any

from llm4cov.policies.base import Generation, GenerationRequest
from llm4cov.tasks.hdl import Port, dut_ports
from llm4cov.tasks.model import Task

_CLOCK = re.compile(r"clk|clock", re.IGNORECASE)
_RESET = re.compile(r"rst|reset", re.IGNORECASE)
_ACTIVE_LOW = re.compile(r"(n|_n|b|_l)$|^n", re.IGNORECASE)
_TIMESCALE = re.compile(r"^\s*`timescale\s+[^\n]+", re.MULTILINE)


def _decl(kind: str, port: Port) -> str:
    signed = " signed" if port.signed else ""
    rng = f" [{port.width - 1}:0]" if port.width > 1 else ""
    return f"{kind}{signed}{rng} {port.name}"


def _reset_value(port: Port, active: bool) -> str:
    low = bool(_ACTIVE_LOW.search(port.name))
    return "1'b0" if active == low else "1'b1"


def random_testbench(
    task: Task, seed: int = 0, length: int = 200, exhaustive_bits: int = 10
) -> str:
    """A stimulus testbench for ``task``'s DUT (see the module docstring for the recipe).

    Raises:
        ValueError: the DUT module is not declared in the task's RTL.
    """
    ports = dut_ports(task.rtl_files, task.dut_module_name)
    inputs = [p for p in ports if p.direction == "input"]
    clocks = [p for p in inputs if p.width == 1 and _CLOCK.search(p.name)]
    resets = [p for p in inputs if p.width == 1 and _RESET.search(p.name) and p not in clocks]
    data = [p for p in inputs if p not in clocks and p not in resets]
    rng = random.Random(seed)

    lines: list[str] = []
    ts = next((m.group(0).strip() for f in task.rtl_files if (m := _TIMESCALE.search(f.content))),
              None)
    if ts:
        lines.append(ts)
    lines.append("module tb;")
    for p in inputs:
        lines.append(f"  {_decl('logic', p)} = '0;")
    for p in ports:
        if p.direction != "input":
            lines.append(f"  {_decl('wire', p)};")
    conns = ",\n".join(f"    .{p.name}({p.name})" for p in ports)
    lines.append(f"  {task.dut_module_name} {task.dut_instance_name} (\n{conns}\n  );")
    for i, clk in enumerate(clocks):
        lines.append(f"  always #{5 + 2 * i} {clk.name} = ~{clk.name};")

    step = f"@(negedge {clocks[0].name});" if clocks else "#10;"
    bits = sum(p.width for p in data)
    target = "{" + ", ".join(p.name for p in data) + "}" if data else ""

    body: list[str] = []
    body += [f"    {r.name} = {_reset_value(r, True)};" for r in resets]
    body += [f"    repeat (2) {step}"]
    body += [f"    {r.name} = {_reset_value(r, False)};" for r in resets]
    if data and not clocks and bits <= exhaustive_bits:
        body.append(f"    for (int i = 0; i < {1 << bits}; i++) begin")
        body.append(f"      {target} = {bits}'(i);")
        body.append(f"      {step}")
        body.append("    end")
        body.append(f"    {target} = '0; {step}")
    elif data:
        vectors = [0, (1 << bits) - 1] + [rng.getrandbits(bits) for _ in range(max(0, length - 2))]
        pulse_at = (2 * len(vectors)) // 3
        for n, v in enumerate(vectors):
            if resets and n == pulse_at:
                body += [f"    {r.name} = {_reset_value(r, True)};" for r in resets]
                body.append(f"    {step}")
                body += [f"    {r.name} = {_reset_value(r, False)};" for r in resets]
            body.append(f"    {target} = {bits}'h{v:x}; {step}")
    else:
        body.append(f"    repeat ({length}) {step}")
    body.append(f"    repeat (2) {step}")
    body.append("    $finish;")
    lines += ["  initial begin", *body, "  end", "endmodule", ""]
    return "\n".join(lines)


class RandomStimulusPolicy:
    """The ``random`` policy: needs no model server; each request gets a new seed.

    The seed is ``request.seed`` (or ``params.seed``, or 0), so samples differ and runs
    are reproducible.
    """

    name = "random"

    def __init__(self, length: int = 200, exhaustive_bits: int = 10) -> None:
        self.length = length
        self.exhaustive_bits = exhaustive_bits

    def generate(self, request: GenerationRequest) -> Generation:
        start = time.monotonic()
        seed = request.seed if request.seed is not None else (request.params.seed or 0)
        try:
            tb = random_testbench(request.task, seed, self.length, self.exhaustive_bits)
        except ValueError as exc:
            return Generation(text=f"random policy: {exc}", model=self.name,
                              latency_s=time.monotonic() - start)
        return Generation(
            text=f"```systemverilog\n{tb}```\n",
            model=self.name,
            latency_s=time.monotonic() - start,
        )

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "length": self.length,
                "exhaustive_bits": self.exhaustive_bits}
