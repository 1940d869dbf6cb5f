"""Ctrl-C (SIGINT to the real ``llm4cov`` process) stops a command within a few seconds
with exit code 130 and keeps every finished piece of work (issue 23, item 8).

The bounds on seconds here are generous (tens of seconds, the machine is loaded); what
they catch is a process that waits for a model answer or a thread to finish (minutes)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import FIXTURES
from support.replay_server import ReplayServer

CLI = "from llm4cov.cli.app import main; raise SystemExit(main())"
TB = (FIXTURES / "mux2_partial_tb.sv").read_text()


def wait_until(check, proc: subprocess.Popen, what: str, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert proc.poll() is None, f"ended (code {proc.returncode}) before {what}: " \
            f"{proc.stderr.read() if proc.stderr else ''}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def interrupt(proc: subprocess.Popen, timeout_s: float = 60.0) -> tuple[int, float, str]:
    """SIGINT ``proc``; its exit code, the seconds it took to end, its stderr."""
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, time.monotonic() - sent, err


@pytest.mark.requires_verilator
@pytest.mark.heavy
def test_ctrl_c_while_the_model_stalls_keeps_the_finished_round(tmp_path):
    answered = threading.Event()
    release = threading.Event()

    def select(body: dict) -> str:
        if answered.is_set():  # round 2: the model server stalls
            release.wait(300)
        answered.set()
        return f"```systemverilog\n{TB}```"

    out = tmp_path / "run"
    with ReplayServer([], select=select) as server:
        proc = subprocess.Popen(
            [sys.executable, "-c", CLI, "gen", str(FIXTURES / "mux2"), "--out", str(out),
             "--model", "recorded-model", "--base-url", server.base_url, "--rounds", "3",
             "--no-html"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_until(lambda: len(server.requests) == 2, proc, "the round-2 request")
            code, seconds, err = interrupt(proc)
        finally:
            release.set()
    assert code == 130, err
    assert seconds < 30, f"took {seconds:.1f} s to stop"
    assert "interrupted: 1 finished round(s) kept in" in err
    round_1 = json.loads((out / "rounds" / "round_1.json").read_text())
    assert round_1["round"] == 1 and round_1["testbench"].strip() == TB.strip()
    assert round_1["observation"]["status"] == "success"
    assert (out / "tb.sv").read_text().strip() == TB.strip()


def test_a_blocked_worker_thread_does_not_hold_the_process(tmp_path):
    """The forced exit: a command whose clean-up waits and whose worker thread never
    returns still ends with 130 after the grace period, saying what it kept."""
    script = tmp_path / "blocked.py"
    script.write_text(
        "import sys, threading, time\n"
        "from llm4cov.cli.interrupt import explained, run_as_main\n"
        "def command():\n"
        "    threading.Thread(target=time.sleep, args=(600,)).start()  # joined at exit\n"
        "    with explained(lambda: 'interrupted: 3 rows kept'):\n"
        "        try:\n"
        "            print('ready', flush=True)\n"
        "            time.sleep(600)\n"
        "        finally:\n"
        "            time.sleep(600)  # a clean-up that waits (a pool's shutdown)\n"
        "    return 0\n"
        "sys.exit(run_as_main(command))\n")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "ready\n"
    code, seconds, err = interrupt(proc)
    assert code == 130 and seconds < 30
    assert err == "interrupted: 3 rows kept\nerror: interrupted\n"  # what it kept, first


@pytest.mark.slow
@pytest.mark.requires_train
def test_ctrl_c_stops_a_local_model_mid_answer(tmp_path):
    """gen with a local (tiny random) model asked for 30,000 tokens: the answer would
    take many minutes on a CPU; Ctrl-C stops it at the next token."""
    pytest.importorskip("torch")
    from llm4cov.train.tiny import build_tiny_checkpoint, texts_of

    ckpt = build_tiny_checkpoint(tmp_path / "ckpt", texts_of(FIXTURES / "train" /
                                                             "stage.jsonl"))
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-c", CLI, "gen", str(FIXTURES / "mux2"), "--out", str(out),
         "--model", f"local:{ckpt}", "--max-tokens", "30000", "--rounds", "2",
         "--temperature", "1.0", "--no-html"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # gen makes OUT/rounds once the model is loaded, right before round 1 starts
    wait_until((out / "rounds").is_dir, proc, "the model to be loaded")
    time.sleep(2)  # the model is writing its answer
    code, seconds, err = interrupt(proc)
    assert code == 130, err
    assert seconds < 30, f"took {seconds:.1f} s to stop"
    assert "interrupted: 0 finished round(s) kept" in err
    assert not Path(out / "tb.sv").exists()
