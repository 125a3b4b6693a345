"""SQLite :class:`~majlis.threads.ThreadStore` for the embedded default.

Locks are lease rows (thread_id, owner, expires_at) renewed by a heartbeat
while the turn runs; this excludes turns across processes sharing the file,
and a crashed holder's lease simply lapses.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

import aiosqlite

from majlis.threads import Policy, ThreadRow, WaiterCounter, acquire_polling

_DDL = """
CREATE TABLE IF NOT EXISTS diwaniya_threads (
    thread_id   TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    title       TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    turn_count  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS diwaniya_threads_by_user
    ON diwaniya_threads (tenant, user_id, updated_at DESC, thread_id DESC);
CREATE TABLE IF NOT EXISTS diwaniya_thread_leases (
    thread_id   TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    expires_at  REAL NOT NULL
);
"""

_COLS = "thread_id, tenant, user_id, title, created_at, updated_at, turn_count"


async def enable_wal(conn: aiosqlite.Connection, *, wait_s: float = 10.0) -> None:
    """WAL journal (readers and the one writer overlap) and a 5 s busy timeout.

    Switching to WAL needs the file to itself and SQLite does not always run
    the busy handler for it, so two processes opening a fresh file at once can
    get "database is locked": retry until ``wait_s``.
    """
    await conn.execute("PRAGMA busy_timeout=5000")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


def _row(values: aiosqlite.Row) -> ThreadRow:
    return ThreadRow(
        thread_id=values[0], tenant=values[1], user_id=values[2], title=values[3],
        created_at=datetime.fromisoformat(values[4]), updated_at=datetime.fromisoformat(values[5]),
        turn_count=values[6],
    )


class SqliteThreadStore:
    """Threads in the embedded SQLite file (its own connection, WAL mode)."""

    def __init__(self, conn: aiosqlite.Connection, *, lease_ttl_s: float = 30.0,
                 max_waiters: int = 8) -> None:
        self._conn = conn
        self._ttl = lease_ttl_s
        self._waiters = WaiterCounter(max_waiters)
        # aiosqlite shares one connection: one statement at a time, reads too. A
        # read cursor still open when a write starts pins an old WAL snapshot; if
        # another process (serve --workers) committed since, SQLite answers
        # "database is locked" at once, without waiting out the busy timeout.
        self._write = asyncio.Lock()

    async def migrate(self) -> None:
        await enable_wal(self._conn)
        await self._conn.executescript(_DDL)
        await self._conn.commit()

    async def create(self, row: ThreadRow) -> None:
        async with self._write:
            await self._conn.execute(
                f"INSERT INTO diwaniya_threads ({_COLS}) VALUES (?,?,?,?,?,?,?)",
                (row.thread_id, row.tenant, row.user_id, row.title, row.created_at.isoformat(),
                 row.updated_at.isoformat(), row.turn_count),
            )
            await self._conn.commit()

    async def get(self, tenant: str, thread_id: str) -> ThreadRow | None:
        async with self._write, self._conn.execute(
            f"SELECT {_COLS} FROM diwaniya_threads WHERE tenant = ? AND thread_id = ?",
            (tenant, thread_id),
        ) as cur:
            found = await cur.fetchone()
        return _row(found) if found else None

    async def record_turn(self, thread_id: str, *, at: datetime, title: str) -> None:
        async with self._write:
            await self._conn.execute(
                "UPDATE diwaniya_threads SET updated_at = max(updated_at, ?),"
                " turn_count = turn_count + 1,"
                " title = CASE WHEN title = '' THEN ? ELSE title END WHERE thread_id = ?",
                (at.isoformat(), title, thread_id),
            )
            await self._conn.commit()

    async def list(
        self, tenant: str, user_id: str, *, limit: int, after: tuple[datetime, str] | None
    ) -> list[ThreadRow]:
        # ISO-8601 strings in UTC sort like the instants they name.
        query = f"SELECT {_COLS} FROM diwaniya_threads WHERE tenant = ? AND user_id = ?"
        params: list[object] = [tenant, user_id]
        if after is not None:
            query += " AND (updated_at < ? OR (updated_at = ? AND thread_id < ?))"
            params += [after[0].isoformat(), after[0].isoformat(), after[1]]
        query += " ORDER BY updated_at DESC, thread_id DESC LIMIT ?"
        params.append(limit)
        async with self._write, self._conn.execute(query, params) as cur:
            rows = await cur.fetchall()
        return [_row(r) for r in rows]

    async def delete(self, tenant: str, thread_id: str) -> bool:
        async with self._write:
            cur = await self._conn.execute(
                "DELETE FROM diwaniya_threads WHERE tenant = ? AND thread_id = ?",
                (tenant, thread_id),
            )
            await self._conn.commit()
            return cur.rowcount > 0

    async def _try_lease(self, thread_id: str, owner: str) -> bool:
        now = time.time()
        async with self._write:
            await self._conn.execute(
                "DELETE FROM diwaniya_thread_leases WHERE thread_id = ? AND expires_at < ?",
                (thread_id, now),
            )
            cur = await self._conn.execute(
                "INSERT OR IGNORE INTO diwaniya_thread_leases VALUES (?,?,?)",
                (thread_id, owner, now + self._ttl),
            )
            await self._conn.commit()
            return cur.rowcount == 1

    async def _renew(self, thread_id: str, owner: str) -> None:
        while True:
            await asyncio.sleep(self._ttl / 3)
            async with self._write:
                await self._conn.execute(
                    "UPDATE diwaniya_thread_leases SET expires_at = ?"
                    " WHERE thread_id = ? AND owner = ?",
                    (time.time() + self._ttl, thread_id, owner),
                )
                await self._conn.commit()

    @asynccontextmanager
    async def lock(self, thread_id: str, *, policy: Policy, wait_s: float) -> AsyncIterator[None]:
        owner = uuid.uuid4().hex
        async with self._waiters.waiting(thread_id):
            await acquire_polling(
                lambda: self._try_lease(thread_id, owner), thread_id, policy=policy, wait_s=wait_s
            )
        heartbeat = asyncio.create_task(self._renew(thread_id, owner))
        try:
            yield
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            # Shielded: a cancelled turn must still give the lease back.
            await asyncio.shield(self._release(thread_id, owner))

    async def _release(self, thread_id: str, owner: str) -> None:
        async with self._write:
            await self._conn.execute(
                "DELETE FROM diwaniya_thread_leases WHERE thread_id = ? AND owner = ?",
                (thread_id, owner),
            )
            await self._conn.commit()

    async def ping(self) -> None:
        async with self._write, self._conn.execute("SELECT 1") as cur:
            await cur.fetchone()
