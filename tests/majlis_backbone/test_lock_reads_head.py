"""A continuing turn's lock statement also reads the thread's head checkpoint (PostgreSQL).

``lock(read_head=True)`` returns the committed head in the lease: the saver
builds exactly the tuple its own query would (``TurnSaver.load_head``), so the
turn reads no checkpoint of its own. When the lock statement had to wait for a
commit in flight, its snapshot predates that commit: it returns no head, and
the turn's own read then finds the new one — never the head before it.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime
from typing import Any

import psycopg
from langgraph.checkpoint.base import empty_checkpoint

from majlis.persistence import open_postgres
from majlis.threads import ThreadRow

TENANT = f"lock-head-{uuid.uuid4().hex[:8]}"
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)
VERSION = "00000000000000000000000000000001.0"


def _config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


async def _headed_thread(db: Any, thread: str) -> str:
    """A thread whose registry names a committed checkpoint with a blob channel."""
    await db.threads.create(ThreadRow(thread_id=thread, tenant=TENANT, user_id="u1", title="",
                                      created_at=T0, updated_at=T0, turn_count=0))
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": [{"role": "user", "text": "السلام عليكم"}]}
    checkpoint["channel_versions"] = {"messages": VERSION}
    saver = db.checkpointer.inner  # the real saver: this setup is no turn
    await saver.aput(_config(thread), checkpoint, {"source": "input", "step": 1},
                     {"messages": VERSION})
    async with db.pool.connection() as conn:
        await conn.execute("UPDATE diwaniya_threads SET head_checkpoint_id = %s"
                           " WHERE thread_id = %s", (checkpoint["id"], thread))
    return str(checkpoint["id"])


async def test_the_lease_carries_the_head_the_saver_would_read(pg_dsn: str) -> None:
    db = await open_postgres(pg_dsn, min_size=1, max_size=2, lock_pool_size=2)
    thread = uuid.uuid4().hex
    try:
        head = await _headed_thread(db, thread)
        saver = db.checkpointer.inner
        async with db.threads.lock(thread, policy="reject", wait_s=0, owner=(TENANT, "u1"),
                                   read_head=True) as lease:
            assert lease.head is not None
            built = await saver.load_head(lease.head)
            queried = await saver.aget_tuple(_config(thread))
        async with db.threads.lock(thread, policy="reject", wait_s=0) as plain:
            unread = plain.head
    finally:
        await db.close()
    assert built is not None and queried is not None
    assert built.config == queried.config and built.parent_config == queried.parent_config
    assert built.checkpoint == queried.checkpoint and built.metadata == queried.metadata
    assert built.checkpoint["id"] == head
    assert built.checkpoint["channel_values"]["messages"] == [
        {"role": "user", "text": "السلام عليكم"}]
    assert unread is None  # not asked for


async def test_a_lock_that_waited_for_a_commit_returns_no_stale_head(pg_dsn: str) -> None:
    db = await open_postgres(pg_dsn, min_size=1, max_size=2, lock_pool_size=2)
    thread = uuid.uuid4().hex
    try:
        first = await _headed_thread(db, thread)
        saver = db.checkpointer.inner
        old = await saver.aget_tuple(_config(thread))
        assert old is not None
        newer = dict(old.checkpoint, id=str(uuid.uuid4()).replace("4", "f", 1))
        with psycopg.connect(pg_dsn) as other, \
                psycopg.connect(pg_dsn, autocommit=True) as watch:
            # ``other``: a commit in flight, holding the thread row.
            other.execute("UPDATE diwaniya_threads SET head_checkpoint_id = %s"
                          " WHERE thread_id = %s", (newer["id"], thread))
            other.execute(
                "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id,"
                " parent_checkpoint_id, checkpoint, metadata) VALUES (%s, '', %s, %s, %s, '{}')",
                (thread, newer["id"], first, json.dumps(
                    {**newer, "channel_values": {}}, default=str)))

            async def locked() -> Any:
                async with db.threads.lock(thread, policy="reject", wait_s=0,
                                           read_head=True) as lease:
                    return lease.head, await saver.aget_tuple(_config(thread))

            task = asyncio.ensure_future(locked())
            # Bounded: until the lock statement waits on the row (10 s at most).
            for _ in range(500):
                row = watch.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND datname = current_database() AND query LIKE %s",
                    ("%lease_epoch + 1%",)).fetchone()
                if row and row[0]:
                    break
                await asyncio.sleep(0.02)
            else:
                raise AssertionError("the lock statement never waited for the row")
            other.commit()
        head, read = await task
    finally:
        await db.close()
    assert head is None  # its snapshot predates the commit it waited for
    assert read is not None and read.checkpoint["id"] == newer["id"]
