"""The formal budget options that ``llm4cov formal`` and ``llm4cov close`` share: each
flag, its bounds and its help written once; each command takes the defaults from its
own settings (:class:`~llm4cov.formal.closure.FormalConfig`,
:class:`~llm4cov.close.model.CloseSettings`), whose fields have the same names."""

from __future__ import annotations

from typing import Any

import typer

BUDGETS: dict[str, tuple[type, str, dict[str, Any], str]] = {
    "cover_depth": (int, "--cover-depth", {"min": 1},
                    "BMC depth of the cover job, clock cycles."),
    "prove_depth": (int, "--prove-depth", {"min": 1}, "k of the k-induction prove jobs."),
    "job_timeout_s": (float, "--job-timeout", {"min": 1.0},
                      "Seconds of each SBY job: CPU seconds per solver process it runs "
                      "(the wall clock ends it at three times as many)."),
    "prove_budget_s": (float, "--prove-budget", {"min": 0.0},
                       "Seconds for all prove jobs of one analysis: per job its wall "
                       "seconds or, if fewer, its CPU seconds (no round starts after "
                       "them)."),
    "continue_steps": (int, "--continue-steps", {"min": 0},
                       "Continuation steps: cover jobs from the state a simulated testbench "
                       "ends in (formal: the closing one; close: the kept test covering "
                       "most; 0: none)."),
    "continue_budget_s": (float, "--continue-budget", {"min": 0.0},
                          "Seconds for the continuation's Yosys run and cover jobs, counted "
                          "as --prove-budget (its simulations are not counted)."),
}
"""Settings field -> (type, flag, ``typer.Option`` bounds, help)."""


def budget_options(defaults: object, *fields: str, prefix: str = ""
                   ) -> dict[str, tuple[type, Any]]:
    """The :func:`~llm4cov.cli.options.with_options` table (parameter -> (type,
    ``typer.Option``)) of the budgets ``fields`` (all of :data:`BUDGETS` when none),
    each parameter named as its field, its default that field of ``defaults`` and its
    help after ``prefix``."""
    table = {}
    for name in fields or tuple(BUDGETS):
        kind, decl, bounds, text = BUDGETS[name]
        table[name] = (kind, typer.Option(getattr(defaults, name), decl, help=prefix + text,
                                          **bounds))
    return table


__all__ = ["BUDGETS", "budget_options"]
