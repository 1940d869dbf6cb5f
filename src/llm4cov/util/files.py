"""Files written whole or not at all."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path


def write_text_atomic(path: Path, text: str, errors: str = "strict") -> None:
    """Write ``text`` (UTF-8, ``errors`` as for :meth:`str.encode`) to ``path`` so that a
    reader, or the file after a crash, holds the whole new text or the old file: a
    temporary file beside it (a fresh name, created with the umask's permissions),
    flushed to disk, then renamed over ``path``. Creates the parent folders.

    Raises:
        OSError: the folder or the file cannot be written (``path`` is as it was and no
            temporary file is left).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with tmp.open("x", encoding="utf-8", errors=errors) as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
