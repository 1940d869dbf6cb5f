"""File digests: the SHA-256 of a file read in chunks (a wheel, a stored build
artifact), never the whole file in memory."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path) -> str:
    """The SHA-256 of the file ``path`` (hex), read 1 MiB at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
