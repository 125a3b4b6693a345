"""The turn log's mid-turn INSERT commits asynchronously, and only itself (PostgreSQL).

What the statement's transaction ran with is recorded by a statement trigger
of this test's own database: ``synchronous_commit`` is off for the log's
INSERT (no WAL flush awaited per mid-turn flush, majlis.turn_log.insert_sql),
the pool connection is back to the server's setting afterwards, and the turn's
fenced commit — which also writes log rows, the closing ones — stays
synchronous.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import psycopg

from majlis.events import Envelope, TextDelta, TurnStarted
from majlis.fence import PendingCheckpoint
from majlis.persistence import open_postgres
from majlis.threads import ThreadRow, TurnCommit

TENANT = "log-commits"
T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)

_TRIGGER = """
CREATE TABLE seen_commits (n serial PRIMARY KEY, setting text NOT NULL);
CREATE FUNCTION note_commit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO seen_commits (setting) VALUES (current_setting('synchronous_commit'));
    RETURN NULL;
END $$;
CREATE TRIGGER note_commit AFTER INSERT ON diwaniya_turn_events
    FOR EACH STATEMENT EXECUTE FUNCTION note_commit();
"""


def _seen(dsn: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return [r[0] for r in conn.execute("SELECT setting FROM seen_commits ORDER BY n")]


async def test_mid_turn_rows_commit_asynchronously_and_the_turns_commit_does_not(
        own_database: str) -> None:
    db = await open_postgres(own_database, min_size=1, max_size=1, lock_pool_size=2)
    log = db.turn_log
    assert log is not None
    thread = uuid.uuid4().hex
    try:
        with psycopg.connect(own_database, autocommit=True) as conn:
            conn.execute(_TRIGGER)
        writer = log.writer(TENANT, "u1")
        # Three rows in one flush: the typed VALUES keep every column's type.
        await writer.add(Envelope(thread, "t1", 1, TurnStarted(user_text="هلا")), hold=True)
        await writer.add(Envelope(thread, "t1", 2, TextDelta(text="هلا والله")), hold=True)
        await writer.add(Envelope(thread, "t1", 3, TextDelta(text=" وش بغيت؟")), hold=True)
        await writer.flush()
        rows = await log.read(TENANT, "u1", thread, "t1", 0)
        # The one pool connection that ran it: its session setting is untouched.
        async with db.pool.connection() as conn:  # type: ignore[union-attr]
            cur = await conn.execute("SHOW synchronous_commit")
            after = await cur.fetchone()
        row = ThreadRow(thread_id=thread, tenant=TENANT, user_id="u1", title="", created_at=T0,
                        updated_at=T0, turn_count=0)
        async with db.threads.lock(thread, policy="reject", wait_s=0, create=row) as lease:
            await db.threads.commit_turn(lease, PendingCheckpoint(thread, None), TurnCommit(
                at=T0, title="هلا", checkpoint_id="",
                log_rows=[(TENANT, thread, "t1", 4, "u1", 0.0, '{"event": {}, "extra": {}}')]))
        seen = _seen(own_database)
    finally:
        await db.close()
    assert rows is not None and [(e.seq, e.event) for e in rows] == [
        (1, TurnStarted(user_text="هلا")), (2, TextDelta(text="هلا والله")),
        (3, TextDelta(text=" وش بغيت؟"))]
    assert after is not None and next(iter(after.values())) == "on"
    assert seen == ["off", "on"]  # the log's flush, then the fenced commit's closing rows
