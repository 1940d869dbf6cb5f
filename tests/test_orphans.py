"""SIGKILL of ``llm4cov gen`` mid-build leaves no process behind, and the next run removes
the work dir the killed run left (``exec/local.py`` parent watch, ``sim/safety/workdirs.py``).

In this sandbox PID 1 does not reap, so killed processes stay as zombies: only
processes in another state count."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import FIXTURES
from llm4cov.sim.safety.workdirs import LOCK_NAME, PREFIX

pytestmark = pytest.mark.requires_verilator

POLL_S = 0.05
POLLS = 2400  # bounds every wait loop (at most 2 minutes per loop; no timing asserted)
LLM4COV = Path(sys.executable).with_name("llm4cov")


def _processes() -> dict[int, tuple[int, str, bytes]]:
    """``pid -> (parent pid, state, environ)`` of every process in ``/proc``."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone, or not ours to read
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        table[int(entry.name)] = (int(fields[1]), fields[0], environ)
    return table


class Tree:
    """The processes descended from ``root`` or carrying ``marker`` in their environment,
    remembered across polls (a killed parent's children get another parent)."""

    def __init__(self, root: int, marker: bytes) -> None:
        self.members = {root: 0}  # pid -> depth below root (marked ones count as 1)
        self.root, self.marker = root, marker

    def poll(self) -> dict[int, str]:
        """Update the members; return ``pid -> state`` of the live (non-zombie) ones."""
        table = _processes()
        grew = True
        while grew:
            grew = False
            for pid, (ppid, _, environ) in table.items():
                if pid in self.members:
                    continue
                if ppid in self.members:
                    self.members[pid] = self.members[ppid] + 1
                elif self.marker in environ:
                    self.members[pid] = 1
                else:
                    continue
                grew = True
        return {pid: table[pid][1] for pid in self.members
                if pid in table and table[pid][1] != "Z"}


# Rejected by the pyslang pre-check in a work dir, before any build: a cheap next run.
UNDECLARED_TB = """module tb;
  logic sel = 0, en = 0; logic [1:0] a = 0, b = 0; wire [1:0] y;
  mux2 dut (.sel(sel), .en(en), .a(a), .b(b), .y(y));
  initial begin sel = undeclared; $finish; end
endmodule
"""


def _llm4cov(tmp_path: Path, marker: str, *args: str) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(tmp_path), "LLM4COV_TEST_MARKER": marker}
    return subprocess.Popen([str(LLM4COV), *args, "--no-cache"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _workdirs(tmp_path: Path) -> list[Path]:
    return sorted(p for p in tmp_path.iterdir() if p.name.startswith(PREFIX))


ATTEMPTS = 5
"""A kill aimed mid-build can land just after the build released its work dir (the
``/proc`` scan that finds the build takes longer on a loaded machine): such an attempt
still checks that nothing survives, and the kill is tried again, in a fresh directory."""


def _kill_gen_mid_build(tmp_path: Path, marker: str) -> list[Path]:
    """Start ``llm4cov gen`` under ``tmp_path``, SIGKILL it once a worker's build runs,
    assert that no process of its tree survives, and return the work dirs it left."""
    main = _llm4cov(tmp_path, marker, "gen", str(FIXTURES / "mux2"), "--out",
                    str(tmp_path / "out"), "--rounds", "3")
    tree = Tree(main.pid, f"LLM4COV_TEST_MARKER={marker}".encode())
    building = False
    for _ in range(POLLS):  # until a worker's build (depth >= 2, in a work dir) runs
        live = tree.poll()
        if _workdirs(tmp_path) and any(tree.members[pid] >= 2 for pid in live):
            building = True
            break
        assert main.poll() is None, "gen ended before a build was seen"
        time.sleep(POLL_S)
    assert building  # (the static check's scratch dir may exist beside the work dir)

    main.send_signal(signal.SIGKILL)
    main.wait()
    for _ in range(POLLS):
        survivors = tree.poll()
        if not survivors:
            break
        time.sleep(POLL_S)
    assert survivors == {}
    return _workdirs(tmp_path)


def test_sigkill_mid_build_leaves_no_process_and_next_run_cleans_up(tmp_path):
    marker = f"orphan-test-{uuid.uuid4().hex}"
    root = tmp_path
    for attempt in range(ATTEMPTS):
        tmp_path = root / f"attempt{attempt}"
        tmp_path.mkdir()
        stale = _kill_gen_mid_build(tmp_path, marker)
        if stale:
            break
    assert stale, f"no kill in {ATTEMPTS} attempts landed while a work dir was in use"
    assert all((d / LOCK_NAME).exists() for d in stale)

    tb = tmp_path / "undeclared_tb.sv"
    tb.write_text(UNDECLARED_TB)
    next_run = _llm4cov(tmp_path, marker, "sim", "--rtl", str(FIXTURES / "mux2"), "--tb",
                        str(tb))
    assert next_run.wait() == 1  # the testbench does not compile
    assert _workdirs(tmp_path) == []
