"""The real SmolLM2-135M-Instruct end to end (slow; needs `llm4cov model get
smollm2-135m` done on this machine, skipped otherwise): in-process generation for
``llm4cov gen`` (writes a tb.sv), and the same model with int8 weights behind
``llm4cov model serve`` for ``--base-url``."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from llm4cov.cli.app import main
from llm4cov.models import is_fetched

pytestmark = [
    pytest.mark.slow,
    pytest.mark.requires_verilator,
    pytest.mark.skipif(not is_fetched("smollm2-135m"),
                       reason="run `llm4cov model get smollm2-135m` first"),
]
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "traffic_fsm"


def _round(out: Path) -> dict:
    return json.loads((out / "rounds" / "round_1.json").read_text())


def test_gen_with_the_model_name_runs_the_real_model(tmp_path):
    out = tmp_path / "run"
    assert main(["gen", str(EXAMPLE), "--out", str(out), "--model", "smollm2-135m",
                 "--rounds", "1", "--max-tokens", "256", "--temperature", "0"]) in (0, 1)
    record = _round(out)
    assert record["model"] == "smollm2-135m"
    assert record["completion_tokens"] > 0 and record["response"].startswith(
        "```systemverilog\n")
    # the acceptance path: an LLM-written tb.sv and its observation (the base model's
    # testbench echoes the DUT module, so it never simulates)
    assert (out / "tb.sv").read_text() == record["testbench"] and "module" in record["testbench"]
    assert record["observation"]["status"] in ("compile_error", "runtime_error", "success")
    assert json.loads((out / "run.json").read_text())["policy"]["backend"] == "transformers"


def test_gen_against_the_served_model(tmp_path):
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("llm4cov")), "model", "serve", "smollm2-135m",
         "--port", "0", "--dtype", "int8"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url = server.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        with urllib.request.urlopen(url + "/models", timeout=30) as answer:
            listed = json.loads(answer.read())["data"]
        assert [m["id"] for m in listed] == ["smollm2-135m"]
        out = tmp_path / "served"
        assert main(["gen", str(EXAMPLE), "--out", str(out), "--model", "smollm2-135m",
                     "--base-url", url, "--rounds", "1", "--max-tokens", "128",
                     "--temperature", "0"]) in (0, 1)
        record = _round(out)
        assert record["completion_tokens"] > 0 and record["response"].strip()
        assert json.loads((out / "run.json").read_text())["policy"]["base_url"] == url
    finally:
        server.terminate()
        server.wait(timeout=30)
