"""The embedded default's shared SQLite connections never keep a failed write's transaction.

Python's sqlite3 opens a transaction before the first INSERT/UPDATE/DELETE; a
statement that fails ("database is locked" while another process writes, a
constraint) leaves it open. On a connection shared by every turn that is
another turn's problem: its ``BEGIN IMMEDIATE`` fails ("cannot start a
transaction within a transaction"), or its commit saves the failed write's
first half. Real SQLite files throughout; a second connection plays the other
process, a trigger plays a write that fails half-way.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite
import pytest

from majlis.persistence import Persistence, open_sqlite
from majlis.threads import RequestKey, ThreadRow
from majlis.threads_sqlite import SqliteThreadStore
from majlis.turn_log import SqliteTurnEvents

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def _row(thread_id: str) -> ThreadRow:
    return ThreadRow(thread_id=thread_id, tenant="t1", user_id="u1", title="", created_at=T0,
                     updated_at=T0, turn_count=0)


@asynccontextmanager
async def _store(path: Path) -> AsyncIterator[tuple[SqliteThreadStore, aiosqlite.Connection]]:
    conn = await aiosqlite.connect(path)
    store = SqliteThreadStore(conn, lease_ttl_s=3)
    await store.migrate()
    try:
        yield store, conn
    finally:
        await conn.close()


@asynccontextmanager
async def _other_process_writing(path: Path) -> AsyncIterator[None]:
    """Another connection holds the file's write lock (serve --workers, a CLI)."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.rollback()
        other.close()


async def _create_again(store: SqliteThreadStore, path: Path) -> None:
    await store.create(_row("th-1"))  # the thread exists: UNIQUE constraint failed


async def _create_locked(store: SqliteThreadStore, path: Path) -> None:
    async with _other_process_writing(path):
        await store.create(_row("th-2"))


async def _lease_locked(store: SqliteThreadStore, path: Path) -> None:
    async with _other_process_writing(path), store.lock("th-1", policy="reject", wait_s=0):
        pass


async def _delete_locked(store: SqliteThreadStore, path: Path) -> None:
    async with _other_process_writing(path):
        await store.delete("t1", "th-1")


Failure = Callable[[SqliteThreadStore, Path], Awaitable[None]]


@pytest.mark.parametrize("fail", [_create_again, _create_locked, _lease_locked, _delete_locked],
                         ids=["duplicate-create", "locked-create", "locked-lease",
                              "locked-delete"])
async def test_a_failed_registry_write_leaves_no_transaction_open(
    tmp_path: Path, fail: Failure
) -> None:
    path = tmp_path / "threads.sqlite3"
    async with _store(path) as (store, conn):
        await store.create(_row("th-1"))
        # Short: the other process holds the lock until the write has failed.
        await conn.execute("PRAGMA busy_timeout=50")
        with pytest.raises(sqlite3.Error):
            await fail(store, path)
        assert not conn.in_transaction
        # The next turns' writes: an IMMEDIATE transaction, a lease, a commit of both.
        claimed = await store.claim_request(RequestKey("t1", "u1", "r1"), thread_id="th-1",
                                            content_hash="h", new_thread=None, window_s=60)
        assert claimed.claimed
        async with store.lock("th-1", policy="reject", wait_s=0) as lease:
            assert lease.token
        assert await store.get("t1", "th-1") is not None
        assert not conn.in_transaction


@asynccontextmanager
async def _embedded(tmp_path: Path) -> AsyncIterator[Persistence]:
    db = await open_sqlite(tmp_path / "data")
    try:
        yield db
    finally:
        await db.close()


def _rows(turn_id: str, n: int) -> list[tuple[str, str, str, int, str, float, str]]:
    return [("t1", "th-1", turn_id, seq, "u1", 1.0, f'{{"seq": {seq}}}') for seq in range(1, n + 1)]


async def test_concurrent_turn_log_writes_never_commit_each_others_half(tmp_path: Path) -> None:
    async with _embedded(tmp_path) as db:
        assert db.turn_log is not None
        path = tmp_path / "data" / "threads.sqlite3"
        with sqlite3.connect(path) as other:
            # A write that fails on its second row, as a full disk or an I/O error would.
            other.execute(
                "CREATE TRIGGER fail_second BEFORE INSERT ON diwaniya_turn_events"
                " WHEN NEW.turn_id = 'broken' AND NEW.seq = 2"
                " BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END")
        # Two turns flushing at once, on the one shared connection; a third a little later.
        results = await asyncio.gather(
            db.turn_log.write(_rows("good", 3)), db.turn_log.write(_rows("broken", 3)),
            db.turn_log.write(_rows("later", 2)), return_exceptions=True)
        assert results[0] is None and results[2] is None
        assert isinstance(results[1], sqlite3.IntegrityError | sqlite3.OperationalError)
        with sqlite3.connect(path) as other:
            logged = dict(other.execute(
                "SELECT turn_id, count(*) FROM diwaniya_turn_events GROUP BY turn_id").fetchall())
        # The failed batch is not half-saved by another turn's commit; the others are whole.
        assert logged == {"good": 3, "later": 2}
        store = db.turn_log._store
        assert isinstance(store, SqliteTurnEvents)
        assert not store._conn.in_transaction
        # And the file's write lock is free: the registry can commit.
        await db.threads.create(_row("th-1"))


async def _until(done: Callable[[], bool], timeout_s: float = 20.0) -> None:
    for _ in range(int(timeout_s / 0.02)):
        if done():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"not within {timeout_s} s")


async def test_a_failing_heartbeat_warns_once_per_streak_and_keeps_the_lease(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "threads.sqlite3"
    conn = await aiosqlite.connect(path)
    # A beat every 0.2 s; a renewal gives up after 50 ms of "database is locked".
    store = SqliteThreadStore(conn, lease_ttl_s=0.6)
    await store.migrate()
    await conn.execute("PRAGMA busy_timeout=50")
    counted: list[int] = []
    store.on_heartbeat_failure = lambda: counted.append(1)
    renewed = lambda: any("renewed again" in r.getMessage() for r in caplog.records)  # noqa: E731
    try:
        with caplog.at_level("INFO", logger="diwaniya.threads"):
            async with store.lock("th-1", policy="reject", wait_s=0) as lease:
                async with _other_process_writing(path):
                    await _until(lambda: store.heartbeat_failures >= 3)  # a streak of three
                await _until(renewed)
            # The turn ended normally: the failed beats ended neither it nor its exit.
        warnings = [r for r in caplog.records if r.levelname == "WARNING"]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
        assert "th-1" in warnings[0].getMessage() and str(lease.token) in warnings[0].getMessage()
        assert len(counted) == store.heartbeat_failures >= 3
    finally:
        await conn.close()
