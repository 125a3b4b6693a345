"""``diwaniya serve --workers N``: real processes sharing one port over one SQLite file.

The supervisor picks a real port for ``:0``, every child serves (the kernel
spreads connections over them), turns on one thread exclude each other across
processes, a killed child is replaced, SIGTERM drains them all, and a child
that cannot start stops the supervisor with the child's message and code.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from diwaniya.v1 import conversations_pb2 as pb
from service import DiwaniyaClient
from service.workers import cpu_quota_workers


# ------------------------------------------------------------ CPU quota
@pytest.mark.parametrize(("cpu_max", "affinity", "expected"), [
    ("200000 100000", 8, 2),     # a two-CPU limit on a big node
    ("150000 100000", 8, 2),     # 1.5 CPUs: the second process takes the half core
    ("50000 100000", 8, 1),      # under one CPU: one process
    ("max 100000", 4, 4),        # no limit: the usable CPUs
    ("800000 100000", 2, 2),     # a quota above the CPUs we may run on
])
def test_workers_from_cgroup_v2(cpu_max: str, affinity: int, expected: int) -> None:
    assert cpu_quota_workers(cpu_max=cpu_max, affinity=affinity) == expected


def test_workers_from_cgroup_v1(tmp_path: Path) -> None:
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("300000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert cpu_quota_workers(root=tmp_path, affinity=16) == 3
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert cpu_quota_workers(root=tmp_path, affinity=16) == 16


def test_workers_without_cgroup_files_use_affinity(tmp_path: Path) -> None:
    assert cpu_quota_workers(root=tmp_path) == len(os.sched_getaffinity(0))


# ------------------------------------------------------ real processes
def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(entry.name))
    return sorted(found)


def _connections_by_pid(port: int, pids: list[int]) -> dict[int, int]:
    """How many established server-side TCP sockets on ``port`` each pid holds."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                local_port = int(cols[1].rsplit(":", 1)[1], 16)
                if local_port == port and cols[3] == "01":  # 01: ESTABLISHED
                    inodes.add(cols[9])
    counts = {}
    for pid in pids:
        n = 0
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                n += 1
        counts[pid] = n
    return counts


class Served:
    """A running ``serve --workers 2``; its stderr is read as it comes (a test may
    outlive a pipe's buffer of log lines)."""

    def __init__(self, proc: subprocess.Popen[str], target: str) -> None:
        self.proc = proc
        self.target = target
        self.port = int(target.rsplit(":", 1)[1])
        self._err: list[str] = []
        self._pump = threading.Thread(target=self._read_stderr, daemon=True)
        self._pump.start()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._err.append(line)

    def log_so_far(self) -> str:
        """The warnings and errors written so far (while the processes still run)."""
        return "".join(line for line in list(self._err)
                       if '"ERROR"' in line or '"WARNING"' in line or "Traceback" in line)

    def stderr(self) -> str:
        """What the supervisor and its workers wrote to stderr, once they have exited."""
        self._pump.join(timeout=30)
        return "".join(self._err)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _start(tmp_path: Path, *extra: str, env_extra: dict[str, str] | None = None
           ) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "DIWANIYA_DATABASE_URL")}
    env.update({"DIWANIYA_DATA_DIR": str(tmp_path / "data"), "DIWANIYA_LISTEN": "127.0.0.1:0",
                "DIWANIYA_DRAIN_DELAY_S": "0", "DIWANIYA_DRAIN_GRACE_S": "5",
                **(env_extra or {})})
    return subprocess.Popen([sys.executable, "-m", "service", "serve", *extra], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def _running() -> Iterator[dict[str, Served]]:
    running: dict[str, Served] = {}
    yield running
    for served in running.values():
        served.stop()


@pytest.fixture
def two_workers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
                _running: dict[str, Served]) -> Served:
    """``serve --workers 2`` on SQLite, or on PostgreSQL when parametrized so.

    Shared by the tests of this module while it runs: three start-ups (~4 CPU-s)
    each time otherwise. The tests that end it (SIGTERM, SIGKILL) come last in their
    backend's XDIST_GROUPS group (tests/conftest.py); a test after one of them, or run
    alone, starts its own.
    """
    backend = getattr(request, "param", "sqlite")
    served = _running.get(backend)
    if served is not None and served.proc.poll() is None:
        return served
    extra = {"DATABASE_URL": request.getfixturevalue("pg_dsn")} if backend == "postgres" else {}
    proc = _start(tmp_path_factory.mktemp(f"workers-{backend}"), "--workers", "2",
                  env_extra=extra)
    line = proc.stdout.readline() if proc.stdout else ""
    if "listening on" not in line:
        proc.kill()
        pytest.fail(proc.stderr.read() if proc.stderr else line)
    target = line.strip().rsplit(" ", 1)[-1]
    assert not target.endswith(":0")
    served = _running[backend] = Served(proc, target)
    return served


async def _turn(client: DiwaniyaClient, text: str, *, user: str, thread_id: str = ""
                ) -> list[pb.TurnEvent]:
    return [e async for e in client.send(text, user_id=user, thread_id=thread_id)]


