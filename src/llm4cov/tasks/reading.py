"""Reading a repository's files with a size bound: a user's folder, filelist, manifest,
`` `include`` or ``--aux`` file is untrusted input read into this process (not a
sandbox), and each copy of it (the task, the cache key's JSON, the preprocessed view)
multiplies its size: a 200 MB all-NUL ``big.v`` (a sparse file, free to make) took the
process to 2.66 GB."""

from __future__ import annotations

from pathlib import Path

from llm4cov.tasks.model import TaskError

MAX_FILE_BYTES = 16 << 20
"""Bytes one source file may have (16 MiB: far above hand-written RTL; a generated
netlist that size is better given as a library)."""
MAX_REPO_BYTES = 64 << 20
"""Bytes all the files read for one task may have together."""


def bounded_bytes(path: Path | str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path``, at most ``limit`` of them.

    Raises:
        TaskError: the file has more than ``limit`` bytes (checked before reading and
            while reading: a file that grows is cut off, not read).
        OSError: it cannot be read.
    """
    path = Path(path)
    with path.open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise TaskError(f"{path}: over {limit >> 20} MiB, the size a source file may have "
                        "(refused, not read)")
    return data


def check_total(sizes: list[int], where: Path | str, limit: int = MAX_REPO_BYTES) -> None:
    """Refuse a task whose files (``sizes``, bytes) have more than ``limit`` together.

    Raises:
        TaskError: over the limit.
    """
    if sum(sizes) > limit:
        raise TaskError(f"{where}: the files to read have {sum(sizes) >> 20} MiB together, "
                        f"over the {limit >> 20} MiB a task may have (refused, not read)")
