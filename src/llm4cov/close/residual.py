"""Every point the merged regression leaves uncovered, classified by cause
(:class:`llm4cov.close.model.Cause`), and the closure figure.

A missed point is, in this order of precedence:

1. ``parameter_constant``: :func:`llm4cov.sim.model.coverage.constant_dead` (the condition
   reads only parameters and the other outcome was seen in the same instance; the more
   useful explanation: other parameters reach it), or an expression row that needs a
   parameter at the other value (:func:`parameter_row`), also when formal proved it;
2. ``proven_unreachable``: a formal goal standing for it was proven by k-induction
   (depth ``k``) in any analysis of the run (a proof is about the module's source, so
   it holds in every instance and for every test);
3. ``tool_error``: the formal job that would have decided it failed;
4. ``not_reached``: everything else, with what was tried: the random lengths and
   tests, and the formal verdict (the depth explored), or why formal did not look at it.

Points an exclusion rule matches are ``excluded`` (whether hit or not they are out of
every count, as in one run; the missed ones are listed).

Closure = (covered + proven unreachable) / total, per metric (a point is proven when
formal proved it, whatever its listed cause: ``ResidualPoint.proven``), averaged over the metrics
as the headline overall is (:func:`llm4cov.sim.model.observation.overall_percent`); the
headline stays the plain merged coverage.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import fields

from llm4cov.close.model import Cause, GoalVerdict, ResidualPoint
from llm4cov.sim.model.construct import Construct, toggle_bits, toggle_directions
from llm4cov.sim.model.coverage import Point, constant_dead
from llm4cov.sim.model.exclusions import ProvenUnreachable, goals_at
from llm4cov.sim.model.feedback_terms import SourceIndex
from llm4cov.sim.model.metrics import TOGGLE
from llm4cov.sim.model.observation import OVERALL_METRICS, MetricCoverage


def goal_of(v: GoalVerdict) -> ProvenUnreachable:
    """The goal of a verdict alone (its :class:`ProvenUnreachable` fields)."""
    return ProvenUnreachable(**{f.name: getattr(v, f.name) for f in fields(ProvenUnreachable)})


def verdict_for(points: Sequence[Point], verdicts: Sequence[GoalVerdict],
                sources: Mapping[str, str]) -> dict[Point, GoalVerdict]:
    """The verdict standing for each missed point of ``points`` that has one
    (:func:`~llm4cov.sim.model.exclusions.goals_at`: by the point's construct; a proof
    wins over a later unknown; otherwise the last analysis wins). A point no goal
    stands for takes the last verdict on its whole toggle item (:func:`whole_toggle`:
    an item formal gave no goal, with the reason)."""
    out: dict[Point, GoalVerdict] = {}
    for p, matching in goals_at(points, verdicts, sources):
        proven = [v for v in matching if v.status == "unreachable"]
        out[p] = (proven or matching)[-1]
    whole = [v for v in verdicts if whole_toggle(v)]
    index = SourceIndex(sources) if whole else None
    for p in points:
        if index is None or p.count or p in out or p.metric != TOGGLE.name:
            continue
        construct, _ = index.construct(p.metric, p.file, p.line, p.col, p.comment, p.lines)
        found = [v for v in whole if _in_item(v, p, construct)]
        if found:
            out[p] = found[-1]
    return out


def whole_toggle(v: GoalVerdict) -> bool:
    """A verdict on a whole toggle item, not on one bit and direction: its goal is the
    metric's name (an item formal placed no goal for, e.g. a structured signal's)."""
    return v.metric == TOGGLE.name and v.goal == v.metric and v.typed is not None


def _in_item(v: GoalVerdict, p: Point, construct: Construct) -> bool:
    """True when toggle point ``p`` (its construct ``construct``) is one of the bits and
    directions of ``v``'s item."""
    item = v.typed
    return (item is not None and (p.file, p.line) == (v.file, v.line)
            and construct.signal == item.signal
            and set(construct.bits) <= set(toggle_bits(item))
            and construct.direction in toggle_directions(item))


#: A term of an expression-coverage row, as Verilator writes it: ``(a==0 && P==1) => 1``.
_TERM = re.compile(r"(?<![\w.\[$])([A-Za-z_]\w*)==([01])\b")


