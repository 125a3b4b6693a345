"""A message turn's first event-log row rides on its thread-lock statement (PostgreSQL).

The row is written exactly when the statement takes the lock: never for a turn
that found the thread busy or another user's, once for the turn that got it.
Through the engine, tests/service/test_resume.py replays every event of a turn
exactly once on both stores (``turn_started`` is not written a second time).
The statement commits asynchronously: what its loss in a crash leaves behind
lets no commit through (the last test).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from datetime import UTC, datetime

import psycopg
import pytest

from diwaniya.errors import LeaseLost, NotFound, ThreadBusy
from majlis.events import Envelope, TextDelta, TurnStarted
from majlis.fence import PendingCheckpoint
from majlis.persistence import open_postgres
from majlis.threads import ThreadRow, TurnCommit

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


# A tenant of this test's own: the session database is shared with the store suite.
TENANT = f"lock-log-{uuid.uuid4().hex[:8]}"


def _row(thread_id: str, user: str = "u1") -> ThreadRow:
    return ThreadRow(thread_id=thread_id, tenant=TENANT, user_id=user, title="", created_at=T0,
                     updated_at=T0, turn_count=0)


async def test_the_lock_statement_writes_the_first_row_only_when_it_locks(pg_dsn: str) -> None:
    db = await open_postgres(pg_dsn, min_size=1, max_size=2, lock_pool_size=4)
    assert db.turn_log is not None
    thread = uuid.uuid4().hex

    def first(turn_id: str) -> tuple[object, ...]:
        writer = db.turn_log.writer(TENANT, "u1")  # type: ignore[union-attr]
        return writer.first_row(Envelope(thread, turn_id, 1, TurnStarted(user_text="هلا")))

    async def logged(turn_id: str) -> list[tuple[int, str]]:
        rows = await db.turn_log._store.after(  # type: ignore[union-attr]
            TENANT, "u1", thread, turn_id, 0, 0.0)
        return rows or []

    try:
        async with db.threads.lock(thread, policy="reject", wait_s=0, create=_row(thread),
                                   log_row=first("a")) as lease:
            assert lease.logged_first
            assert [seq for seq, _ in await logged("a")] == [1]
            # The thread is held: a second turn gets no lock and no row.
            with pytest.raises(ThreadBusy):
                async with db.threads.lock(thread, policy="reject", wait_s=0,
                                           owner=(TENANT, "u1"), log_row=first("b")):
                    pass
            assert await logged("b") == []
        # Another user's thread: NotFound, nothing locked, nothing logged.
        with pytest.raises(NotFound):
            async with db.threads.lock(thread, policy="reject", wait_s=0,
                                       owner=(TENANT, "u2"), log_row=first("c")):
                pass
        assert await logged("c") == []
        # Without a row to log, the lease says the turn writes its own.
        async with db.threads.lock(thread, policy="reject", wait_s=0,
                                   owner=(TENANT, "u1")) as lease:
            assert not lease.logged_first
    finally:
        await db.close()


async def test_a_lost_lock_statement_lets_no_commit_through(pg_dsn: str) -> None:
    """The lock statement commits asynchronously (docs/fencing.md): a crash may lose
    it. Its turn's commit must then match nothing — whether the statement created the
    thread (ABORTED: resend, not NOT_FOUND) or bumped an existing one whose next
    holder gets the same epoch again."""
    db = await open_postgres(pg_dsn, min_size=1, max_size=2, lock_pool_size=4)
    thread = uuid.uuid4().hex
    at = datetime(2026, 11, 1, 9, 5, tzinfo=UTC)
    commit = TurnCommit(at=at, title="هلا", checkpoint_id="")

    def lose(sql: str, *args: object) -> None:
        with psycopg.connect(pg_dsn, autocommit=True) as conn:
            conn.execute(sql, (*args, thread))

    try:
        async with db.threads.lock(thread, policy="reject", wait_s=0,
                                   create=_row(thread)) as created:
            await asyncio.to_thread(lose, "DELETE FROM diwaniya_threads WHERE thread_id = %s")
            with pytest.raises(LeaseLost, match="lost new thread"):
                await db.threads.commit_turn(created, PendingCheckpoint(thread, None), commit)
        await db.threads.create(_row(thread))
        async with db.threads.lock(thread, policy="reject", wait_s=0) as durable:
            pass
        async with db.threads.lock(thread, policy="reject", wait_s=0) as lost:
            # The crash takes the bump back to the last durable token.
            await asyncio.to_thread(
                lose, "UPDATE diwaniya_threads SET lease_epoch = %s, lease_owner = %s"
                " WHERE thread_id = %s", durable.epoch, durable.token)
        async with db.threads.lock(thread, policy="reject", wait_s=0) as successor:
            assert successor.epoch == lost.epoch and successor.token != lost.token
            with pytest.raises(LeaseLost, match="lost its hold"):
                await db.threads.commit_turn(lost, PendingCheckpoint(thread, None), commit)
            await db.threads.commit_turn(successor, PendingCheckpoint(thread, None), commit)
        row = await db.threads.get(TENANT, thread)
    finally:
        await db.close()
    assert row is not None and row.turn_count == 1  # the successor's commit, only


async def test_the_logs_prune_waits_for_the_turns_next_event_not_its_first(pg_dsn: str) -> None:
    """``written`` (the lock statement wrote turn_started) runs before turn_started is
    sent: it must not await the log's DELETE of expired rows; the next event does it."""
    db = await open_postgres(pg_dsn, min_size=1, max_size=2, lock_pool_size=2)
    log = db.turn_log
    assert log is not None
    old, thread = uuid.uuid4().hex, uuid.uuid4().hex

    async def old_rows() -> list[tuple[int, str]]:
        return await log._store.after(TENANT, "u1", old, "t0", 0, 0.0) or []

    try:
        await log._store.insert([(TENANT, old, "t0", 1, "u1", time.time() - 2 * log.ttl_s,
                                  "{}")])
        writer = log.writer(TENANT, "u1")  # a fresh log: its prune is due
        writer.written(Envelope(thread, "t1", 1, TurnStarted(user_text="هلا")))
        kept = await old_rows()
        await writer.add(Envelope(thread, "t1", 2, TextDelta(text="هلا والله")))
        pruned = await old_rows()
    finally:
        await db.close()
    assert [seq for seq, _ in kept] == [1] and pruned == []
