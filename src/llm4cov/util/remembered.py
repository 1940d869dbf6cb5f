"""Facts about the host's tools, remembered across processes.

Every simulating process used to ask the same questions before its first build: the
simulator's ``--version``, the C++ compiler's ``--version``, whether the OS sandbox
starts. Each answer is a subprocess (5-40 ms); together about 5 % of a later
``llm4cov sim`` call. :func:`remembered` keeps a successful answer in a small file under
``<root>/host/``, named by a hash of everything the answer depends on (the *identity*):
:func:`file_identity` of each binary involved (a replaced or upgraded binary has a new
inode, size or change time) and, for the sandbox, the kernel's boot and namespaces
(:mod:`llm4cov.sim.safety.isolation`). A changed identity asks again; a failed answer is
never kept (it is asked again by the next process, which then reports it). For these
three questions ``root`` is the default cache root (``$LLM4COV_CACHE_DIR`` or
``~/.cache/llm4cov``) whatever a run's ``cache_dir``: they describe the host, not a
run; ``llm4cov cache clear`` empties ``host/``.

The files are the user's own (the cache root is never bound into a sandbox, so no
testbench can write them); one that cannot be read or written is ignored and the
question asked, as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path

from llm4cov.util.files import write_text_atomic

#: Subdirectory of the cache root that holds the answers.
HOST_DIR = "host"
#: Largest answer read back (a ``--version`` line is far shorter).
MAX_BYTES = 4096


def file_identity(path: str | os.PathLike[str] | None) -> str:
    """``path`` resolved, with its device, inode, size, and modification and change
    times in nanoseconds (a rewrite moves the change time, which no tool can set back);
    ``"missing"`` when it is None or cannot be read."""
    if path is None:
        return "missing"
    try:
        real = os.path.realpath(path)
        st = os.stat(real)
    except OSError:
        return "missing"
    return f"{real}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"


def remembered(root: Path, kind: str, identity: Iterable[str],
               ask: Callable[[], str | None], folder: str = HOST_DIR,
               max_bytes: int = MAX_BYTES,
               valid: Callable[[str], bool] = lambda _answer: True) -> str | None:
    """The answer to ``ask`` for ``identity``: from ``<root>/<folder>/`` when an earlier
    process kept one, else ``ask()``, kept there when it is not None.

    ``kind`` names the question (a file-name prefix: letters, digits, ``-``); a kept
    answer larger than ``max_bytes``, or not ``valid``, is asked again and replaced.
    Returns None when ``ask`` does (not kept). Never raises for the store: an
    unreadable or unwritable one is skipped.
    """
    digest = hashlib.sha256("\0".join([kind, *identity]).encode("utf-8", "surrogateescape"))
    path = root / folder / f"{kind}-{digest.hexdigest()[:32]}"
    try:
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= max_bytes:
            kept = path.read_text(encoding="utf-8")
            if valid(kept):
                return kept
    except (OSError, UnicodeDecodeError):
        pass
    answer = ask()
    if answer is not None:
        write_atomic(path, answer)
    return answer


def write_atomic(path: Path, answer: str) -> None:
    """Write ``answer`` to ``path`` atomically (a reader sees the whole text or the file
    as it was), best effort: an error leaves ``path`` as it was and no temporary file
    (:func:`llm4cov.util.files.write_text_atomic`, its ``OSError`` ignored)."""
    with contextlib.suppress(OSError):
        write_text_atomic(path, answer)