def parameter_row(p: Point, parameters: Mapping[str, Mapping[str, int]], root: str
                  ) -> str | None:
    """Why an expression-coverage row cannot be hit under the elaborated parameters: it
    needs a parameter term at the other value (``(arst_i==0 && ARST_LVL==1)`` with
    ``ARST_LVL`` 0: an active-high reset build of an active-low core); None when none.
    ``parameters``: per instance path relative to ``root`` (the DUT), its integer
    parameters (:meth:`~llm4cov.tasks.hdl.Design.parameter_values`); a term is the
    parameter's truth (nonzero)."""
    if p.metric != "expr" or "=>" not in p.comment:
        return None
    rel = "" if p.hier == root else p.hier.removeprefix(root + ".")
    mine = parameters.get(rel)
    if not mine:
        return None
    for name, want in _TERM.findall(p.comment.split("=>")[0]):
        if name in mine and int(mine[name] != 0) != int(want):
            return (f"the row needs {name}={want}; the design is elaborated with {name} = "
                    f"{mine[name]}")
    return None


def classify(kept: Sequence[Point], excluded: Sequence[Point], sources: Mapping[str, str],
             verdicts: Sequence[GoalVerdict], tried: str, formal_note: str,
             prove_depth: int, parameters: Mapping[str, Mapping[str, int]] | None = None,
             root: str = "") -> list[ResidualPoint]:
    """The residual: one :class:`ResidualPoint` per missed point of ``kept`` (the
    counted DUT points of the merged regression) and of ``excluded``. ``tried``: what
    the tests tried, in words; ``formal_note``: why formal did not analyze a point it
    has no verdict for; ``parameters``: the design's elaborated parameters per
    instance below ``root``, the DUT (:func:`parameter_row`)."""
    verdict = verdict_for(kept, verdicts, sources)
    dead = constant_dead(kept, sources)
    words = SourceIndex(sources)
    out = []
    for p in kept:
        if p.count:
            continue
        phrase = words.phrase(p.metric, p.file, p.line, p.col, p.comment, p.lines)
        v = verdict.get(p)
        proven = v is not None and v.status == "unreachable"
        proof = f"proven by {prove_depth}-induction (formal)"
        row = parameter_row(p, parameters or {}, root)
        if p in dead or row:
            cause, reason = Cause.CONSTANT, (row or "condition depends only on parameters; "
                                             "the other outcome was seen") + (
                                                f"; also {proof}" if proven else "")
        elif proven:
            cause, reason = Cause.UNREACHABLE, proof
        elif v is not None and v.status == "error":
            cause, reason = Cause.TOOL_ERROR, f"formal job failed: {v.reason}"
        elif v is not None and v.status == "reached":
            cause, reason = Cause.NOT_REACHED, (
                f"{tried}; formal reached it at cycle {v.depth} but the replayed witness "
                "missed it in simulation")
        elif v is not None:
            cause, reason = Cause.NOT_REACHED, f"{tried}; formal: {v.reason or v.status}"
        else:
            cause, reason = Cause.NOT_REACHED, f"{tried}; formal: {formal_note}"
        out.append(ResidualPoint(metric=p.metric, file=p.file, line=phrase.line, hier=p.hier,
                                 module=p.module.split("__", 1)[0], detail=phrase.detail,
                                 cause=cause, reason=reason, proven=proven))
    for p in excluded:
        if p.count:
            continue
        phrase = words.phrase(p.metric, p.file, p.line, p.col, p.comment, p.lines)
        out.append(ResidualPoint(metric=p.metric, file=p.file, line=phrase.line, hier=p.hier,
                                 module=p.module.split("__", 1)[0], detail=phrase.detail,
                                 cause=Cause.EXCLUDED, reason="matched by an --exclude rule"))
    return out


def closure_percent(metrics: Mapping[str, MetricCoverage],
                    unreachable: Mapping[str, int]) -> float:
    """(covered + proven unreachable) / total per metric, in percent, averaged over the
    metrics of the headline overall (0 without points)."""
    pcts = [100.0 * min(m.total, m.covered + unreachable.get(name, 0)) / m.total
            for name, m in metrics.items() if name in OVERALL_METRICS and m.total]
    return round(sum(pcts) / len(pcts), 4) if pcts else 0.0


def proven_counts(residual: Sequence[ResidualPoint]) -> dict[str, int]:
    """Residual points a formal proof shows unreachable, per metric."""
    out: dict[str, int] = defaultdict(int)
    for r in residual:
        if r.proven and r.cause is not Cause.EXCLUDED:
            out[r.metric] += 1
    return dict(sorted(out.items()))
