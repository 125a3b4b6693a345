"""Waiting for a thread is signalled at once; reject never queues; dead leases are cleared."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import aiosqlite
import pytest

from diwaniya.errors import ThreadBusy
from majlis.threads_sqlite import ProcessId, SqliteThreadStore


async def test_reject_policy_answers_busy_never_resource_exhausted(replicas) -> None:
    async with (replicas(max_waiters=1, pool_size=2) as (a, b),
                a.lock("th-r", policy="reject", wait_s=0)):
        for _ in range(3):  # more than max_waiters: under reject nothing waits to be counted
            with pytest.raises(ThreadBusy):
                async with b.lock("th-r", policy="reject", wait_s=0):
                    pass


async def test_enqueue_wait_is_signalled_before_the_lock_is_free(replicas) -> None:
    signals: list[tuple[str, int]] = []
    async with replicas(max_waiters=4, pool_size=2) as (a, b):
        release = asyncio.Event()
        held = asyncio.Event()

        async def hold() -> None:
            async with a.lock("th-q", policy="reject", wait_s=0):
                held.set()
                await release.wait()

        holder = asyncio.create_task(hold())
        # The lock is a's before b asks (a fixed sleep lost that race on a starved CPU).
        await held.wait()

        async def wait_turn() -> None:
            async with b.lock("th-q", policy="enqueue", wait_s=10,
                              on_wait=lambda reason, pos: signals.append((reason, pos))):
                pass

        waiter = asyncio.create_task(wait_turn())
        for _ in range(100):
            if signals:
                break
            await asyncio.sleep(0.02)
        heard_while_held = list(signals)
        release.set()
        await asyncio.gather(holder, waiter)
    assert heard_while_held == [("thread_busy", 1)]


async def _lease_owners(path: Path) -> list[tuple[str, int]]:
    async with aiosqlite.connect(path) as conn, conn.execute(
        "SELECT thread_id, owner_pid FROM diwaniya_thread_leases ORDER BY thread_id"
    ) as cur:
        return [(r[0], r[1]) for r in await cur.fetchall()]


async def test_leases_of_dead_processes_are_cleared_and_live_ones_kept(tmp_path: Path) -> None:
    path = tmp_path / "threads.sqlite3"
    gone = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await gone.wait()
    me = ProcessId.current()
    dead_pid = ProcessId(gone.pid, me.boot, "12345", me.host)
    other_boot = ProcessId(me.pid, "another-boot", me.start, me.host)
    reused_pid = ProcessId(me.pid, me.boot, "not-my-start-time", me.host)  # pid 1, new container
    # Another container on the same file: its pids mean nothing here, so it is kept.
    elsewhere = ProcessId(gone.pid, me.boot, "12345", "another-host")
    async with aiosqlite.connect(path) as conn:
        stores = {name: SqliteThreadStore(conn, process=pid) for name, pid in
                  [("dead", dead_pid), ("boot", other_boot), ("reused", reused_pid),
                   ("live", me), ("other-host", elsewhere)]}
        await stores["live"].migrate()
        for name, store in stores.items():
            assert await store._try_lease(f"th-{name}", f"owner-{name}")
    async with aiosqlite.connect(path) as conn:
        fresh = SqliteThreadStore(conn)
        await fresh.migrate()
        cleared = await fresh.clear_dead_leases()
        # The dead holders' threads take a turn at once; the live holder's stays busy.
        for name in ("dead", "boot", "reused"):
            async with fresh.lock(f"th-{name}", policy="reject", wait_s=0):
                pass
        for name in ("live", "other-host"):
            with pytest.raises(ThreadBusy):
                async with fresh.lock(f"th-{name}", policy="reject", wait_s=0):
                    pass
    assert cleared == 3
    assert await _lease_owners(path) == [("th-live", me.pid), ("th-other-host", gone.pid)]


def test_a_zombie_holder_counts_as_dead() -> None:
    # SIGKILLed under a parent that has not reaped it yet: /proc still lists the pid
    # with its start time, but the process has exited and holds nothing.
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        stat = Path(f"/proc/{child.pid}/stat")
        deadline = time.monotonic() + 10
        while stat.read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline, "the child never became a zombie"
            time.sleep(0.01)
        me = ProcessId.current()
        start = stat.read_text().rpartition(")")[2].split()[19]
        assert not ProcessId(child.pid, me.boot, start, me.host).alive()
        assert me.alive()
    finally:
        child.wait()


async def test_drain_waits_for_cancelled_turns_to_give_their_leases_back(
    tmp_path: Path
) -> None:
    path = tmp_path / "threads.sqlite3"
    conn = await aiosqlite.connect(path)
    store = SqliteThreadStore(conn)
    await store.migrate()
    entered = asyncio.Event()

    async def turn(thread_id: str) -> None:
        async with store.lock(thread_id, policy="reject", wait_s=0):
            entered.set()
            await asyncio.sleep(60)

    tasks = [asyncio.create_task(turn(f"th-{i}")) for i in range(5)]
    await entered.wait()
    await asyncio.sleep(0.05)
    for task in tasks:
        task.cancel()  # what the server does to handlers when the grace period ends
    started = time.monotonic()
    await store.drain(timeout_s=5)
    drained_in = time.monotonic() - started
    await conn.close()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert await _lease_owners(path) == []
    assert drained_in < 5  # released, not timed out
