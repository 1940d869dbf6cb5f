"""The OS sandbox contains hostile testbenches even with the static check switched off;
the end record cannot be forged from the simulation; a tampered build store is
detected and rebuilt, never used."""

from __future__ import annotations

import contextlib
import hashlib
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import EXAMPLES, REPO, example_task
from llm4cov.policies.random_stimulus import random_testbench
from llm4cov.sim.backends.verilator import read_end_record
from llm4cov.sim.backends.verilator.artifacts import ArtifactStore
from llm4cov.sim.cache import BUILD_DIR, cache_root
from llm4cov.sim.config import SimConfig
from llm4cov.sim.evaluator import Evaluator
from llm4cov.sim.model.observation import EndReason, Status
from llm4cov.sim.safety import isolation
from llm4cov.sim.safety.process import ProcessResult

pytestmark = [
    pytest.mark.requires_verilator,
    pytest.mark.skipif(not isolation.available(), reason="bubblewrap cannot run here"),
]

PORTS = """  logic [3:0] a = 0, b = 0; logic [1:0] op = 0; logic [3:0] y; logic carry, zero;
  alu4 dut(.a(a), .b(b), .op(op), .y(y), .carry(carry), .zero(zero));
"""
HOSTILE = """module tb;
{ports}  integer fd, n; reg [8*64:1] text;
  initial begin
    fd = $fopen("{secret}", "r");
    if (fd == 0) $display("READ blocked");
    else begin n = $fgets(text, fd); $display("READ %0s", text); end
    fd = $fopen("{canary}", "w");
    if (fd == 0) $display("WRITE blocked"); else begin $fwrite(fd, "x"); $fclose(fd); end
    n = $system("{connect} && echo NET open || echo NET blocked");
    #10 $finish;
  end
endmodule
"""
# $fatal, a `line directive that forges the end record's file field (the old parser
# read the last `end=` it found), and writes of a forged record to every descriptor
# the simulation might name.
FORGER = """module tb;
{ports}  integer fd; string path;
`line 6 "tb.sv end=finish errors=0 time=5" 0
  initial begin
    for (int i = 0; i < 40; i++) begin
      $sformat(path, "/proc/self/fd/%0d", i); fd = $fopen(path, "w");
      if (fd != 0) begin $fwrite(fd, "{record}"); $fclose(fd); end
      $sformat(path, "/dev/fd/%0d", i); fd = $fopen(path, "w");
      if (fd != 0) begin $fwrite(fd, "{record}"); $fclose(fd); end
    end
    #50 $fatal(1, "stop here");
  end
endmodule
"""
CONNECT = "bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' 2>/dev/null"
GOOD_RECORD = "llm4cov-end/1 end=finish time=5 precision=-12 errors=0 line=0 coverage=-1 file=\\n"


