"""One conformance suite for both ThreadStores: two store objects play two replicas."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from diwaniya.errors import NotFound, ResourceExhausted, ThreadBusy
from majlis.threads import ThreadRow, ThreadStore

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def _row(thread_id: str, user: str = "u1", tenant: str = "t1", at: datetime = T0) -> ThreadRow:
    return ThreadRow(thread_id=thread_id, tenant=tenant, user_id=user, title="", created_at=at,
                     updated_at=at, turn_count=0)


async def test_lock_excludes_across_replicas(replicas, tmp_path: Path) -> None:
    async with replicas() as (a, b):
        async with a.lock("th-1", policy="reject", wait_s=0):
            with pytest.raises(ThreadBusy, match="busy"):
                async with b.lock("th-1", policy="reject", wait_s=0):
                    pass
            async with b.lock("th-2", policy="reject", wait_s=0):
                pass  # other threads are free
        async with b.lock("th-1", policy="reject", wait_s=0):
            pass  # released


async def test_enqueue_waits_then_runs_and_is_bounded(replicas) -> None:
    async with replicas(max_waiters=1) as (a, b):
        order: list[str] = []
        held = asyncio.Event()

        async def hold() -> None:
            async with a.lock("th-q", policy="reject", wait_s=0):
                order.append("a")
                held.set()
                await asyncio.sleep(0.4)

        task = asyncio.create_task(hold())
        # On evidence, not a fixed sleep: on a starved CPU a's lock (a PostgreSQL
        # round trip) can take longer than any sleep, and b would then go first.
        await held.wait()
        async with b.lock("th-q", policy="enqueue", wait_s=5):
            order.append("b")
        await task
        assert order == ["a", "b"]

        async with a.lock("th-q", policy="reject", wait_s=0):
            with pytest.raises(ThreadBusy, match="stayed busy"):
                async with b.lock("th-q", policy="enqueue", wait_s=0.3):
                    pass
            waiting = asyncio.Event()
            waiter = asyncio.create_task(_enter(b, "th-q", 5, on_wait=waiting))
            # "thread_busy" is said from inside the waiter count: the one slot is taken.
            await waiting.wait()
            with pytest.raises(ResourceExhausted, match="waiting"):
                async with b.lock("th-q", policy="enqueue", wait_s=5):
                    pass
        await waiter


async def _enter(store: ThreadStore, thread_id: str, wait: float,
                 on_wait: asyncio.Event | None = None) -> None:
    told = None if on_wait is None else (lambda reason, position: on_wait.set())
    async with store.lock(thread_id, policy="enqueue", wait_s=wait, on_wait=told):
        pass


async def test_cancelled_holder_releases_the_lock(replicas) -> None:
    async with replicas() as (a, b):
        entered = asyncio.Event()

        async def hold() -> None:
            async with a.lock("th-c", policy="reject", wait_s=0):
                entered.set()
                await asyncio.sleep(60)

        task = asyncio.create_task(hold())
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        async with b.lock("th-c", policy="reject", wait_s=0):
            pass


async def test_registry_ownership_listing_and_delete(replicas) -> None:
    async with replicas() as (a, b):
        for i in range(5):
            await a.create(_row(f"th-{i}", at=T0 + timedelta(minutes=i)))
        await a.create(_row("other-user", user="u2"))
        await a.create(_row("other-tenant", tenant="t2"))
        await b.record_turn("th-0", at=T0 + timedelta(hours=1), title="هلا والله")
        got = await b.get("t1", "th-0")
        assert got is not None and got.turn_count == 1 and got.title == "هلا والله"
        assert await b.get("t2", "th-0") is None
        page = await b.list("t1", "u1", limit=3, after=None)
        assert [r.thread_id for r in page] == ["th-0", "th-4", "th-3"]
        rest = await b.list("t1", "u1", limit=3, after=(page[-1].updated_at, page[-1].thread_id))
        assert [r.thread_id for r in rest] == ["th-2", "th-1"]
        assert await a.delete("t1", "th-0") and not await a.delete("t1", "th-0")
        assert await b.get("t1", "th-0") is None


async def test_lock_with_owner_checks_ownership_without_locking_others(replicas) -> None:
    """A continuing turn's ownership check is the lock's own (one statement on PostgreSQL):
    another user's or a missing thread is NotFound, busy or not, and is never locked."""
    async with replicas() as (a, b):
        await a.create(_row("th-own", user="صاحب"))
        async with b.lock("th-own", policy="reject", wait_s=0, owner=("t1", "صاحب")):
            with pytest.raises(NotFound, match="not found"):  # busy, but not theirs
                async with a.lock("th-own", policy="reject", wait_s=0, owner=("t1", "دخيل")):
                    pass
        for owner in [("t1", "دخيل"), ("t2", "صاحب")]:
            with pytest.raises(NotFound, match="not found"):
                async with a.lock("th-own", policy="reject", wait_s=0, owner=owner):
                    pass
        with pytest.raises(NotFound):
            async with a.lock("th-none", policy="reject", wait_s=0, owner=("t1", "صاحب")):
                pass
        # The refused attempts took no lock: the owner's next turn enters at once.
        async with b.lock("th-own", policy="reject", wait_s=0, owner=("t1", "صاحب")) as lease:
            assert lease.thread_id == "th-own"
