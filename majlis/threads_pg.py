"""PostgreSQL :class:`~majlis.threads.ThreadStore`: a table plus advisory locks."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime

from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from majlis.store_errors import translate_store_errors
from majlis.threads import OnWait, Policy, ThreadRow, WaiterCounter, acquire_polling

# Advisory-lock key space: the first argument of the two-int form names our
# application ("DW" in ASCII) so that other software's advisory locks on the
# same database cannot collide with ours.
_LOCK_CLASS = 0x4457

MIGRATION_LOCK = 0x44570001

THREADS_DDL = """
CREATE TABLE IF NOT EXISTS diwaniya_threads (
    thread_id   text PRIMARY KEY,
    tenant      text NOT NULL,
    user_id     text NOT NULL,
    title       text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    turn_count  integer NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS diwaniya_threads_by_user
    ON diwaniya_threads (tenant, user_id, updated_at DESC, thread_id DESC);
"""

_COLS = "thread_id, tenant, user_id, title, created_at, updated_at, turn_count"


class PostgresThreadStore:
    """Threads in PostgreSQL. ``pool`` serves queries; ``lock_pool`` holds one
    connection per running turn for its advisory lock (so locks never starve queries).

    Pool and connection failures leave as domain errors (majlis.store_errors):
    a lock pool that is merely full is RESOURCE_EXHAUSTED, a database that is
    down is UNAVAILABLE — each after at most the pool's checkout timeout.
    """

    def __init__(
        self, pool: AsyncConnectionPool, lock_pool: AsyncConnectionPool, *, max_waiters: int = 8
    ) -> None:
        self._pool = pool
        self._lock_pool = lock_pool
        self._waiters = WaiterCounter(max_waiters)
        self._held = 0
        self._idle = asyncio.Event()
        self._idle.set()

    async def migrate(self) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            # Transaction-scoped: concurrent replicas run the DDL one at a time.
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            await conn.execute(THREADS_DDL)

    async def create(self, row: ThreadRow) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                f"INSERT INTO diwaniya_threads ({_COLS}) VALUES (%s,%s,%s,%s,%s,%s,%s)",
                (row.thread_id, row.tenant, row.user_id, row.title, row.created_at,
                 row.updated_at, row.turn_count),
            )

    async def get(self, tenant: str, thread_id: str) -> ThreadRow | None:
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(
                f"SELECT {_COLS} FROM diwaniya_threads WHERE tenant = %s AND thread_id = %s",
                (tenant, thread_id),
            )
            found = await cur.fetchone()
        return ThreadRow(**found) if found else None

    async def record_turn(self, thread_id: str, *, at: datetime, title: str) -> None:
        async with self._pool.connection() as conn:
            await conn.execute(
                "UPDATE diwaniya_threads SET updated_at = greatest(updated_at, %s),"
                " turn_count = turn_count + 1,"
                " title = CASE WHEN title = '' THEN %s ELSE title END WHERE thread_id = %s",
                (at, title, thread_id),
            )

    async def list(
        self, tenant: str, user_id: str, *, limit: int, after: tuple[datetime, str] | None
    ) -> list[ThreadRow]:
        query = f"SELECT {_COLS} FROM diwaniya_threads WHERE tenant = %s AND user_id = %s"
        params: list[object] = [tenant, user_id]
        if after is not None:
            query += " AND (updated_at, thread_id) < (%s, %s)"
            params += [after[0], after[1]]
        query += " ORDER BY updated_at DESC, thread_id DESC LIMIT %s"
        params.append(limit)
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(query, params)
            rows = await cur.fetchall()
        return [ThreadRow(**r) for r in rows]

    async def delete(self, tenant: str, thread_id: str) -> bool:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "DELETE FROM diwaniya_threads WHERE tenant = %s AND thread_id = %s",
                (tenant, thread_id),
            )
            return cur.rowcount > 0

    @asynccontextmanager
    async def lock(self, thread_id: str, *, policy: Policy, wait_s: float,
                   on_wait: OnWait | None = None) -> AsyncIterator[None]:
        async with self._waiters.waiting(thread_id, policy=policy):
            if on_wait is not None and self._lock_pool_full():
                # Every lock connection holds a running turn: say so now, not
                # after the checkout timeout.
                on_wait("lock_pool", self._lock_pool.get_stats().get("requests_waiting", 0) + 1)
            with translate_store_errors(self._lock_pool):
                conn = await self._lock_pool.getconn()
            self._held += 1
            self._idle.clear()
            try:

                async def try_lock() -> bool:
                    with translate_store_errors():
                        cur = await conn.execute(
                            "SELECT pg_try_advisory_lock(%s, hashtext(%s))",
                            (_LOCK_CLASS, thread_id))
                        row = await cur.fetchone()
                    return bool(row and row[0])

                await acquire_polling(try_lock, thread_id, policy=policy, wait_s=wait_s,
                                      on_wait=on_wait,
                                      position=lambda: self._waiters.position(thread_id))
                try:
                    yield
                finally:
                    # The lock is session-level: release it before the connection
                    # returns to the pool, even when the turn was cancelled. If the
                    # unlock itself fails, close the connection — PostgreSQL then
                    # drops the lock — rather than pool a connection that holds it.
                    try:
                        await asyncio.shield(conn.execute(
                            "SELECT pg_advisory_unlock(%s, hashtext(%s))",
                            (_LOCK_CLASS, thread_id)))
                    except BaseException:
                        await conn.close()
                        raise
            finally:
                await asyncio.shield(self._lock_pool.putconn(conn))
                self._held -= 1
                if not self._held:
                    self._idle.set()

    def _lock_pool_full(self) -> bool:
        stats = self._lock_pool.get_stats()
        return (stats.get("pool_size", 0) >= self._lock_pool.max_size
                and stats.get("pool_available", 0) == 0)

    async def ping(self) -> None:
        with translate_store_errors(self._pool):
            async with self._pool.connection() as conn:
                await conn.execute("SELECT 1")

    async def drain(self, timeout_s: float = 5.0) -> None:
        """Wait up to ``timeout_s`` for cancelled turns to unlock and return their connections."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout_s)
