"""The ``formal`` policy: random start, then formal closure of the holes.

A teacher that reads the agent's state as data (``GenerationRequest.state``, the same
``s_t`` a model sees rendered as its prompt): with no current testbench (the first
round) it answers with the built-in random testbench (``random_stimulus.py``).

In a later round ``r`` it starts from the ``random`` policy's testbench of the same
round (as long as ``random``'s: ``length * 2**r`` cycles, the register-bus style where
the DUT has a bus) with the witness phases of its earlier rounds replayed, when the
current testbench is one of its own answers; otherwise (a testbench from elsewhere)
from the current testbench. It simulates that start once with the whole hole list
(``Observation.uncovered`` without the feedback's limit: typed items, file, line,
kind), runs the formal analysis on the items it has not tried before for this design
(``llm4cov.formal.analyze``: witnesses for the reachable ones) and answers with the
start plus one replay phase per witness trace (``formal/stimulus.py``), continued
from the state where that answer's simulation ends (``formal/continuation.py``:
cover jobs from the dumped state for the holes still open, this round's and earlier
ones, their witnesses appended; the annotation's ``continued`` counts the goals they
covered). Where that simulation fails it falls back to the current testbench and the
items the feedback shows. It needs no model server, only the ``formal`` extra.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

from llm4cov.policies.base import Generation, GenerationRequest
from llm4cov.policies.random_stimulus import RandomStimulusPolicy, Style
from llm4cov.sim.model.observation import ItemKey, UncoveredItem

POLICY_PROVE_BUDGET_S = 20.0
"""Prove budget per analysis (job seconds, :mod:`llm4cov.formal.tools`): smaller than the
CLI's, the policy runs often."""

POLICY_ESCALATE_BUDGET_S = 0.0
"""Job seconds per analysis for deeper cover jobs from reset (depth doubled from 30 up to
120 cycles) on the goals still unknown after the prove jobs: none, the continuation
searches deeper from the simulated state instead (on ac97 the 30 s these jobs had
reached 3 goals, 60 s of continuation jobs 66: docs/results/realip.md)."""

POLICY_CONTINUE_STEPS = 3
"""Continuation steps per answer: cover jobs from the state the simulated answer ends
in (``formal/continuation.py``), for the holes it leaves open; each step costs one
more simulation of the answer."""

POLICY_CONTINUE_BUDGET_S = 60.0
"""Seconds of the continuation's cover jobs per answer (its simulations not counted)."""


VERDICTS = ("reached", "unreachable", "unknown", "error")
"""Goal verdicts of a formal analysis (``error``: the job that would decide it failed)."""


def verdicts(result) -> dict[str, Any]:
    """The annotation of one analysis (:class:`llm4cov.formal.closure.FormalResult`):
    counts of goals per verdict (:data:`VERDICTS`), ``job_errors`` (one line per failed
    SBY job) and every proven-unreachable item (``file``, ``line``, ``kind``, ``item``,
    ``goal``, ``metric`` and its construct ``typed``:
    :meth:`~llm4cov.sim.model.exclusions.ProvenUnreachable.annotation`), which the
    reports mark UNR and the bench leaves out of the separate "unreachable excluded"
    figure."""
    from llm4cov.sim.model.exclusions import ProvenUnreachable

    return {
        **{status: result.count(status) for status in VERDICTS},
        "job_errors": list(result.errors),
        "unreachable_items": [ProvenUnreachable.of(g.item, g.what, g.metric).annotation()
                              for g in result.goals if g.status == "unreachable"],
    }


