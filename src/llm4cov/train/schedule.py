"""The learning-rate schedule a stage will train with, known before its first step.

A stage continued from a converged checkpoint is fragile when it has only a few
optimizer steps: with a warm-up and a decaying schedule (cosine, linear), the last step
can still run near the peak learning rate, so nothing anneals the update. Measured in
``experiments/smollm2_cpu/notebook.md`` ("v5"): a stage of 2 steps (the first at
lr 0, the warm-up; the second at the peak 2e-4) took SmolLM2-135M from Sim Pass 28 % to
0 %. Each stage starts a fresh AdamW, whose first step is a sign step: every weight
moves by that step's learning rate (0 under a warm-up, which only fills the moments).
Measured in the same file ("v6 stage 2, agentic, and what broke it"): one such step at
5e-5 on 4 samples cut Sim Pass 42 -> 17 %; a step of the same sizes in random directions
did not. :func:`schedule_check` computes the schedule when training begins, with the
trainer's own step count and transformers' own scheduler, and warns
(:func:`schedule_warning`) when it does not anneal, or when it is all warm-up (no step
updates the weights).
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

DECAYING = ("cosine", "linear", "cosine_with_min_lr")
"""Schedulers that are meant to end near zero (``constant*`` stay at the peak by design)."""
ANNEALED_FRACTION = 0.25
"""The last step of a decaying schedule should run below this fraction of the peak lr
(ours: cosine reaches it after 4 decay steps: 0.5 * (1 + cos(pi * 3 / 4)) = 0.146)."""


def planned_learning_rates(args: Any, steps: int) -> list[float]:
    """The learning rate of each of ``steps`` optimizer steps under the training
    arguments ``args`` (transformers ``TrainingArguments``), in order: the value
    transformers logs as ``learning_rate`` for that step.

    Built with the arguments' own warm-up (``get_warmup_steps``) and
    ``transformers.get_scheduler`` on a one-parameter optimizer, so it agrees with the
    schedule the trainer builds; nothing of the trainer is touched (no random state).
    """
    import torch
    from transformers import get_scheduler

    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=args.learning_rate)
    scheduler = get_scheduler(args.lr_scheduler_type, optimizer=optimizer,
                              num_warmup_steps=args.get_warmup_steps(steps),
                              num_training_steps=steps,
                              scheduler_specific_kwargs=args.lr_scheduler_kwargs or {})
    rates = []
    for _ in range(steps):
        rates.append(scheduler.get_last_lr()[0])
        optimizer.step()
        scheduler.step()
    return rates


def schedule_check() -> Any:
    """A transformers ``TrainerCallback`` that, when training begins (the trainer's step
    count known), computes :func:`planned_learning_rates` and logs
    :func:`schedule_warning` at WARNING level; the warning stays in its ``warning``
    attribute (None when the schedule anneals)."""
    from transformers import TrainerCallback

    class ScheduleCheck(TrainerCallback):
        warning: str | None = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            rates = planned_learning_rates(args, state.max_steps)
            self.warning = schedule_warning(rates, str(args.lr_scheduler_type.value),
                                            args.learning_rate)
            if self.warning:
                log.warning("%s: %s", args.output_dir, self.warning)

    return ScheduleCheck()


def schedule_warning(rates: list[float], scheduler: str, peak: float) -> str | None:
    """A one-line warning when every step runs at learning rate 0 (a warm-up of
    ``ceil(warmup_ratio x steps)`` steps that takes them all: the weights cannot change;
    measured in the results' "v6 stage 2": 1 step, 10 % warm-up), or when a decaying
    schedule (:data:`DECAYING`) ends at or above :data:`ANNEALED_FRACTION` of ``peak``
    (so its last update is not annealed); else None.

    ``rates``: the learning rate of each step (:func:`planned_learning_rates`); ``peak``:
    the configured peak learning rate (> 0).
    """
    if rates and max(rates) <= 0:
        return (f"this stage trains {len(rates)} optimizer step(s), all of them warm-up at "
                "learning rate 0, so its weights will not change: lower warmup_ratio, or "
                "train on more samples")
    if scheduler not in DECAYING or not rates or rates[-1] < ANNEALED_FRACTION * peak:
        return None
    warmup = next((i for i, rate in enumerate(rates) if rate >= peak), len(rates))
    return (f"this stage trains {len(rates)} optimizer step(s), {warmup} of them warm-up; "
            f"its last step runs at {100 * rates[-1] / peak:.0f} % of the peak learning "
            f"rate {peak:g}, so the {scheduler} schedule does not anneal (a converged "
            "checkpoint can collapse): lower learning_rate or effective_batch_size, or "
            "train on more samples")


__all__ = ["ANNEALED_FRACTION", "DECAYING", "planned_learning_rates", "schedule_check",
           "schedule_warning"]
