"""Budgets of a bench run: samples, simulator calls, model tokens.

Spending counts the whole run directory (rows of earlier invocations included), so
rerunning the same command with the same budget does not spend more. Samples and
simulator calls are reserved before they start, so those limits hold exactly; tokens are
known only after a response, so the token limit is checked before each request and can be
exceeded by the requests already in flight.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from llm4cov.bench.rows import simulated


class BudgetExhausted(RuntimeError):
    """A budget limit was reached; ``what`` names it (``samples``, ``sim_calls``, ``tokens``)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


@dataclass
class Budget:
    """Limits (``None`` = unlimited) and what was spent so far."""

    max_samples: int | None = None
    max_sim_calls: int | None = None
    max_tokens: int | None = None
    samples: int = 0
    sim_calls: int = 0
    tokens: int = 0
    exhausted: str | None = None

    def spend_prior(self, rows: Iterable[dict[str, Any]]) -> None:
        """Count what the existing result rows already spent."""
        started = set()
        for row in rows:
            started.add((row["arm"], row["task_id"], row["sample"]))
            self.sim_calls += simulated(row)
            self.tokens += row["prompt_tokens"] + row["completion_tokens"]
        self.samples += len(started)

    def _stop(self, what: str) -> BudgetExhausted:
        self.exhausted = self.exhausted or what
        return BudgetExhausted(what)

    def start_sample(self) -> None:
        """Reserve a new sample. Raises :class:`BudgetExhausted` at the limit."""
        if self.max_samples is not None and self.samples >= self.max_samples:
            raise self._stop("samples")
        self.samples += 1

    def start_sim(self) -> None:
        """Reserve a simulator call. Raises :class:`BudgetExhausted` at the limit."""
        if self.max_sim_calls is not None and self.sim_calls >= self.max_sim_calls:
            raise self._stop("sim_calls")
        self.sim_calls += 1

    def check_tokens(self) -> None:
        """Before a model request. Raises :class:`BudgetExhausted` at the limit."""
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            raise self._stop("tokens")

    def add_tokens(self, n: int) -> None:
        self.tokens += n

    def as_dict(self) -> dict[str, Any]:
        return {
            "limits": {"samples": self.max_samples, "sim_calls": self.max_sim_calls,
                       "tokens": self.max_tokens},
            "spent": {"samples": self.samples, "sim_calls": self.sim_calls,
                      "tokens": self.tokens},
            "exhausted": self.exhausted,
        }