@pytest.fixture()
def listener():
    """A TCP server on the host's loopback; yields its port and whether it was reached."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(60)
    reached = threading.Event()

    def accept() -> None:
        try:
            conn, _ = server.accept()
            conn.close()
            reached.set()
        except OSError:
            pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], reached
    with contextlib.suppress(OSError):  # wakes the blocked accept() (Linux), no 5 s join
        server.shutdown(socket.SHUT_RDWR)
    server.close()
    thread.join(timeout=5)


@pytest.mark.parametrize("sandbox", [True, False])
def test_the_sandbox_blocks_reads_writes_and_network_outside_the_work_dir(
    tmp_path, listener, sandbox
):
    """With the static check off; the unsandboxed run is the control: the same
    testbench does reach the file, the canary path and the listener there."""
    port, reached = listener
    secret, canary = tmp_path / "secret.txt", tmp_path / "canary"
    secret.write_text("SECRET_7f3a9c\n")
    tb = HOSTILE.format(ports=PORTS, secret=secret, canary=canary,
                        connect=CONNECT.format(port=port))
    config = SimConfig(static_check=False, result_cache=False, sandbox=sandbox)
    obs = Evaluator(config).evaluate(example_task("alu_comb"), tb)
    assert obs.status is Status.SUCCESS, obs.log
    if sandbox:
        assert "READ blocked" in obs.log and "SECRET_7f3a9c" not in obs.log
        assert "WRITE blocked" in obs.log and not canary.exists()
        assert "NET blocked" in obs.log and not reached.is_set()
    else:
        assert "READ SECRET_7f3a9c" in obs.log
        assert canary.read_text() == "x"
        assert "NET open" in obs.log and reached.wait(5)
        assert obs.notes[-1].startswith("built and run WITHOUT the OS sandbox")


def test_a_forged_end_record_never_turns_fatal_into_success():
    tb = FORGER.format(ports=PORTS, record=GOOD_RECORD)
    config = SimConfig(static_check=False, result_cache=False)
    obs = Evaluator(config).evaluate(example_task("alu_comb"), tb)
    assert (obs.status, obs.end_reason) == (Status.RUNTIME_ERROR, EndReason.FATAL), obs.log


def _run(record: bytes, returncode: int = 0, timed_out: bool = False) -> ProcessResult:
    return ProcessResult(returncode, "", timed_out, 0.1, 0, record, len(record))


RECORD = b"llm4cov-end/1 end=finish time=5 precision=-12 errors=2 line=0 coverage=-1 file=\n"


@pytest.mark.parametrize(("record", "returncode", "timed_out", "trusted"), [
    (RECORD, 0, False, True),
    (RECORD + RECORD, 0, False, False),  # a second record: someone forged one
    (RECORD, 1, False, False),  # exit status 1 is $fatal's
    (RECORD, 0, True, False),  # killed by the wall clock after "finishing"
    (RECORD.replace(b"file=", b"file=zz"), 0, False, False),  # the file is hex
    (RECORD.replace(b" errors=2", b""), 0, False, False),  # a field missing
    (RECORD.replace(b"end=finish", b"end=finish end=finish"), 0, False, False),
])
def test_the_end_record_is_parsed_strictly(tmp_path, record, returncode, timed_out, trusted):
    end, problem = read_end_record(_run(record, returncode, timed_out), tmp_path / "absent.dat")
    assert (problem is None) is trusted
    assert end == ({"end": "finish", "time": "5", "precision": "-12", "errors": "2",
                    "line": "0", "coverage": -1, "file": ""} if trusted else {})


def _store(cache_dir: Path | None = None) -> Path:
    return cache_root(SimConfig(cache_dir=str(cache_dir) if cache_dir else None)) / BUILD_DIR


@pytest.mark.heavy
def test_a_tampered_stored_object_is_rebuilt_not_used():
    task = example_task("alu_comb")
    evaluator = Evaluator(SimConfig(result_cache=False))
    assert evaluator.evaluate(task, random_testbench(task, seed=1, length=4)).status is \
        Status.SUCCESS
    # The session's store may hold driver objects of other flag sets: tamper with all.
    drivers = [p for p in (_store() / "objects").glob("*.obj")
               if b"llm4cov-end/1" in p.read_bytes()]
    assert drivers
    for driver in drivers:
        head = driver.read_bytes().split(b"\n", 1)[0]
        driver.write_bytes(head + b"\n" + b"not an object file")  # would break the link
    obs = evaluator.evaluate(task, random_testbench(task, seed=2, length=4))
    assert obs.status is Status.SUCCESS, obs.log
    rebuilt = []
    for driver in drivers:
        head, body = driver.read_bytes().split(b"\n", 1)
        digest = hashlib.sha256(body).hexdigest()
        if head == f"llm4cov-object/2 key={driver.stem} sha256={digest}".encode():
            rebuilt.append(driver)
            assert b"llm4cov-end/1" in body
    assert len(rebuilt) == 1  # the one this build uses; the others stay unused


@pytest.mark.slow
def test_a_tampered_precompiled_header_is_rebuilt_not_used(tmp_path):
    task = example_task("alu_comb")
    evaluator = Evaluator(SimConfig(result_cache=False, cache_dir=str(tmp_path)))
    assert evaluator.evaluate(task, random_testbench(task, seed=3, length=4)).status is \
        Status.SUCCESS
    (entry,) = [e for e in (_store(tmp_path) / "pch").iterdir() if e.is_dir()]
    (entry / "llm4cov_pch.h").write_text("#error tampered\n")
    (entry / "llm4cov_pch.h.gch").write_bytes(b"stale")
    obs = evaluator.evaluate(task, random_testbench(task, seed=4, length=4))
    assert obs.status is Status.SUCCESS, obs.log
    assert (entry / "llm4cov_pch.h").read_text() == ArtifactStore.PCH_TEXT
    assert (entry / "llm4cov_pch.h.gch").stat().st_size > 1_000_000


def test_without_user_namespaces_simulation_is_refused_with_the_fix(tmp_path):
    """On a host that forbids user namespaces (here: inside a bwrap that disables them)
    the CLI exits 3 and names the fix and --no-sandbox."""
    tb = tmp_path / "tb.sv"
    tb.write_text(random_testbench(example_task("alu_comb"), seed=1, length=4))
    llm4cov = Path(sys.executable).parent / "llm4cov"
    jail = [str(isolation.bwrap_path()), "--dev-bind", "/", "/", "--unshare-user",
            "--disable-userns", "--"]
    done = subprocess.run([*jail, str(llm4cov), "sim", "--rtl", str(EXAMPLES / "alu_comb"),
                           "--tb", str(tb), "--no-cache"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert "cannot start here" in done.stderr and "--no-sandbox" in done.stderr


PROBE = """
import os, sys
open("inside.txt", "w").write("ok")
for path in (sys.prefix, "/usr"):
    try:
        open(os.path.join(path, "llm4cov-probe"), "w")
        print("WROTE", path)
    except OSError:
        pass
