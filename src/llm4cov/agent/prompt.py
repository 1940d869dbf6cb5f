"""Prompts for the memoryless agent: the state ``s_t = (repo, x_t, o_t)`` as chat messages.

The model sees the full repository (spec + RTL), the instruction, and, after the first
round, the current full testbench and its observation (status, coverage summary,
uncovered items, log). Earlier rounds are never shown (paper, "memoryless").

Every text of a testbench, a model or a task reaches the prompt through the prompt
rules of :mod:`llm4cov.util.escape` (a fence it cannot close, one line that starts no
block, a code span, prose that starts no heading), so only this module writes the
prompt's ``##`` sections; for benign texts the prompt is what it always was.
"""

from __future__ import annotations

from pathlib import Path

from llm4cov.sim.model.functional import functional_lines
from llm4cov.sim.model.observation import CoverageReport, Observation, overall_percent
from llm4cov.tasks.model import Task
from llm4cov.util.escape import md_code, prompt_block, prompt_line, prompt_prose

SYSTEM_PROMPT = (
    "You are an expert hardware verification engineer. You write SystemVerilog stimulus "
    "testbenches that reach maximum code coverage of a design under test (DUT) when "
    "simulated with Verilator. You always answer with one complete testbench in a single "
    "```systemverilog code block."
)

SYNTAX_RULES_FILE = Path(__file__).with_name("syntax_rules.md")


def syntax_rules() -> str:
    """The expert SystemVerilog rules used only at generation time (paper, Stage 0)."""
    return SYNTAX_RULES_FILE.read_text(encoding="utf-8").strip()


def render_repo(task: Task) -> str:
    """The repository as prompt text: spec files, then RTL files, each fenced."""
    parts = []
    for f in task.spec_files:
        parts.append(f"### Spec file {md_code(f.name)}\n{prompt_block(f.content, 'text')}")
    for f in task.rtl_files:
        parts.append(f"### RTL file {md_code(f.name)}\n"
                     f"{prompt_block(f.content, 'systemverilog')}")
    return "\n\n".join(parts)


def render_observation(obs: Observation, task: Task) -> str:
    """The observation as feedback text: status, coverage per metric, targets, misses, log."""
    lines = [f"Status: {obs.status.value} (end: {obs.end_reason.value})"]
    if obs.coverage is not None:
        rep = obs.coverage
        per = ", ".join(
            f"{m} {c.covered}/{c.total} ({c.pct:.1f}%)" for m, c in rep.metrics.items()
        )
        lines.append(f"Coverage of {md_code(rep.dut_hier)}: overall {rep.overall:.2f}% - {per}")
        lines.extend(_instance_lines(rep))
        if not obs.sim_pass:
            lines.append("(The simulation did not pass, so this coverage scores 0.)")
    lines.extend(functional_lines(obs.functional))
    for t in task.targets:
        lines.append(f"Target: {prompt_line(t.metric)} coverage of {md_code(t.inst_name)} "
                     f">= {t.target_percentage}%")
    if obs.tb_error_count:
        lines.append(f"The testbench reported {obs.tb_error_count} $error/assertion failure(s).")
    if obs.tb_error_prints:
        lines.append(f"The testbench printed {obs.tb_error_prints} line(s) starting with "
                     "ERROR/FAIL (its own check failed; the coverage figure is unchanged).")
    lines.extend(f"Note: {prompt_line(n)}" for n in obs.notes)
    if obs.uncovered:
        lines.append("Uncovered items (most important first):")
        lines.extend(f"- {prompt_line(u.render())}" for u in obs.uncovered)
    if obs.log.strip():
        lines.append("Log:\n" + prompt_block(obs.log, "text"))
    return "\n".join(lines)


#: At most this many instances are listed in the feedback (lowest coverage first).
MAX_INSTANCE_LINES = 12


def _instance_lines(rep: CoverageReport) -> list[str]:
    """Per-instance coverage (each instance's own points), lowest first, when the DUT
    has more than one instance: where the stimulus is missing."""
    if len(rep.per_instance) < 2:
        return []
    scored = sorted((overall_percent(m), inst) for inst, m in rep.per_instance.items())
    out = ["Coverage per instance (its own points; IMC per-instance view):"]
    out += [f"- {md_code(inst)}: {pct:.1f}%" for pct, inst in scored[:MAX_INSTANCE_LINES]]
    if len(scored) > MAX_INSTANCE_LINES:
        out.append(f"- ... {len(scored) - MAX_INSTANCE_LINES} more instances")
    return out


def build_messages(
    task: Task,
    testbench: str | None = None,
    observation: Observation | None = None,
    rules: str | None = None,
) -> list[dict[str, str]]:
    """Chat messages for state ``(task, testbench, observation)``.

    ``testbench=None`` is the initial state ``s_0`` (direct inference). ``rules`` is an
    optional extra section (generation-time syntax rules) that callers must not store
    in training data.
    """
    sections = [f"## Task\n{prompt_prose(task.instruction)}",
                f"## Repository\n{render_repo(task)}"]
    if testbench is not None:
        shown = prompt_block(testbench, "systemverilog") if testbench.strip() else (
            "(none: the previous answer contained no testbench code block)"
        )
        sections.append(f"## Current testbench\n{shown}")
        if observation is not None:
            sections.append(
                f"## Simulation result of the current testbench\n"
                f"{render_observation(observation, task)}"
            )
        ask = (
            "Write an improved, complete testbench that fixes any error above and covers "
            "the uncovered items. Regenerate the whole file; do not send a diff."
        )
    else:
        ask = "Write the complete testbench."
    if rules:
        sections.append(f"## SystemVerilog rules\n{rules}")
    sections.append(
        f"## Answer\n{ask} Instantiate `{task.dut_module_name}` as "
        f"`{task.dut_instance_name}`, end with $finish, and reply with one "
        "```systemverilog code block."
    )
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "\n\n".join(sections)},
    ]
