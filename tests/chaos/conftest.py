"""Real processes for fault tests: ``diwaniya serve`` subprocesses and a private PostgreSQL.

The private PostgreSQL is initdb'd into a temporary folder on a free port, so a
test may restart or kill it without touching the shared instance other tests
(and other developers) use. When running as root it runs as the ``postgres``
OS user (initdb refuses root).
"""

from __future__ import annotations

import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import _unavailable

PG_BIN = Path(os.environ.get("DIWANIYA_TEST_PG_BIN", "/usr/lib/postgresql/15/bin"))
REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 90.0  # a cold `serve` loads the dialect model; the machine is shared


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PrivatePostgres:
    """A throwaway PostgreSQL 15 cluster; ``restart`` drops every session, as a failover does."""

    root: Path
    port: int
    _as: list[str] = field(default_factory=list)

    @property
    def dsn(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _ctl(self, *args: str, timeout: float = 60.0) -> None:
        cmd = [*self._as, str(PG_BIN / "pg_ctl"), "-D", str(self.root / "data"), *args]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"pg_ctl {args[0]} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
                " -c max_connections=200")
        self._ctl("-o", opts, "-l", str(self.root / "log"), "-w", "start")

    def restart(self) -> None:
        """Fast shutdown (every backend terminated, as in a failover) and start again."""
        self._ctl("-m", "fast", "-w", "stop")
        self.start()

    def stop(self) -> None:
        self._ctl("-m", "immediate", "-w", "stop")


@pytest.fixture
def private_pg() -> Iterator[PrivatePostgres]:
    if not (PG_BIN / "initdb").exists():
        _unavailable(f"PostgreSQL binaries not found in {PG_BIN}")
    # Not pytest's tmp_path: it is private to root, and the server runs as postgres.
    root = Path(tempfile.mkdtemp(prefix="diwaniya-pg-"))
    run_as: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
        run_as = ["runuser", "-u", "postgres", "--"]
    done = subprocess.run(
        [*run_as, str(PG_BIN / "initdb"), "-D", str(root / "data"), "-U", "postgres",
         "--auth=trust", "--no-sync"],
        capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        _unavailable(f"initdb failed: {done.stderr}")
    pg = PrivatePostgres(root, free_port(), run_as)
    try:
        pg.start()
        yield pg
    finally:
        try:
            pg.stop()
        except Exception:  # already stopped by the test
            pass
        shutil.rmtree(root, ignore_errors=True)


class ServeProcess:
    """``python -m service serve`` in its own process group, on a port it reports."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self._env = env
        self._log = log
        self.proc: subprocess.Popen[str] | None = None
        self.target = ""

    def start(self, *, until: tuple[str, ...] = ("diwaniya listening on ",),
              args: tuple[str, ...] = ()) -> str:
        """Start it and wait for the first line starting with one of ``until``; its
        target (the last word). ``args`` are added to ``serve``'s (e.g. --workers 2)."""
        # One process unless the test asks for more: without it `serve` starts a
        # supervisor and a worker per CPU (tests/service/test_workers.py tests those),
        # three processes' start-up CPU here, and kill()/stop() signal the whole group.
        env = {**os.environ, "DIWANIYA_WORKERS": "1", **self._env}
        if "DATABASE_URL" not in self._env:  # SQLite: never inherit a database from the shell
            env.pop("DATABASE_URL", None)
            env.pop("DIWANIYA_DATABASE_URL", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--listen", "127.0.0.1:0", *args],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            assert self.proc is not None and self.proc.stdout is not None
            with self._log.open("a", encoding="utf-8") as log:
                for line in self.proc.stdout:
                    log.write(line)
                    log.flush()
                    lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None:
                self.kill()
                raise RuntimeError(f"serve did not start; see {self._log}:\n"
                                   f"{self._log.read_text(encoding='utf-8')[-3000:]}")
            if line.startswith(until):
                self.target = line.split()[-1]
                return self.target

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, as when the node dies."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def serve_processes(tmp_path: Path) -> Iterator[list[ServeProcess]]:
    """Processes a test starts are appended here and killed at the end whatever happens."""
    started: list[ServeProcess] = []
    yield started
    for proc in started:
        proc.kill()


def serve_env(tmp_path: Path, *, dsn: str | None, model_base_url: str) -> dict[str, str]:
    env = {"DIWANIYA_DATA_DIR": str(tmp_path / "data"), "DIWANIYA_MODEL_BASE_URL": model_base_url,
           "DIWANIYA_DRAIN_DELAY_S": "0", "DIWANIYA_DRAIN_GRACE_S": "2",
           "DIWANIYA_MODEL_TIMEOUT_S": "30"}
    if dsn:
        env["DATABASE_URL"] = dsn
    return env
