"""Setting up a synthesis run, the same way for ``llm4cov synth`` and the pipeline's
synth step: the policies of the trace type's two roles, the contamination index of
the benchmarks, and the repos to read."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from llm4cov.policies.base import Policy
from llm4cov.sim.model.call import Simulate
from llm4cov.synth.config import SynthConfig, TraceType
from llm4cov.synth.contamination import ContaminationIndex
from llm4cov.synth.engine import SynthRun
from llm4cov.synth.records import Role
from llm4cov.synth.sources import RepoItem, count_repos, iter_repos
from llm4cov.tasks.sources import AUTO
from llm4cov.util.settings import ConfigError

PolicyMaker = Callable[[], Policy]
"""Makes the policy of one role holder (``student`` or ``teacher``) when it is needed."""


def role_policies(trace_type: TraceType, makers: Mapping[str, PolicyMaker]
                  ) -> dict[Role, Policy]:
    """The policies ``(M_int, M_trans)`` of ``trace_type``; ``makers`` maps ``student``
    and ``teacher`` to a maker, called once for each one the trace type needs.

    Raises:
        ConfigError: the trace type needs a role holder without a maker.
    """
    made: dict[str, Policy] = {}
    for who in dict.fromkeys(trace_type.roles):
        if who not in makers:
            raise ConfigError(f"trace type {trace_type.value} needs a {who} policy "
                              f"(--{who})")
        made[who] = makers[who]()
    intermediate, transition = trace_type.roles
    return {Role.INTERMEDIATE: made[intermediate], Role.TRANSITION: made[transition]}


@dataclass(frozen=True)
class RepoSource:
    """The repos of a run: a file or directory (:func:`~llm4cov.synth.iter_repos`), its
    format, and at most ``limit`` of them (None = all) after the first ``skip`` (in file
    order, before the contamination filter): two stages that skip and limit the same
    file read disjoint repos."""

    path: Path | str
    format: str = AUTO
    """A format of :mod:`llm4cov.tasks.sources` (``auto``: each record's detected)."""
    limit: int | None = None
    skip: int = 0

    def items(self) -> Iterator[RepoItem]:
        """The repos, read lazily."""
        stop = None if self.limit is None else self.skip + self.limit
        return islice(iter_repos(self.path, self.format), self.skip, stop)

    def count(self) -> int:
        """How many repos :meth:`items` yields."""
        left = max(0, count_repos(self.path) - self.skip)
        return min(left, self.limit or sys.maxsize)


def synth_run(out: Path | str, config: SynthConfig, policies: dict[Role, Policy],
              simulate: Simulate, benchmarks: Sequence[Path | str] = (),
              **options: Any) -> SynthRun:
    """A :class:`SynthRun` of ``config`` in ``out`` with the role ``policies``
    (:func:`role_policies`) and, when ``benchmarks`` (task files) are given, the
    contamination filter; ``options`` are SynthRun's ``on_repo``, ``command``,
    ``progress``, ``policy_options``.

    Raises:
        RunDirError: ``out`` holds a run with another identity.
    """
    index = (ContaminationIndex.from_task_files(benchmarks, config.contamination_threshold)
             if benchmarks else None)
    return SynthRun(out, config, policies, simulate, index, **options)


__all__ = ["PolicyMaker", "RepoSource", "role_policies", "synth_run"]
