"""The diwaniya-client distribution built and installed alone into a fresh virtual environment.

Shared by tests/client/test_distribution.py and bench/client_import.py. The
venv has no pip of its own (``venv --without-pip``); this interpreter's pip
installs into it (``pip --python``): the built wheel with ``--no-deps``, then
its three requirements, everything constrained to the versions installed here,
so pip's cache or the configured indexes serve them without a resolve against
new releases.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLIENT = ROOT / "client"
DEPS = ("grpcio", "protobuf", "grpcio-status")


def _pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args],
                   check=True, timeout=600)


def build_wheel(out: Path) -> Path:
    """``client/`` as a wheel (no build isolation: setuptools and wheel are in [dev])."""
    _pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(CLIENT))
    (wheel,) = out.glob("diwaniya_client-*.whl")
    return wheel


def fresh_client_venv(where: Path) -> Path:
    """A venv holding diwaniya-client and its dependencies only; returns its python."""
    wheel = build_wheel(where / "wheels")
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    python = venv / "bin" / "python"
    _pip("--python", str(python), "install", "--no-deps", str(wheel))
    # Every package the resolver may pick (the three and theirs, e.g.
    # googleapis-common-protos) is held to the version installed here.
    constraints = where / "constraints.txt"
    constraints.write_text("".join(
        f"{d.metadata['Name']}=={d.version}\n" for d in metadata.distributions()
        if d.metadata["Name"] and not d.metadata["Name"].lower().startswith("diwaniya")),
        encoding="utf-8")
    pins = [f"{name}=={metadata.version(name)}" for name in DEPS]
    _pip("--python", str(python), "install", "-c", str(constraints), *pins)
    return python




def import_seconds(python: Path, module: str = "diwaniya.client") -> float:
    """Cumulative import time of ``module`` in a fresh interpreter (``-X importtime``)."""
    proc = subprocess.run([str(python), "-X", "importtime", "-c", f"import {module}"],
                          capture_output=True, text=True, check=True, timeout=60, cwd="/")
    pattern = re.compile(rf"import time:\s+\d+ \|\s+(\d+) \| {re.escape(module)}$", re.M)
    match = pattern.search(proc.stderr)
    if not match:
        raise AssertionError(f"no importtime line for {module}:\n{proc.stderr[-2000:]}")
    return int(match.group(1)) / 1e6
