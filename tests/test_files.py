"""``util.files.write_text_atomic``: the whole new text or the old file, never a part."""

from __future__ import annotations

import os
import stat

import pytest

from llm4cov.util.files import write_text_atomic


def test_the_text_replaces_the_file_whole_with_the_umask_permissions(tmp_path):
    path = tmp_path / "sub" / "run.json"
    write_text_atomic(path, "old\n")
    write_text_atomic(path, "n\udcffew\n", errors="surrogateescape")
    assert path.read_bytes() == b"n\xffew\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["run.json"]
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "tb.sv"
    path.write_text("kept\n")
    with pytest.raises(UnicodeEncodeError):
        write_text_atomic(path, "lone \udcff surrogate")  # strict: cannot be encoded
    assert path.read_text() == "kept\n"
    assert [p.name for p in tmp_path.iterdir()] == ["tb.sv"]
    with pytest.raises(OSError):
        write_text_atomic(path / "under_a_file", "x")