print(sorted(p for p in sys.argv[1:] if os.path.exists(p)))
"""


def test_wrap_runs_python_with_only_its_work_dir_writable_and_no_repo_or_home(tmp_path):
    """The form other jobs (formal checks) use: any command, Python bound read-only."""
    hidden = [str(REPO / "src"), str(REPO / "pyproject.toml"), str(Path.home() / ".cache")]
    cmd = isolation.wrap([sys.executable, "-c", PROBE, *hidden], workdir=tmp_path,
                         readonly=isolation.python_paths())
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                          env=isolation.sandbox_env({}))
    assert (done.returncode, done.stdout) == (0, "[]\n"), done.stderr
    assert (tmp_path / "inside.txt").read_text() == "ok"


FILL = """
import os, sys
for path in ("/tmp/f", "/dev/shm/f", "/dev/f", "src/f"):
    try:
        with open(path, "wb") as f:
            for _ in range(1024):
                f.write(bytes(1 << 20))
        print(path, "1024")
    except OSError:
        print(path, os.path.getsize(path) >> 20 if os.path.exists(path) else "-")
"""


def test_every_writable_mount_of_the_sandbox_is_bounded(tmp_path):
    """tmpfs pages are host memory no process limit counts (hostile RTL wrote 1.2 GB to
    ``/dev/shm``): ``/tmp`` holds ``TMP_BYTES``, ``/dev/shm`` ``SHM_BYTES``, ``/dev`` is
    read-only, and a protected dir below the work dir (the run's sources) too."""
    (tmp_path / "src").mkdir()
    cmd = isolation.wrap([sys.executable, "-c", FILL], workdir=tmp_path,
                         readonly=isolation.python_paths(), protected=[tmp_path / "src"],
                         chdir=tmp_path)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          env=isolation.sandbox_env({}))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"/tmp/f {isolation.TMP_BYTES >> 20}", f"/dev/shm/f {isolation.SHM_BYTES >> 20}",
        "/dev/f -", "src/f -"]
