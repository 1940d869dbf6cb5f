"""What a finished agent run should tell its user, as data (issue 41, "never silent").

A run can end with exit code 0 and a figure that hides why it is low: the stimulus never
moved the design, the policy repeated itself, a formal job failed. Each such finding is
a :class:`RunWarning` (a kind, the message and the lever to pull); ``gen`` prints them on
stderr as ``warning:`` lines and writes them to ``run.json`` (``warnings``) and
``coverage.md``. The figures themselves are unchanged.

Kinds (:data:`KINDS`):

- ``not_exercised``: the best round's toggle coverage is below
  :data:`LOW_TOGGLE_PERCENT` (a design whose inputs and registers barely moved: held in
  reset, idle bus, no start pulse);
- ``fsm_stuck``: with FSM coverage on (``--fsm``), the best round covered at most one
  FSM point (states and arcs together): its state machines never left their reset state;
- ``unchanged``: a round's testbench is the round before's, byte for byte (the policy
  did not act on the feedback);
- ``formal_job_failed``: a formal job of the ``formal`` policy failed (its goals are
  ``error``, not classified).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from llm4cov.agent.loop import AgentRun
from llm4cov.util.escape import md_text

WarningKind = Literal["not_exercised", "fsm_stuck", "unchanged", "formal_job_failed"]
KINDS: tuple[WarningKind, ...] = ("not_exercised", "fsm_stuck", "unchanged",
                                  "formal_job_failed")
LOW_TOGGLE_PERCENT = 10.0
"""Toggle coverage (percent) under which the stimulus is said not to exercise the design."""


@dataclass(frozen=True)
class RunWarning:
    """One finding: its ``kind``, the ``message`` (for people) and the ``lever`` to pull."""

    kind: WarningKind
    message: str
    lever: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_warnings(run: AgentRun) -> list[RunWarning]:
    """The warnings of a finished run, in :data:`KINDS` order (empty: nothing to say)."""
    found = _exercise(run) + _unchanged(run) + _formal(run)
    return sorted(found, key=lambda w: KINDS.index(w.kind))


def _exercise(run: AgentRun) -> list[RunWarning]:
    if not run.rounds:
        return []
    obs = run.best.observation
    rep = obs.coverage
    if rep is None:
        return []
    out = []
    toggle = rep.metrics.get("toggle")
    if toggle is not None and toggle.total and toggle.pct < LOW_TOGGLE_PERCENT:
        out.append(RunWarning(
            "not_exercised",
            f"the best testbench (round {run.best_round + 1}) toggled {toggle.pct:.1f}% of "
            f"the DUT's signal bits ({toggle.covered}/{toggle.total}): the stimulus barely "
            "exercised the design",
            "check that the DUT leaves reset and sees its start/enable/bus transactions; "
            "run more rounds (--rounds) or another policy (--model)"))
    fsm = rep.metrics.get("fsm")
    if fsm is not None and fsm.total > 1 and fsm.covered <= 1:
        out.append(RunWarning(
            "fsm_stuck",
            f"the best testbench (round {run.best_round + 1}) covered {fsm.covered} of "
            f"{fsm.total} FSM states and arcs: the state machines never left their reset "
            "state",
            "drive the inputs that start the FSM (start/valid/command), after reset"))
    return out


def _unchanged(run: AgentRun) -> list[RunWarning]:
    out = []
    for before, now in zip(run.rounds, run.rounds[1:], strict=False):
        if now.testbench is not None and now.testbench == before.testbench:
            out.append(RunWarning(
                "unchanged",
                f"round {now.round + 1} repeated round {before.round + 1}'s testbench "
                "unchanged: the policy did not act on the feedback",
                "use a policy that reads the feedback (a model, --model formal), or fewer "
                "rounds"))
    return out


def _formal(run: AgentRun) -> list[RunWarning]:
    out = []
    for r in run.rounds:
        formal = r.annotations.get("formal") or {}
        for error in formal.get("job_errors", ()):
            out.append(RunWarning(
                "formal_job_failed",
                f"round {r.round + 1}: formal: {formal.get('error', 0)} goals not "
                f"classified, a job failed: {' '.join(str(error).split())}",
                "see docs/formal.md (unsupported constructs); the goals count as error, "
                "not unknown"))
    return out


def warnings_markdown(warnings: list[RunWarning]) -> str:
    """A ``## Warnings`` section for ``coverage.md`` (empty text when there are none),
    each line escaped as Markdown prose (:func:`llm4cov.util.escape.md_text`)."""
    if not warnings:
        return ""
    lines = [f"- {md_text(w.message)} (lever: {md_text(w.lever)})" for w in warnings]
    return "\n## Warnings\n\n" + "\n".join(lines) + "\n"
