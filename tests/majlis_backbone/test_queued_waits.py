"""A turn that waits for its lock connection says ``queued`` while it waits (issue #11).

What decides is the wait, not the lock pool's size: a pool that is still
opening a connection makes the turn wait as surely as a full one. The tests
hold the pool's connections themselves and gate the opening of new ones on an
event, so the turn is provably still waiting when ``queued`` arrives (no timing
luck: without the signal the turn could never proceed, and would end
RESOURCE_EXHAUSTED at the pool's checkout timeout instead).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from psycopg_pool import AsyncConnectionPool

from majlis.events import Queued
from majlis.queueing import EnteringLock
from majlis.threads import Lease, WaitSignal
from majlis.threads_pg import PostgresThreadStore


@asynccontextmanager
async def _store(dsn: str, *, lock_min: int, lock_max: int, gate: asyncio.Event | None = None
                 ) -> AsyncIterator[tuple[PostgresThreadStore, AsyncConnectionPool]]:
    """A store whose lock pool opens a connection only while ``gate`` is set."""

    async def configure(conn: Any) -> None:
        if gate is not None:
            await gate.wait()

    pool = AsyncConnectionPool(dsn, min_size=1, max_size=2, open=False,
                               kwargs={"autocommit": True})
    # timeout: a turn that never heard ``queued`` fails here (ResourceExhausted),
    # it does not hang the test.
    locks = AsyncConnectionPool(dsn, min_size=lock_min, max_size=lock_max, open=False,
                                timeout=10, configure=configure, kwargs={"autocommit": True})
    await pool.open(wait=True)
    await locks.open(wait=True)
    store = PostgresThreadStore(pool, locks, max_waiters=4)
    try:
        await store.migrate()
        yield store, locks
    finally:
        await locks.close()
        await pool.close()


def _entering(store: PostgresThreadStore, thread_id: str) -> EnteringLock[Lease]:
    return EnteringLock(lambda on_wait: store.lock(
        thread_id, policy="enqueue", wait_s=10, on_wait=on_wait))


async def test_a_turn_waiting_on_a_growing_lock_pool_says_queued_first(pg_dsn: str) -> None:
    gate = asyncio.Event()
    gate.set()  # the pool's first connection opens
    async with _store(pg_dsn, lock_min=1, lock_max=2, gate=gate) as (store, locks):
        held = await locks.getconn()  # the only open connection: the turn must wait
        gate.clear()  # ... for the second one, which cannot open until the test says so
        # Below its maximum with nothing idle: the pool will grow for the turn
        # (the old size check, made before the turn asked, stayed silent here).
        before = locks.get_stats()
        lock = _entering(store, uuid.uuid4().hex)
        seen: list[object] = []
        async for queued in lock.wait():
            seen.append(queued)
            gate.set()  # now the connection may open, and the turn proceed
        async with lock as lease:
            seen.append(lease)
        await locks.putconn(held)
    assert seen[:-1] == [Queued(reason="lock_pool", position=1)]
    assert isinstance(seen[-1], Lease) and seen[-1].token is None  # no thread row: no epoch
    assert before["pool_size"] == 1 and not before.get("pool_available")


async def test_a_full_lock_pool_says_queued_once_and_the_turn_runs_when_one_frees(
    pg_dsn: str
) -> None:
    async with _store(pg_dsn, lock_min=2, lock_max=2) as (store, locks):
        held = [await locks.getconn(), await locks.getconn()]
        lock = _entering(store, uuid.uuid4().hex)
        seen: list[object] = []
        async for queued in lock.wait():
            seen.append(queued)
            # Give the delayed check its chance to say it a second time (it must not).
            await asyncio.sleep(0.2)
            await locks.putconn(held.pop())
        async with lock as lease:
            seen.append(lease)
        await locks.putconn(held.pop())
    assert seen[:-1] == [Queued(reason="lock_pool", position=1)]
    assert isinstance(seen[-1], Lease)


async def test_each_reason_is_said_once_in_the_order_the_turn_meets_it(pg_dsn: str) -> None:
    gate = asyncio.Event()
    gate.set()
    thread = uuid.uuid4().hex
    async with _store(pg_dsn, lock_min=1, lock_max=2) as (first, _), \
            _store(pg_dsn, lock_min=1, lock_max=2, gate=gate) as (second, locks):
        release = asyncio.Event()
        took = asyncio.Event()

        async def running_turn() -> None:
            async with first.lock(thread, policy="reject", wait_s=0):
                took.set()
                await release.wait()

        holder = asyncio.create_task(running_turn())
        await took.wait()
        held = await locks.getconn()
        gate.clear()
        lock = _entering(second, thread)
        seen: list[Queued] = []
        async for queued in lock.wait():
            seen.append(queued)
            if queued.reason == "lock_pool":
                gate.set()  # the connection opens; the thread is still busy
            else:
                release.set()  # the running turn ends; this one takes the thread
        async with lock:
            pass
        await holder
        await locks.putconn(held)
    assert seen == [Queued(reason="lock_pool", position=1),
                    Queued(reason="thread_busy", position=1)]


async def test_wait_signal_fires_a_late_stage_once_and_never_an_early_one() -> None:
    told: list[tuple[str, int]] = []
    signal = WaitSignal(lambda reason, pos: told.append((reason, pos)), after_s=0)
    with signal.stage("lock_pool", lambda: 3):
        pass  # finished before the loop ran again: no wait, nothing said
    assert told == []
    with signal.stage("lock_pool", lambda: 2):
        await asyncio.sleep(0.01)  # the timer (due now) runs before this sleep ends
    signal("lock_pool", 5)  # already said: not again
    with signal.stage("lock_pool", lambda: 4):
        await asyncio.sleep(0.01)
    signal("thread_busy", 1)
    signal("thread_busy", 2)
    assert told == [("lock_pool", 2), ("thread_busy", 1)]