@pytest.mark.parametrize("two_workers", ["sqlite", "postgres"], indirect=True)
def test_every_worker_serves_and_one_thread_is_never_run_twice(two_workers: Served) -> None:
    children = _children(two_workers.proc.pid)
    assert len(children) == 2
    owner = f"w-{uuid.uuid4().hex[:8]}"  # the PostgreSQL database is shared by the session

    async def scenario() -> tuple[dict[int, int], list[object], pb.Thread, list[pb.ThreadSummary]]:
        # Separate channels are separate TCP connections, spread by SO_REUSEPORT.
        clients = [DiwaniyaClient(two_workers.target, own_connection=True) for _ in range(12)]
        try:
            firsts = await asyncio.gather(*(
                _turn(c, "السلام عليكم، عندي سؤال عن الطلب", user=f"{owner}-{i}")
                for i, c in enumerate(clients)))
            spread = _connections_by_pid(two_workers.port, children)
            # Everyone now writes to one thread at once, from both processes:
            # the SQLite lease lets exactly one turn run at a time.
            shared = firsts[0][-1].thread_id
            results: list[object] = []
            for round_ in range(3):  # a stale WAL snapshot once made this INTERNAL
                results += await asyncio.gather(*(
                    _turn(c, f"وين طلبي رقم {round_}-{i}؟", user=f"{owner}-0",
                          thread_id=shared)
                    for i, c in enumerate(clients)), return_exceptions=True)
            thread = await clients[0].get_thread(shared, user_id=f"{owner}-0")
            listed = await clients[0].list_threads(user_id=f"{owner}-0")
            return spread, results, thread, list(listed.threads)
        finally:
            await asyncio.gather(*(c.close() for c in clients))

    try:
        spread, results, thread, listed = asyncio.run(scenario())
    except grpc.aio.AioRpcError as exc:
        # Once (1 full run in ~9, session 7) a first turn got INTERNAL here, never
        # reproduced alone: fail with the servers' own account of it.
        pytest.fail(f"{exc.code()}: {exc.details()}\nserver log:\n{two_workers.log_so_far()}")
    assert all(n > 0 for n in spread.values()), spread  # both processes hold connections
    done = [r for r in results if isinstance(r, list)]
    refused = [r for r in results if not isinstance(r, list)]
    assert done, refused
    assert all(isinstance(r, grpc.aio.AioRpcError)
               and r.code() == grpc.StatusCode.ABORTED for r in refused), refused
    # Nothing lost, nothing doubled: the first turn plus every completed one.
    assert len(thread.messages) == 2 * (1 + len(done))
    user_texts = [m.text for m in thread.messages if m.role == "user"]
    assert len(set(user_texts)) == len(user_texts)
    assert listed[0].turn_count == 1 + len(done)


@pytest.mark.parametrize("two_workers", ["sqlite"], indirect=True)
def test_a_killed_worker_is_replaced_and_sigterm_drains_all(two_workers: Served) -> None:
    before = _children(two_workers.proc.pid)
    os.kill(before[0], signal.SIGKILL)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        now = _children(two_workers.proc.pid)
        if len(now) == 2 and before[0] not in now:
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"worker not replaced: {before} → {_children(two_workers.proc.pid)}")

    async def still_serving() -> list[str]:
        async with DiwaniyaClient(two_workers.target) as client:
            events = await _turn(client, "هلا والله", user="k1")
            return [e.WhichOneof("event") for e in events]

    # The replacement may still be starting: retry on UNAVAILABLE for a bounded time.
    for _ in range(60):
        try:
            kinds = asyncio.run(still_serving())
            break
        except grpc.aio.AioRpcError as exc:
            if exc.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            time.sleep(0.5)
    assert kinds[-1] == "turn_completed"
    children = _children(two_workers.proc.pid)
    two_workers.proc.send_signal(signal.SIGTERM)
    code = two_workers.proc.wait(60)
    err = two_workers.stderr()
    assert code == 0, err
    assert not any(Path(f"/proc/{pid}").exists() for pid in children)  # drained and reaped
    assert "exited with -9 while serving" in err


@pytest.mark.parametrize("two_workers", ["postgres"], indirect=True)
def test_killing_the_supervisor_takes_its_workers_with_it(two_workers: Served) -> None:
    children = _children(two_workers.proc.pid)
    two_workers.proc.kill()
    two_workers.proc.wait(10)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in children):
        time.sleep(0.1)
    # A zombie has no fd table left; a live orphan would still hold the port.
    alive = [p for p in children if Path(f"/proc/{p}/fd").exists()
             and any(Path(f"/proc/{p}/fd").iterdir())]
    assert alive == []


def test_a_worker_that_cannot_start_stops_the_supervisor(tmp_path: Path) -> None:
    proc = _start(tmp_path, "--workers", "2",
                  env_extra={"DIWANIYA_SEARCH_KEYS": "camel",
                             "DIWANIYA_CAMEL_DATA_DIR": str(tmp_path / "nowhere")})
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert "DIWANIYA_SEARCH_KEYS=camel cannot start" in err
    assert "listening on" not in out


def test_workers_flag_is_checked() -> None:
    done = subprocess.run([sys.executable, "-m", "service", "serve", "--workers", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "not a whole number of processes" in done.stderr
