"""Budgets of a long run (bench, synth): samples, simulator calls, model tokens.

Spending counts the whole run directory (rows of earlier invocations included, charged
with :meth:`Budget.charge`), so rerunning the same command with the same budget does not
spend more. Two ways to ask, one set of counters:

- per call, raising :class:`BudgetExhausted` at a limit (bench): samples and simulator
  calls are taken before they start (:meth:`Budget.start_sample`,
  :meth:`Budget.start_sim`), so those limits hold exactly; tokens are known only after a
  response, so :meth:`Budget.check_tokens` runs before each request and the limit can be
  exceeded by the requests already in flight;
- per unit of work, answering yes or no (synth): :meth:`Budget.try_reserve` reserves a
  repo's worst-case simulator calls, :meth:`Budget.charge` records what it spent and
  :meth:`Budget.release` returns the reservation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class BudgetExhausted(RuntimeError):
    """A budget limit was reached; ``what`` names it (``samples``, ``sim_calls``, ``tokens``)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


@dataclass
class Budget:
    """Limits (``None`` = unlimited), what was spent so far, the simulator calls
    reserved but not yet charged, and the first limit that stopped the run."""

    max_samples: int | None = None
    max_sim_calls: int | None = None
    max_tokens: int | None = None
    samples: int = 0
    sim_calls: int = 0
    tokens: int = 0
    reserved: int = 0
    exhausted: str | None = None

    def sims_fit(self, sim_calls: int) -> bool:
        """Whether ``sim_calls`` more (besides those spent and reserved) stay in the limit."""
        return (self.max_sim_calls is None
                or self.sim_calls + self.reserved + sim_calls <= self.max_sim_calls)

    def tokens_left(self) -> bool:
        """Whether the token limit is not yet reached."""
        return self.max_tokens is None or self.tokens < self.max_tokens

    def _stop(self, what: str) -> BudgetExhausted:
        self.exhausted = self.exhausted or what
        return BudgetExhausted(what)

    def start_sample(self) -> None:
        """Take a new sample. Raises :class:`BudgetExhausted` at the limit."""
        if self.max_samples is not None and self.samples >= self.max_samples:
            raise self._stop("samples")
        self.samples += 1

    def start_sim(self) -> None:
        """Take a simulator call. Raises :class:`BudgetExhausted` at the limit."""
        if not self.sims_fit(1):
            raise self._stop("sim_calls")
        self.sim_calls += 1

    def check_tokens(self) -> None:
        """Before a model request. Raises :class:`BudgetExhausted` at the limit."""
        if not self.tokens_left():
            raise self._stop("tokens")

    def add_tokens(self, n: int) -> None:
        """Charge ``n`` model tokens."""
        self.tokens += n

    def try_reserve(self, sim_calls: int) -> bool:
        """Reserve ``sim_calls`` if they fit and the token budget is not used up."""
        if not (self.tokens_left() and self.sims_fit(sim_calls)):
            return False
        self.reserved += sim_calls
        return True

    def release(self, sim_calls: int) -> None:
        """Return a reservation of ``sim_calls`` (what was used is charged apart)."""
        self.reserved -= sim_calls

    def charge(self, sim_calls: int, tokens: int) -> None:
        """Record ``sim_calls`` simulator calls and ``tokens`` model tokens spent."""
        self.sim_calls += sim_calls
        self.tokens += tokens

    def as_dict(self) -> dict[str, Any]:
        """Limits, spending and the stopping limit, as recorded in a bench ``run.json``."""
        return {
            "limits": {"samples": self.max_samples, "sim_calls": self.max_sim_calls,
                       "tokens": self.max_tokens},
            "spent": {"samples": self.samples, "sim_calls": self.sim_calls,
                      "tokens": self.tokens},
            "exhausted": self.exhausted,
        }
