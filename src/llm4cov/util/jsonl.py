"""Append-only JSON Lines result files that survive crashes and resume.

Every row is written with one ``write`` + ``flush`` + ``fsync``, so a killed run loses
at most the rows in flight. A torn last line (the process died mid-write) is cut off
when the file is opened again. Rows are identified by ``key_fields``; a resumed run
skips keys that are already present. Only a 16-byte digest of each key is held in
memory, never the rows.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

MAX_LINE_CHARS = 128 << 20
"""Characters one JSONL line may have (128 Mi: a task's files may have 64 MiB together,
``tasks.reading.MAX_REPO_BYTES``, and JSON escapes some characters). A longer line is
never held in memory: a one-line file of any size (a sparse file is free to make) is
read in bounded pieces and skipped."""


def bounded_lines(fh: Any, limit: int = MAX_LINE_CHARS) -> Iterator[tuple[int, str | None]]:
    """The lines of the text file ``fh``, numbered from 1: ``(n, line)``, or ``(n,
    None)`` for a line over ``limit`` characters, whose rest is read and dropped."""
    n = 0
    while line := fh.readline(limit + 1):
        n += 1
        if len(line) <= limit or line.endswith("\n"):
            yield n, line
            continue
        while (rest := fh.readline(1 << 20)) and not rest.endswith("\n"):
            pass
        yield n, None


def iter_json_objects(path: Path | str) -> Iterator[tuple[int, dict[str, Any] | None, str]]:
    """Input JSONL records, one per non-blank line: ``(line number, object, "")``, or
    ``(line number, None, why)`` for a line that is not a JSON object or has over
    :data:`MAX_LINE_CHARS` characters. Callers decide whether a bad line is fatal
    (naming ``path:line``) or a skipped record.

    Raises:
        OSError: the file cannot be read.
    """
    with Path(path).open(encoding="utf-8") as fh:
        for n, line in bounded_lines(fh, MAX_LINE_CHARS):
            if line is None:
                yield n, None, f"over {MAX_LINE_CHARS >> 20} Mi characters, the size a " \
                               "record may have (not read)"
                continue
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                yield n, None, f"not valid JSON: {exc}"
                continue
            if isinstance(record, dict):
                yield n, record, ""
            else:
                yield n, None, "a record must be a JSON object"


def iter_jsonl(path: Path | str) -> Iterator[dict[str, Any]]:
    """Rows of a JSONL file, streaming; a torn (unterminated, unparsable) last line is
    skipped. Raises ``ValueError`` for a corrupt line elsewhere (with its number)."""
    path = Path(path)
    if not path.exists():
        return
    with path.open(encoding="utf-8") as fh:
        for n, line in bounded_lines(fh, MAX_LINE_CHARS):
            if line is None:
                raise ValueError(f"{path}:{n}: a JSONL line over {MAX_LINE_CHARS >> 20} Mi "
                                 "characters (not read)")
            if not line.strip():
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                if not line.endswith("\n"):
                    return  # torn last line of a killed run
                raise ValueError(f"{path}:{n}: corrupt JSONL line: {exc}") from exc


def json_line(obj: Any, sort_keys: bool = False) -> str:
    """``obj`` as one JSON line (newline included), non-ASCII kept as is; an object
    holding a lone surrogate (text read with ``surrogateescape``, a JSON ``\\udc80`` a
    server sent) is written with every non-ASCII character escaped, so that the line is
    valid UTF-8 and reads back equal (a thirty-ninth red team's answer ended a bench run
    on it)."""
    line = json.dumps(obj, ensure_ascii=False, sort_keys=sort_keys)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(obj, sort_keys=sort_keys)
    return line + "\n"


class ResultLog:
    """A durable, append-only JSONL file of result rows, safe across threads.

    ``key_fields`` name the row fields that identify a finished item, e.g.
    ``("task_id", "sample", "round")``.
    """

    def __init__(self, path: Path | str, key_fields: tuple[str, ...]) -> None:
        self.path = Path(path)
        self.key_fields = key_fields
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._repair()
        self._lock = threading.Lock()
        self._keys = {self._digest(self.key(row)) for row in iter_jsonl(self.path)}

    @staticmethod
    def _digest(key: tuple) -> bytes:
        text = json.dumps(key, ensure_ascii=False, separators=(",", ":"))
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def _repair(self) -> None:
        """Cut a torn last line left by a killed writer."""
        if not self.path.exists() or self.path.stat().st_size == 0:
            return
        with self.path.open("rb+") as fh:
            end = fh.seek(0, os.SEEK_END)
            at = end
            while at > 0:  # back from the end, a block at a time, to the last newline
                start = max(0, at - (1 << 16))
                fh.seek(start)
                block = fh.read(at - start)
                if (cut := block.rfind(b"\n")) >= 0:
                    if start + cut + 1 < end:
                        fh.truncate(start + cut + 1)
                    return
                at = start
            fh.truncate(0)

    def key(self, row: dict[str, Any]) -> tuple:
        """The identity of ``row`` (a tuple of its key field values)."""
        return tuple(row.get(f) for f in self.key_fields)

    def __contains__(self, key: tuple) -> bool:
        return self._digest(tuple(key)) in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    @staticmethod
    def _line(row: dict[str, Any]) -> str:
        return json_line(row, sort_keys=True)

    def append(self, row: dict[str, Any]) -> bool:
        """Write ``row`` durably; returns False (and writes nothing) if its key exists."""
        line = self._line(row)
        key = self._digest(self.key(row))
        with self._lock:
            if key in self._keys:
                return False
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            self._keys.add(key)
        return True

    def rows(self) -> Iterator[dict[str, Any]]:
        """All rows written so far (streaming from disk)."""
        return iter_jsonl(self.path)

    def remove(self, drop: Callable[[dict[str, Any]], bool]) -> int:
        """Remove every row for which ``drop(row)`` is true; returns how many. The file
        is rewritten beside itself and renamed over it (fsynced first), so a crash leaves
        either the old rows or the new ones, never a mix."""
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        removed = 0
        with self._lock:
            with tmp.open("w", encoding="utf-8") as out:
                for row in iter_jsonl(self.path):
                    if drop(row):
                        removed += 1
                        self._keys.discard(self._digest(self.key(row)))
                    else:
                        out.write(self._line(row))
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        return removed
