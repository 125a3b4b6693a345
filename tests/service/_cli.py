"""Run ``diwaniya …`` in the test process: the CLI's own ``main``, its exit code and output.

A subprocess pays the interpreter and import start-up on every call (seconds
on a loaded machine); ``main`` reads the same environment through
``Settings``, so only what is process-wide (a real exec, ``sys.modules``) still
needs a subprocess test (see test_cli.py).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from service.cli import main


@dataclass(frozen=True)
class CliRun:
    returncode: int
    stdout: str
    stderr: str


def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
            env: dict[str, str], *argv: str) -> CliRun:
    """``main(argv)`` with ``env`` set (DATABASE_URL unset unless given)."""
    with monkeypatch.context() as m:
        for name in ("DATABASE_URL", "DIWANIYA_DATABASE_URL"):
            m.delenv(name, raising=False)
        for name, value in env.items():
            m.setenv(name, value)
        capsys.readouterr()  # drop anything printed before
        code = main(list(argv))
        out, err = capsys.readouterr()
    return CliRun(code, out, err)


def run_cli_with_environ(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                         environ: dict[str, str], *argv: str) -> CliRun:
    """``main(argv)`` with exactly ``environ`` as the environment (as a subprocess's ``env=``)."""
    with monkeypatch.context() as m:
        _set_environ(m, environ)
        capsys.readouterr()  # drop anything printed before
        code = main(list(argv))
        out, err = capsys.readouterr()
    return CliRun(code, out, err)


async def run_cli_in_thread(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                            environ: dict[str, str], *argv: str) -> CliRun:
    """``main(argv)`` with exactly ``environ`` as the environment, from an async test.

    In a thread: ``main`` runs its own ``asyncio.run``, beside the test's loop
    (where the server under test may be serving it).
    """
    with monkeypatch.context() as m:
        _set_environ(m, environ)
        capsys.readouterr()  # drop anything printed before
        code = await asyncio.to_thread(main, list(argv))
        out, err = capsys.readouterr()
    return CliRun(code, out, err)


def _set_environ(m: pytest.MonkeyPatch, environ: dict[str, str]) -> None:
    for name in set(os.environ) - set(environ):
        m.delenv(name)
    for name, value in environ.items():
        m.setenv(name, value)


def run_probe(code: str, data_dir: Path) -> subprocess.CompletedProcess[str]:
    """``python -c code`` in a fresh interpreter (for what is process-wide:
    ``sys.modules``), on the SQLite default under ``data_dir`` (DATABASE_URL unset)."""
    env = {**os.environ, "DIWANIYA_DATA_DIR": str(data_dir)}
    env.pop("DATABASE_URL", None)
    env.pop("DIWANIYA_DATABASE_URL", None)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)
