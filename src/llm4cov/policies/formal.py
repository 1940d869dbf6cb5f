"""The ``formal`` policy: random start, then formal closure of the holes the feedback names.

A teacher that reads the agent's state as data (``GenerationRequest.state``, the same
``s_t`` a model sees rendered as its prompt): with no current testbench (the first
round) it answers with the built-in random testbench (``random_stimulus.py``);
afterwards it takes the current testbench and the uncovered items of its observation
(the list the feedback shows), runs the formal analysis on them
(``llm4cov.formal.analyze``: witnesses for the reachable ones) and answers with the
current testbench plus one replay phase per witness trace (``formal/stimulus.py``).
With nothing reachable it answers the current testbench unchanged. It needs no model
server, only the ``formal`` extra.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

from llm4cov.policies.base import Generation, GenerationRequest
from llm4cov.policies.random_stimulus import RandomStimulusPolicy, Style
from llm4cov.sim.observation import UncoveredItem

POLICY_PROVE_BUDGET_S = 20.0
"""Prove budget per analysis (seconds): smaller than the CLI's, the policy runs often."""


VERDICTS = ("reached", "unreachable", "unknown", "error")
"""Goal verdicts of a formal analysis (``error``: the job that would decide it failed)."""


def verdicts(result) -> dict[str, Any]:
    """The annotation of one analysis (:class:`llm4cov.formal.closure.FormalResult`):
    counts of goals per verdict (:data:`VERDICTS`), ``job_errors`` (one line per failed
    SBY job) and every proven-unreachable item (``file``, ``line``, ``kind``, ``item``,
    ``goal``, ``metric``), which the reports mark UNR and the bench leaves out of the
    separate "unreachable excluded" figure."""
    return {
        **{status: result.count(status) for status in VERDICTS},
        "job_errors": list(result.errors),
        "unreachable_items": [
            {"file": g.item.file, "line": g.item.line, "kind": g.item.kind,
             "item": g.item.detail, "goal": g.what, "metric": g.metric}
            for g in result.goals if g.status == "unreachable"],
    }


class FormalPolicy:
    """The ``formal`` policy (see the module docstring); ``config`` sets the formal
    budgets (:class:`llm4cov.formal.FormalConfig`).

    Raises (from :meth:`generate`):
        FormalToolError: the formal tools are not installed.
    """

    def __init__(self, length: int = 200, exhaustive_bits: int = 10, config=None,
                 style: Style = "compact") -> None:
        from llm4cov.formal import FormalConfig

        self.random = RandomStimulusPolicy(length, exhaustive_bits, style)
        self.name = "formal" if style == "compact" else f"formal-{style}"
        self.config = config or FormalConfig(prove_budget_s=POLICY_PROVE_BUDGET_S)
        self._tried: dict[str, set[tuple[str, int, str, str]]] = {}
        self._lock = threading.Lock()

    def _new_items(self, task, items: list[UncoveredItem]) -> list[UncoveredItem]:
        """``items`` not analyzed before for this design (a hole the formal run could not
        reach, or whose replay missed, is not retried in later rounds or samples)."""
        key = hashlib.sha256(repr([(f.name, f.content) for f in task.rtl_files]).encode()
                             ).hexdigest()
        with self._lock:
            tried = self._tried.setdefault(key, set())
            fresh = [i for i in items if (i.kind, i.line, i.file, i.detail) not in tried]
            tried.update((i.kind, i.line, i.file, i.detail) for i in fresh)
        return fresh

    def generate(self, request: GenerationRequest) -> Generation:
        from llm4cov.formal.closure import analyze, design_io
        from llm4cov.formal.stimulus import Phase, closing_testbench

        start = time.monotonic()
        state = request.state
        if state.testbench is None:
            first = self.random.generate(request)
            return Generation(text=first.text, model=self.name, latency_s=first.latency_s)
        tb = state.testbench if state.testbench.endswith("\n") else state.testbench + "\n"
        shown = state.observation.uncovered if state.observation is not None else []
        items = self._new_items(request.task, list(shown))
        note = "// llm4cov formal: no new holes in the feedback\n"
        answer, annotations = tb, {}
        if items:
            seed = request.seed if request.seed is not None else (request.params.seed or 0)
            try:
                design = design_io(request.task)
                result = analyze(request.task, items, self.config)
                phases = [Phase(f"trace {n}", steps) for n, steps in enumerate(result.traces)]
                how = "unchanged"
                if phases:
                    answer, how = closing_testbench(tb, request.task, design.ports,
                                                    design.clock, phases, seed,
                                                    self.random.style)
            except ValueError as exc:
                return Generation(text=f"formal policy: {exc}", model=self.name,
                                  latency_s=time.monotonic() - start)
            note = (f"// llm4cov formal: {result.count('reached')} reached, "
                    f"{result.count('unreachable')} proven unreachable, "
                    f"{result.count('unknown')} unknown of {len(result.goals)} goals ({how})\n")
            note += "".join(f"// llm4cov formal: job error: {' '.join(e.split())[:300]}\n"
                            for e in result.errors)
            annotations = {"formal": verdicts(result)}
        return Generation(text=f"```systemverilog\n{note}{answer}```\n", model=self.name,
                          latency_s=time.monotonic() - start, annotations=annotations)

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "length": self.random.length,
                "exhaustive_bits": self.random.exhaustive_bits, "style": self.random.style,
                "cover_depth": self.config.cover_depth, "prove_depth": self.config.prove_depth}
