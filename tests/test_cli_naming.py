"""One way to name things on the command line (issue 23, item 7): the RTL positionally
or with --rtl in sim, gen and formal; --version; the task id from the DUT module; the
instance-name hint of sim."""

from __future__ import annotations

import shutil

import pytest
import yaml

from conftest import EXAMPLES
from llm4cov.cli.app import main
from llm4cov.tasks.loaders import task_from_dir


def test_version(capsys):
    from importlib.metadata import version

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith(f"llm4cov {version('llm4cov')} (verilator ")


def gen_task_id(capsys, *args: str) -> str:
    assert main(["gen", *args, "--out", "unused", "--print-config"]) == 0
    return yaml.safe_load(capsys.readouterr().out)["tasks"]


@pytest.mark.parametrize("command", ["sim", "gen", "formal"])
def test_the_rtl_is_named_positionally_or_with_rtl(command, capsys, tmp_path):
    rtl = str(EXAMPLES / "alu_comb")
    extra = {"sim": ["--tb", "tb.sv"], "gen": ["--out", str(tmp_path)], "formal": []}[command]
    for spelling in ([rtl], ["--rtl", rtl], [rtl, "--rtl", rtl]):
        assert main([command, *spelling, *extra, "--print-config"]) == 0, spelling
    capsys.readouterr()
    missing = str(tmp_path / "nowhere")
    for spelling in ([missing], ["--rtl", missing]):  # the RTL is read either way
        assert main([command, *spelling, *extra, "--print-config"]) == 2
        assert "nowhere: no such file or directory" in capsys.readouterr().err
    assert main([command, rtl, "--rtl", str(EXAMPLES / "hier_acc"), *extra]) == 2
    assert "the RTL is named twice" in capsys.readouterr().err


def test_formal_warmup_is_still_a_subcommand(capsys):
    assert main(["formal", "warmup", "--help"]) == 0
    assert "Compile the WebAssembly formal tools once" in capsys.readouterr().out


def test_the_task_id_names_the_dut_module_not_the_folder(tmp_path, capsys):
    shutil.copytree(EXAMPLES / "traffic_fsm", tmp_path / "rtl")  # a repo's usual folder
    assert task_from_dir(tmp_path / "rtl").id == "local/traffic_light"
    assert gen_task_id(capsys, str(tmp_path / "rtl")) == "local/traffic_light"
    assert gen_task_id(capsys, str(EXAMPLES / "hier_acc"), "--top", "sat_add") == "local/sat_add"


@pytest.mark.requires_verilator
@pytest.mark.parametrize("as_task", [False, True])
def test_sim_names_the_flags_that_fix_an_instance_name_mismatch(as_task, tmp_path, capsys):
    tb = tmp_path / "tb.sv"
    tb.write_text("module tb; alu4 uut(); initial $finish; endmodule\n")
    where = ["--rtl", str(EXAMPLES / "alu_comb")]
    if as_task:
        tasks = tmp_path / "tasks.jsonl"
        tasks.write_text(task_from_dir(EXAMPLES / "alu_comb").model_dump_json() + "\n")
        where = ["--tasks", str(tasks), "--id", "local/alu4"]
    assert main(["sim", *where, "--tb", str(tb)]) == 1
    out = capsys.readouterr().out
    fix = "rerun with --any-instance" if as_task else "rerun with --instance uut, or " \
        "--any-instance"
    assert (f"- note: tb.sv instantiates alu4 as \\`uut\\`, the task requires \\`dut\\`: "
            f"{fix} to accept any instance name") in out
