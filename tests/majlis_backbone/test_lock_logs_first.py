"""A message turn's first event-log row rides on its thread-lock statement (PostgreSQL).

The row is written exactly when the statement takes the lock: never for a turn
that found the thread busy or another user's, once for the turn that got it.
Through the engine, tests/service/test_resume.py replays every event of a turn
exactly once on both stores (``turn_started`` is not written a second time).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from diwaniya.errors import NotFound, ThreadBusy
from majlis.events import Envelope, TurnStarted
from majlis.persistence import open_postgres
from majlis.threads import ThreadRow

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
