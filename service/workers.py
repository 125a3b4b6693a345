"""``diwaniya serve --workers N``: N server processes sharing one port.

Python runs one turn's CPU work at a time per process, so a replica that owns
two cores needs two processes.  The supervisor (this module, in the parent)
starts N ordinary ``diwaniya serve`` children on the same ``HOST:PORT``; each
binds it with ``SO_REUSEPORT`` and the kernel spreads new connections over
them.  Every child is a complete server: its own pools, its own health
service, its own drain.  The parent only

* picks a real port first when the listen address says port 0 (a bound,
  non-listening ``SO_REUSEPORT`` socket holds it until the children listen);
* runs the migrations once, so N children do not race on them;
* forwards SIGTERM/SIGINT to every child and waits for their drains, exiting 0
  only when every child exited 0;
* watches the children: one that exits before it has bound its port makes the whole
  supervisor stop (a start-up error is not fixed by retrying — the operator
  sees the child's message and exit code); one that dies after serving is
  restarted, unless children died ``MAX_DEATHS`` times within
  ``DEATH_WINDOW_S`` — then the supervisor drains the rest and exits 1 so the
  orchestrator restarts the pod.

Children die with their parent (``PR_SET_PDEATHSIG``): a SIGKILLed supervisor
leaves no orphan holding the port.

>>> cpu_quota_workers(cpu_max="200000 100000", affinity=8)   # cgroup v2: a 2-CPU limit
2
>>> cpu_quota_workers(cpu_max="max 100000", affinity=8)
8
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import math
import os
import signal
import socket
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger("diwaniya.workers")

MAX_DEATHS = 3
DEATH_WINDOW_S = 60.0
START_TIMEOUT_S = 120.0
READY_PREFIX = "diwaniya listening on "
# A worker whose database is down at start: bound and live, not ready (service.opening).
WAITING_PREFIX = "diwaniya waiting for the database, live on "
_PR_SET_PDEATHSIG = 1


# ----------------------------------------------------------- CPU quota
def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def cpu_quota_workers(*, cpu_max: str | None = None, cfs: tuple[str, str] | None = None,
                      affinity: int | None = None, root: Path = Path("/sys/fs/cgroup")) -> int:
    """Processes worth running: the CPU quota rounded up, at most the usable CPUs, at least 1.

    cgroup v2 ``cpu.max`` ("QUOTA PERIOD" or "max PERIOD"), else cgroup v1
    ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (quota -1: none), else the
    CPUs this process may run on.  A 1.5-CPU limit gives 2: the second process
    uses the half core the first cannot.
    """
    cpus = affinity if affinity is not None else len(os.sched_getaffinity(0))
    quota: float | None = None
    v2 = cpu_max if cpu_max is not None else _read(root / "cpu.max")
    if v2:
        q, _, period = v2.partition(" ")
        if q != "max" and q.isdigit() and period.isdigit() and int(period) > 0:
            quota = int(q) / int(period)
    else:
        q1, p1 = cfs or (_read(root / "cpu" / "cpu.cfs_quota_us") or "-1",
                         _read(root / "cpu" / "cpu.cfs_period_us") or "0")
        with contextlib.suppress(ValueError):
            if int(q1) > 0 and int(p1) > 0:
                quota = int(q1) / int(p1)
    wanted = cpus if quota is None else min(cpus, math.ceil(quota))
    return max(1, wanted)


# --------------------------------------------------- in the child process
def die_with_parent(parent_pid: int) -> None:
    """Ask Linux to SIGKILL this process when its supervisor dies (no orphans on the port)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGKILL)


# -------------------------------------------------------------- the parent
def reserve_port(listen: str) -> tuple[str, socket.socket | None]:
    """``HOST:0`` → ``HOST:PORT`` with a real port, and the socket holding it (else None)."""
    host, _, port = listen.rpartition(":")
    if int(port) != 0:
        return listen, None
    bare = host.strip("[]")
    family, kind, proto, _, addr = socket.getaddrinfo(
        bare, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, kind, proto)
    # The children bind with SO_REUSEPORT too (grpc.so_reuseport), so they may
    # share the port while this non-listening socket still reserves it.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(addr)
    return f"{host}:{sock.getsockname()[1]}", sock


@dataclass
class _Child:
    index: int
    proc: asyncio.subprocess.Process
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    # Bound and live: ready, or waiting for its database (WAITING_PREFIX).
    started: asyncio.Event = field(default_factory=asyncio.Event)
    pump: asyncio.Task[None] | None = None