class FormalPolicy:
    """The ``formal`` policy (see the module docstring); ``config`` sets the formal
    budgets (:class:`llm4cov.formal.FormalConfig`).

    Raises (from :meth:`generate`):
        FormalToolError: the formal tools are not installed.
    """

    def __init__(self, length: int = 200, exhaustive_bits: int = 10, config=None,
                 style: Style = "compact", sim_config=None) -> None:
        from llm4cov.formal import FormalConfig

        self.random = RandomStimulusPolicy(length, exhaustive_bits, style)
        self.name = "formal" if style == "compact" else f"formal-{style}"
        self.config = config or FormalConfig(prove_budget_s=POLICY_PROVE_BUDGET_S,
                                             escalate_budget_s=POLICY_ESCALATE_BUDGET_S,
                                             continue_steps=POLICY_CONTINUE_STEPS,
                                             continue_budget_s=POLICY_CONTINUE_BUDGET_S)
        self.sim_config = sim_config
        """:class:`~llm4cov.sim.config.SimConfig` of the start's simulation (default:
        the evaluator's defaults; its ``feedback_limit`` is lifted)."""
        self._tried: dict[str, set[ItemKey]] = {}
        """Per design: the items analyzed, by :attr:`UncoveredItem.key` (never wording)."""
        self._phases: dict[str, list] = {}
        self._settled: dict[str, set[ItemKey]] = {}
        """Per design: items proven unreachable or whose job failed (no continuation)."""
        self._mine: set[str] = set()
        self._lock = threading.Lock()

    @staticmethod
    def _key(task) -> str:
        return hashlib.sha256(repr([(f.name, f.content) for f in task.rtl_files]).encode()
                              ).hexdigest()

    @staticmethod
    def _digest(text: str) -> str:
        return hashlib.sha256(text.strip().encode("utf-8", "surrogatepass")).hexdigest()

    def _new_items(self, task, items: list[UncoveredItem]) -> list[UncoveredItem]:
        """``items`` not analyzed before for this design (a hole the formal run could not
        reach, or whose replay missed, is not retried in later rounds or samples)."""
        key = self._key(task)
        with self._lock:
            tried = self._tried.setdefault(key, set())
            fresh = [i for i in items if i.key not in tried]
            tried.update(i.key for i in fresh)
        return fresh

    def _untry(self, task, items: list[UncoveredItem]) -> None:
        """Forget ``items`` (left out by the goal budget: tried again in a later round)."""
        with self._lock:
            tried = self._tried.setdefault(self._key(task), set())
            tried.difference_update(i.key for i in items)

    def _answer(self, text: str) -> str:
        with self._lock:
            self._mine.add(self._digest(text))
        return f"```systemverilog\n{text}```\n"

    def _whole_list(self, task, testbench: str, seed: int | None):
        """The observation of ``testbench`` with every uncovered item listed."""
        from dataclasses import replace

        from llm4cov.sim.config import SimConfig
        from llm4cov.sim.evaluator import Evaluator

        cfg = self.sim_config or SimConfig()
        cfg = replace(cfg, feedback_limit=1_000_000,
                      **({"seed": seed} if seed is not None else {}))
        return Evaluator(cfg).evaluate(task, testbench)

    def _continue(self, task, answer: str, holes: list[UncoveredItem], result,
                  seed: int | None, clock: str | None) -> tuple[str, list[str], int]:
        """Continue ``answer`` from the state its simulation ends in
        (:func:`llm4cov.formal.continuation.continue_closure`) for ``holes`` (the
        start's hole list: this analysis' open goals and those of earlier rounds, whose
        start state was another), less the items proven unreachable or whose job
        failed. Its continuation phases are not replayed in later rounds (they continue
        this start only). Folds the covered goals into ``result`` (when given).
        Returns the answer, comment lines and how many goals its phases covered."""
        from dataclasses import replace

        from llm4cov.formal.continuation import apply, continue_closure
        from llm4cov.sim.config import SimConfig

        if not self.config.continue_steps or clock is None:
            return answer, [], 0
        with self._lock:
            settled = self._settled.setdefault(self._key(task), set())
            if result is not None:
                settled.update(g.item.key for g in result.goals
                               if g.status in ("unreachable", "error"))
            apart = set(settled)
        holes = [i for i in holes if i.key not in apart]
        if not holes:
            return answer, [], 0
        cfg = self.sim_config or SimConfig()
        cfg = replace(cfg, **({"seed": seed} if seed is not None else {}))
        cont = continue_closure(task, answer, holes, cfg, self.config, style=self.random.style)
        lines: list[str] = []
        if result is not None:
            apply(result, cont)
        elif cont.phases or cont.errors:
            lines = [f"continuation: {len(cont.phases)} phases from the simulated state, "
                     f"{len(cont.covered())} goals covered", *cont.notes,
                     *(f"job error: {e}" for e in cont.errors)]
        return cont.testbench, lines, len(cont.covered())

    def generate(self, request: GenerationRequest) -> Generation:
        from llm4cov.formal.closure import analyze, design_io
        from llm4cov.formal.stimulus import Phase, closing_testbench

        start = time.monotonic()
        state = request.state
        if state.testbench is None:
            first = self.random.generate(request)
            text = first.text
            if text.startswith("```systemverilog\n"):
                with self._lock:
                    self._mine.add(self._digest(
                        text.removeprefix("```systemverilog\n").removesuffix("```\n")))
            return Generation(text=text, model=self.name, latency_s=first.latency_s)
        tb = state.testbench if state.testbench.endswith("\n") else state.testbench + "\n"
        obs = state.observation
        shown = list(obs.uncovered) if obs is not None else []
        truncated = obs is not None and any(n.endswith("more uncovered items not listed")
                                            for n in obs.notes)
        # items read back from their wording (an observation stored before items were
        # typed): the goals come from a fresh, typed hole list
        truncated = truncated or any(i.typed.from_text for i in shown)
        seed = request.seed if request.seed is not None else (request.params.seed or 0)
        key = self._key(request.task)
        with self._lock:
            mine = self._digest(state.testbench) in self._mine
            earlier = list(self._phases.get(key, []))
        base, start_how, annotations = tb, "current testbench", {}
        try:
            design = design_io(request.task)
            if mine:
                base = self.random.testbench(request)
                start_how = f"random round {state.round + 1} start"
                if earlier:
                    base, _ = closing_testbench(base, request.task, design.ports,
                                                design.clock, earlier, seed,
                                                self.random.style)
                    start_how += f" + {len(earlier)} earlier traces"
            if mine or truncated:
                full = self._whole_list(request.task, base, obs.seed if obs else None)
                if full.sim_pass:
                    shown = list(full.uncovered)
                else:
                    base, start_how = tb, "current testbench (the start did not simulate)"
            items = self._new_items(request.task, shown)
            lead = f"{start_how}; " if base is not tb else ""
            note = (f"// llm4cov formal: {lead}no new holes\n" if lead
                    else "// llm4cov formal: no new holes in the feedback\n")
            answer = base
            if not items:
                answer, lines, continued = self._continue(
                    request.task, answer, shown, None, obs.seed if obs else None,
                    design.clock)
                if continued or lines:
                    note += "".join(f"// llm4cov formal: {' '.join(n.split())[:300]}\n"
                                    for n in lines)
            if items:
                result = analyze(request.task, items, self.config)
                self._untry(request.task, [g.item for g in result.goals if g.status == "unknown"
                                           and g.reason.startswith("goal budget")])
                phases = [Phase(f"trace {n + len(earlier)}", steps)
                          for n, steps in enumerate(result.traces)]
                how = "unchanged"
                if phases:
                    answer, how = closing_testbench(base, request.task, design.ports,
                                                    design.clock, phases, seed,
                                                    self.random.style)
                    if how == "merged":
                        with self._lock:
                            self._phases.setdefault(key, []).extend(phases)
                answer, _, continued = self._continue(request.task, answer, shown, result,
                                                      obs.seed if obs else None, design.clock)
                if continued:
                    how += f", {continued} goals covered by continuation phases"
                note = (f"// llm4cov formal: {lead}{result.count('reached')} reached, "
                        f"{result.count('unreachable')} proven unreachable, "
                        f"{result.count('unknown')} unknown of {len(result.goals)} goals "
                        f"({how})\n")
                note += "".join(f"// llm4cov formal: note: {' '.join(n.split())[:300]}\n"
                                for n in result.notes)
                note += "".join(f"// llm4cov formal: job error: {' '.join(e.split())[:300]}\n"
                                for e in result.errors)
                annotations = {"formal": {**verdicts(result), "continued": continued}}
        except ValueError as exc:
            return Generation(text=f"formal policy: {exc}", model=self.name,
                              latency_s=time.monotonic() - start)
        return Generation(text=self._answer(note + answer), model=self.name,
                          latency_s=time.monotonic() - start, annotations=annotations)

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "length": self.random.length,
                "exhaustive_bits": self.random.exhaustive_bits, "style": self.random.style,
                "cover_depth": self.config.cover_depth, "prove_depth": self.config.prove_depth,
                "continue_steps": self.config.continue_steps}
