"""One writer per run directory (llm4cov.util.rundir): a second process on a bench,
synth or pipeline directory that another live process is writing is refused with the
owner's pid and writes nothing; the lock goes with its owner (exit, kill), is not kept
by the workers it forks, and nests within one process."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from llm4cov.cli.app import main
from llm4cov.policies import get_policy
from llm4cov.synth.config import stage_preset
from llm4cov.synth.engine import SynthRun
from llm4cov.synth.records import Role
from llm4cov.util.rundir import LOCK_FILE, RunDirBusy, exclusive

REPO = Path(__file__).resolve().parents[1]
HOLD = ("import sys\nfrom llm4cov.util.rundir import exclusive\n"
        "with exclusive(sys.argv[1]):\n    print('held', flush=True)\n    sys.stdin.read()\n")


class Holder:
    """A real second process that holds ``run_dir`` until it is released or killed."""

    def __init__(self, run_dir: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", HOLD, str(run_dir)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "held\n"

    def release(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        assert self.proc.wait(timeout=60) == 0


def _can_take(run_dir: Path) -> bool:
    """Whether a fresh process gets ``run_dir`` now."""
    code = ("import sys\nfrom llm4cov.util.rundir import exclusive, RunDirBusy\n"
            "try:\n    with exclusive(sys.argv[1]): pass\n"
            "except RunDirBusy: sys.exit(7)\n")
    rc = subprocess.run([sys.executable, "-c", code, str(run_dir)], timeout=60).returncode
    assert rc in (0, 7)
    return rc == 0


def test_a_held_directory_is_refused_with_the_owners_pid_until_it_ends(tmp_path):
    run_dir = tmp_path / "run"
    holder = Holder(run_dir)
    busy = rf"in use by another llm4cov process \(pid {holder.proc.pid}\).*rerun the same"
    with pytest.raises(RunDirBusy, match=busy), exclusive(run_dir):
        pass
    holder.release()
    with exclusive(run_dir):
        with exclusive(run_dir / ".." / "run"):  # nested, same directory: allowed
            pass
        assert not _can_take(run_dir)  # still held after the nested block
    assert (run_dir / LOCK_FILE).read_text() == f"{os.getpid()}\n"  # the last owner
    assert _can_take(run_dir)


def test_a_killed_owner_leaves_no_stale_lock(tmp_path):
    holder = Holder(tmp_path)
    holder.proc.kill()
    holder.proc.wait(timeout=60)
    assert (tmp_path / LOCK_FILE).exists() and _can_take(tmp_path)


def test_forked_workers_do_not_keep_the_lock(tmp_path):
    with exclusive(tmp_path):
        child = os.fork()
        if child == 0:  # a simulation worker forked while the run holds the directory
            time.sleep(30)
            os._exit(0)
    try:
        assert _can_take(tmp_path)  # the owner let go; its live fork holds nothing
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)


def test_bench_and_pipeline_refuse_a_busy_directory_and_write_nothing(tmp_path, capsys):
    out = tmp_path / "bench"
    holder = Holder(out)
    try:
        assert main(["bench", "--tasks", str(REPO / "examples/pipeline_smoke_tasks.jsonl"),
                     "--model", "random", "--baselines", "", "--out", str(out),
                     "--no-progress"]) == 2
        assert f"in use by another llm4cov process (pid {holder.proc.pid})" in \
            capsys.readouterr().err
        assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE]
        pipeline = ["pipeline", "--config", str(REPO / "examples/pipeline_smoke.yaml"),
                    "--out", str(out)]
        assert main(pipeline) == 2
        assert "in use by another llm4cov process" in capsys.readouterr().err
        assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE]
    finally:
        holder.release()


def test_synthesis_refuses_a_busy_directory(tmp_path):
    holder = Holder(tmp_path)

    async def simulate(*_args, **_kwargs):
        raise AssertionError("a refused run simulates nothing")

    try:
        policy = get_policy("random")
        run = SynthRun(tmp_path, stage_preset(2), {Role.INTERMEDIATE: policy,
                                                   Role.TRANSITION: policy}, simulate)
        with pytest.raises(RunDirBusy, match=str(holder.proc.pid)):
            asyncio.run(run.run([]))
    finally:
        holder.release()