class Supervisor:
    """Starts, watches and stops the N children (see the module docstring)."""

    def __init__(self, workers: int, listen: str, *, stop_timeout_s: float,
                 python: str = sys.executable, child_env: dict[str, str] | None = None) -> None:
        self._n = workers
        self._child_env = dict(child_env or {})
        self._listen = listen
        self._stop_timeout = stop_timeout_s
        self._python = python
        self._children: dict[int, _Child] = {}
        self._deaths: deque[float] = deque()

    def _argv(self) -> list[str]:
        return [self._python, "-m", "service", "serve", "--listen", self._listen,
                "--workers", "1", "--supervisor-pid", str(os.getpid())]

    async def _spawn(self, index: int) -> _Child:
        env = {**os.environ, "DIWANIYA_WORKER_INDEX": str(index),
               # Migrated once by the parent; N children must not race on it.
               "DIWANIYA_MIGRATE_ON_START": "false", **self._child_env}
        proc = await asyncio.create_subprocess_exec(
            *self._argv(), env=env, stdout=asyncio.subprocess.PIPE,
            stdin=asyncio.subprocess.DEVNULL)
        child = _Child(index, proc)
        child.pump = asyncio.create_task(self._pump(child))
        self._children[index] = child
        log.info("worker %d started (pid %d)", index, proc.pid)
        return child

    @staticmethod
    async def _pump(child: _Child) -> None:
        """The child's stdout: its ready line is swallowed, anything else passed on."""
        assert child.proc.stdout is not None
        async for raw in child.proc.stdout:
            line = raw.decode("utf-8", "replace")
            if line.startswith(READY_PREFIX) and not child.ready.is_set():
                child.ready.set()
                child.started.set()
                continue
            if line.startswith(WAITING_PREFIX) and not child.started.is_set():
                child.started.set()
                continue
            sys.stdout.write(line)
            sys.stdout.flush()

    async def _wait_ready(self, child: _Child) -> int | None:
        """None when started (ready, or live and waiting for its database); the exit
        code when the child ended first."""
        ready = asyncio.create_task(child.started.wait())
        exited = asyncio.create_task(child.proc.wait())
        done, _ = await asyncio.wait({ready, exited}, timeout=START_TIMEOUT_S,
                                     return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        if ready in done:
            exited.cancel()
            return None
        if exited in done:
            return exited.result() or 1
        exited.cancel()
        log.error("worker %d not listening after %.0fs", child.index, START_TIMEOUT_S)
        return 1

    async def run(self, reserved: socket.socket | None = None) -> int:
        """Serve until a signal (→ 0 when every child drained cleanly) or a fatal failure."""
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            for i in range(self._n):
                await self._spawn(i)
            codes = await asyncio.gather(*(self._wait_ready(c) for c in self._children.values()))
            failed = next((c for c in codes if c is not None), None)
            if failed is not None:
                await self._stop_all()
                return failed
            if reserved is not None:
                reserved.close()
            announce = asyncio.create_task(self._announce())
            try:
                return await self._watch(stop)
            finally:
                announce.cancel()
        finally:
            if reserved is not None:
                reserved.close()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(sig)

    async def _announce(self) -> None:
        """The supervisor's own lines: waiting while any first worker waits, then listening."""
        if not all(c.ready.is_set() for c in self._children.values()):
            print(f"{WAITING_PREFIX}{self._listen}", flush=True)
            # The current children each round: one that died waiting is replaced
            # (_watch), and its replacement is the one to wait for.
            while waiting := [c for c in self._children.values() if not c.ready.is_set()]:
                waits = [asyncio.create_task(c.ready.wait()) for c in waiting]
                await asyncio.wait(waits, timeout=1.0)
                for task in waits:
                    task.cancel()
        print(f"{READY_PREFIX}{self._listen}", flush=True)
        log.info("%d workers serving on %s", self._n, self._listen)

    async def _watch(self, stop: asyncio.Event) -> int:
        stopping = asyncio.create_task(stop.wait())
        while True:
            waits = {asyncio.create_task(c.proc.wait()): c for c in self._children.values()}
            done, _ = await asyncio.wait({stopping, *waits}, return_when=asyncio.FIRST_COMPLETED)
            for task in waits:
                if task not in done:
                    task.cancel()
            if stopping in done:
                return await self._stop_all()
            for task in done:
                child = waits[task]
                code = task.result()
                log.error("worker %d (pid %d) exited with %s while serving",
                          child.index, child.proc.pid, code)
                now = time.monotonic()
                self._deaths.append(now)
                while self._deaths and now - self._deaths[0] > DEATH_WINDOW_S:
                    self._deaths.popleft()
                if len(self._deaths) >= MAX_DEATHS:
                    log.error("%d worker deaths within %.0fs: stopping", len(self._deaths),
                              DEATH_WINDOW_S)
                    await self._stop_all()
                    return 1
                del self._children[child.index]
                replacement = await self._spawn(child.index)
                if await self._wait_ready(replacement) is not None:
                    del self._children[child.index]
                    await self._stop_all()
                    return 1

    async def _stop_all(self) -> int:
        """SIGTERM every child (each drains itself), SIGKILL any still running at the deadline."""
        live = [c for c in self._children.values() if c.proc.returncode is None]
        for child in live:
            with contextlib.suppress(ProcessLookupError):
                child.proc.send_signal(signal.SIGTERM)
        try:
            async with asyncio.timeout(self._stop_timeout):
                codes = [await c.proc.wait() for c in self._children.values()]
        except TimeoutError:
            for child in self._children.values():
                if child.proc.returncode is None:
                    log.error("worker %d did not drain in time: killed", child.index)
                    with contextlib.suppress(ProcessLookupError):
                        child.proc.kill()
            codes = [await c.proc.wait() for c in self._children.values()]
        for child in self._children.values():
            if child.pump is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(child.pump, 5)
        # -SIGTERM: a child we stopped before it had installed its handlers.
        return 0 if all(c in (0, -signal.SIGTERM) for c in codes) else 1


def supervise(workers: int, listen: str, *, stop_timeout_s: float,
              child_env: dict[str, str] | None = None) -> int:
    """Reserve the port, start ``workers`` children, and serve until signalled."""
    listen, reserved = reserve_port(listen)
    return asyncio.run(Supervisor(workers, listen, stop_timeout_s=stop_timeout_s,
                                  child_env=child_env).run(reserved))
