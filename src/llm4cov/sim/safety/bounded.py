"""Bounded children for pyslang parses that llm4cov cannot bound in its own process.

pyslang expands macros without any limit, so a text that uses the preprocessor can
allocate or loop without end (a doubling `` `define`` chain). Such a text is parsed in
a child first: a :class:`Batch` runs one child (``python -m MODULE``) over many items,
each with :attr:`BatchLimits.cpu_s` more CPU seconds (the soft CPU limit is raised
before each item: past it, SIGXCPU ends the child) in :attr:`BatchLimits.memory_bytes`
of address space, in the OS sandbox where it runs (:func:`python_sandbox`: the Python
installation and the package read-only, the child's scratch dir writable, nothing
else). When the child dies on an item, that item's result is None and a new child goes
on with the next one, so one bad item is all that is lost. The child side is
:func:`serve`.

Users: the bench's answer checks (:mod:`llm4cov.bench.answer_checks`) and the RTL's
in-process views (:func:`llm4cov.tasks.hdl.check_bounded`, run by
:mod:`llm4cov.sim.safety.ppguard`).
"""

from __future__ import annotations

import json
import logging
import resource
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import llm4cov
from llm4cov.sim.safety import isolation, workdirs
from llm4cov.sim.safety.host import host_env
from llm4cov.sim.safety.process import Limits, Sandbox, run_limited

log = logging.getLogger(__name__)

#: What a Python child needs of the environment (nothing else).
PYTHON_ENV = ("PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
_IN, _OUT, _READY = "items.jsonl", "results.jsonl", "ready"


def python_sandbox() -> Sandbox:
    """The OS sandbox of a child that runs llm4cov's Python (the pyslang guard, the
    bounded batches): the interpreter, the venv and the package read-only, its scratch
    dir writable, nothing else."""
    package = Path(llm4cov.__file__).resolve().parent
    return Sandbox(readonly=[*isolation.python_paths(), package], env_keys=PYTHON_ENV)


@dataclass(frozen=True)
class BatchLimits:
    """Per item ``cpu_s`` CPU seconds; ``memory_bytes`` of address space; per child
    ``wall_s`` seconds plus one per item."""

    cpu_s: int = 10
    memory_bytes: int = 512 << 20
    wall_s: float = 60.0


class Batch:
    """Items (JSON values) for ``python -m module``, run in one bounded child after they
    were all added (:meth:`add` writes each to a file: memory does not grow with them).
    Use as a context manager: its scratch dir is removed on exit."""

    def __init__(self, module: str, limits: BatchLimits = BatchLimits(),
                 workdir_root: str | None = None) -> None:
        self.module = module
        self.limits = limits
        self.workdir_root = workdir_root
        self.count = 0
        self._dir: Path | None = None
        self._sink: TextIO | None = None

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add(self, item: Any) -> None:
        """Queue one item."""
        if self._sink is None:
            self._dir = workdirs.create(self.workdir_root, prefix="llm4cov-batch-")
            self._sink = (self._dir / _IN).open("w", encoding="utf-8")
        self._sink.write(json.dumps(item) + "\n")
        self.count += 1

    def results(self) -> Iterator[Any | None]:
        """The child's result of every item, in order (None: the child died on it, or
        could not start at all)."""
        if self._sink is None or self._dir is None:
            return
        self._sink.close()
        start = 0
        sandboxed = isolation.available()
        while start < self.count:
            left = self.count - start
            done, ready = self._run(start, left, sandboxed)
            if not ready and sandboxed:  # the sandbox failed, not an item: without it
                sandboxed = False
                continue
            if not ready:
                log.warning("%s could not start: %d items have no result", self.module, left)
                done = [None] * left
            for result in done:
                yield result
                start += 1
            if len(done) < left:  # the child died on this one (a bound, a crash)
                yield None
                start += 1

    def _run(self, start: int, count: int, sandboxed: bool) -> tuple[list[Any], bool]:
        """``(results of the items from start on that one child finished, whether it
        started)``."""
        assert self._dir is not None
        out = self._dir / _OUT
        out.unlink(missing_ok=True)
        cpu = self.limits.cpu_s
        run = run_limited(
            [sys.executable, "-m", self.module, "--batch", _IN, _OUT, str(start), str(cpu)],
            cwd=str(self._dir),
            env=host_env(PYTHON_ENV),
            timeout_s=self.limits.wall_s + count,
            limits=Limits(cpu_s=cpu * count + 10, memory_bytes=self.limits.memory_bytes),
            output_cap=16 * 1024,
            sandbox=python_sandbox() if sandboxed else None,
        )
        done: list[Any] = []
        ready = False
        if out.is_file():
            for line in out.read_text(encoding="utf-8").splitlines():
                try:
                    value = json.loads(line)
                except ValueError:
                    break  # cut off mid-line
                if not ready:
                    ready = value == _READY
                elif len(done) < count:
                    done.append(value)
        if ready and len(done) < count:
            log.info("%s ended on item %d (exit %s)", self.module, start + len(done),
                     run.returncode)
        return done, ready

    def close(self) -> None:
        if self._sink is not None:
            self._sink.close()
        if self._dir is not None:
            workdirs.release(self._dir)
            self._dir = None


def serve(argv: list[str], work: Callable[[Any], Any]) -> None:
    """The child of a :class:`Batch` (``argv``: ``IN OUT START CPU_S``): ``work`` on every
    item from ``START`` on, one JSON line each after a ``"ready"`` line, each with at most
    ``CPU_S`` more CPU seconds."""
    source, sink, start, cpu_s = argv[0], argv[1], int(argv[2]), int(argv[3])
    with open(sink, "w", encoding="utf-8") as out, open(source, encoding="utf-8") as items:
        out.write(json.dumps(_READY) + "\n")
        out.flush()
        for n, line in enumerate(items):
            if n < start:
                continue
            usage = resource.getrusage(resource.RUSAGE_SELF)
            _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
            soft = int(usage.ru_utime + usage.ru_stime) + 1 + cpu_s
            if hard != resource.RLIM_INFINITY:
                soft = min(soft, hard)
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
            out.write(json.dumps(work(json.loads(line))) + "\n")
            out.flush()
