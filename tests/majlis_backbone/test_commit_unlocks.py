"""A turn's fenced commit releases its thread lock itself, only when it was kept (PostgreSQL).

The commit runs on the turn's lock connection and its statement ends with the
advisory unlock (majlis.threads_pg_sql.COMMIT_UNLOCK): once it returns, another
session can take the thread, with no unlock statement of its own. A commit the
fence refused leaves the lock held until the turn's lock exits, as before.
What another session sees is asked from its own connection.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime

import psycopg
import pytest

from diwaniya.errors import LeaseLost
from majlis.fence import PendingCheckpoint
from majlis.persistence import open_postgres
from majlis.threads import ThreadRow, TurnCommit
from majlis.threads_pg_sql import LOCK_CLASS

TENANT = f"commit-unlocks-{uuid.uuid4().hex[:8]}"
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def _free(dsn: str, thread_id: str) -> bool:
    """Another session can take the thread's advisory lock (and gives it back at once)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))",
                           (LOCK_CLASS, thread_id)).fetchone()
        got = bool(row and row[0])
        if got:
            conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (LOCK_CLASS, thread_id))
    return got


def _take_over(dsn: str, thread_id: str) -> None:
    """A successor's bump, as its lock statement writes it."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("UPDATE diwaniya_threads SET lease_epoch = lease_epoch + 1,"
                     " lease_owner = gen_random_uuid() WHERE thread_id = %s", (thread_id,))


async def test_the_kept_commit_unlocks_the_refused_one_does_not(pg_dsn: str) -> None:
    db = await open_postgres(pg_dsn, min_size=1, max_size=2, lock_pool_size=2)
    thread = uuid.uuid4().hex
    row = ThreadRow(thread_id=thread, tenant=TENANT, user_id="u1", title="", created_at=T0,
                    updated_at=T0, turn_count=0)

    def commit() -> TurnCommit:
        return TurnCommit(at=T0, title="هلا", checkpoint_id="")

    free: dict[str, bool] = {}
    dsn = pg_dsn
    try:
        async with db.threads.lock(thread, policy="reject", wait_s=0, create=row) as lease:
            free["held"] = await asyncio.to_thread(_free, dsn, thread)
            await db.threads.commit_turn(lease, PendingCheckpoint(thread, None), commit())
            # Kept: the statement itself gave the lock back, the turn is still inside it.
            free["after_commit"] = await asyncio.to_thread(_free, dsn, thread)
        free["after_exit"] = await asyncio.to_thread(_free, dsn, thread)
        async with db.threads.lock(thread, policy="reject", wait_s=0) as lost:
            await asyncio.to_thread(_take_over, dsn, thread)
            with pytest.raises(LeaseLost):
                await db.threads.commit_turn(lost, PendingCheckpoint(thread, None), commit())
            free["after_refused"] = await asyncio.to_thread(_free, dsn, thread)
        free["after_refused_exit"] = await asyncio.to_thread(_free, dsn, thread)
        kept = await db.threads.get(TENANT, thread)
    finally:
        await db.close()
    assert free == {"held": False, "after_commit": True, "after_exit": True,
                    "after_refused": False, "after_refused_exit": True}
    assert kept is not None and kept.turn_count == 1 and kept.title == "هلا"


# Holds the commit's transaction open after its unlock: the closing log rows
# are written after the main query (which unlocks) has run.
_SLOW_LOG = """
CREATE FUNCTION slow_log() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN PERFORM pg_sleep(3); RETURN NULL; END $$;
CREATE TRIGGER slow_log AFTER INSERT ON diwaniya_turn_events
    FOR EACH STATEMENT EXECUTE FUNCTION slow_log();
"""


def _successor(dsn: str, thread_id: str, committing: asyncio.Task[None]) -> tuple[bool, tuple]:
    """Take the advisory lock as soon as it is free, then bump as a lock statement does:
    (was the commit still running when the lock was had, what the bump saw)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(500):  # bounded: 10 s
            row = conn.execute("SELECT pg_try_advisory_lock(%s, hashtext(%s))",
                               (LOCK_CLASS, thread_id)).fetchone()
            if row and row[0]:
                break
            conn.execute("SELECT pg_sleep(0.02)")
        else:
            raise AssertionError("the lock never came free")
        running = not committing.done()
        bumped = conn.execute(
            "UPDATE diwaniya_threads SET lease_epoch = lease_epoch + 1,"
            " lease_owner = gen_random_uuid() WHERE thread_id = %s"
            " RETURNING turn_count, head_checkpoint_id", (thread_id,)).fetchone()
        conn.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", (LOCK_CLASS, thread_id))
    return running, tuple(bumped or ())


async def test_a_successor_that_locks_before_the_commit_is_visible_waits_for_it(
        own_database: str) -> None:
    """The unlock runs inside the commit, before its transaction ends: a successor can
    take the advisory lock in that window, and its bump then waits for the thread row
    and starts from the committed head, never from the one before (docs/fencing.md)."""
    db = await open_postgres(own_database, min_size=1, max_size=2, lock_pool_size=2)
    thread = uuid.uuid4().hex
    row = ThreadRow(thread_id=thread, tenant=TENANT, user_id="u1", title="", created_at=T0,
                    updated_at=T0, turn_count=0)
    try:
        with psycopg.connect(own_database, autocommit=True) as conn:
            conn.execute(_SLOW_LOG)
        async with db.threads.lock(thread, policy="reject", wait_s=0, create=row) as lease:
            committing = asyncio.ensure_future(db.threads.commit_turn(
                lease, PendingCheckpoint(thread, None), TurnCommit(
                    at=T0, title="هلا", checkpoint_id="c1",
                    log_rows=[(TENANT, thread, "t1", 2, "u1", 0.0, "{}")])))
            running, bumped = await asyncio.to_thread(_successor, own_database, thread,
                                                      committing)
            await committing
    finally:
        await db.close()
    assert running  # the lock was free while the commit's transaction was still open
    assert bumped == (1, "c1")  # yet the successor's bump saw the committed turn
