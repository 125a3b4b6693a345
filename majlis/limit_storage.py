"""Rate-limit counters in the product's own database, as a ``limits`` storage.

The ``limits`` library (moving/fixed-window strategies) ships Redis, Memcached
and MongoDB backends but none for PostgreSQL or SQLite. Diwaniya's replicas
share only their database, so the counters live there: one row per window key,
incremented with a single ``INSERT … ON CONFLICT DO UPDATE … RETURNING`` — one
round trip, atomic under concurrency from any number of replicas, no lock held
across statements. A row whose window has passed restarts at the increment
(the same upsert), so expired rows need no sweeper to be correct; :meth:`prune`
deletes them to keep the table small.

Only the fixed-window strategy is supported (``incr``/``get``/``get_expiry``):
a moving window needs one row per hit, which is a poor trade on PostgreSQL.

PostgreSQL times come from the database clock (``clock_timestamp()``), so
replicas with skewed clocks still agree on when a window ends.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import aiosqlite
from limits.aio.storage import Storage

if TYPE_CHECKING:  # psycopg is imported only on the PostgreSQL path (PostgresCounters)
    from psycopg_pool import AsyncConnectionPool

PG_TABLE = "diwaniya_limit_counters"

PG_DDL = f"""
CREATE TABLE IF NOT EXISTS {PG_TABLE} (
    key        text PRIMARY KEY,
    value      bigint NOT NULL,
    expires_at timestamptz NOT NULL
)"""

# The old row's values on the right-hand side: a passed window restarts at the increment.
_PG_INCR = f"""
INSERT INTO {PG_TABLE} AS c (key, value, expires_at)
VALUES (%(key)s, %(amount)s, clock_timestamp() + make_interval(secs => %(expiry)s))
ON CONFLICT (key) DO UPDATE SET
    value = CASE WHEN c.expires_at <= clock_timestamp() THEN EXCLUDED.value
                 ELSE c.value + EXCLUDED.value END,
    expires_at = CASE WHEN c.expires_at <= clock_timestamp() THEN EXCLUDED.expires_at
                      ELSE c.expires_at END
RETURNING value, extract(epoch FROM expires_at)::float8"""

_PG_GET = f"""
SELECT value, extract(epoch FROM expires_at)::float8 FROM {PG_TABLE}
WHERE key = %(key)s AND expires_at > clock_timestamp()"""

_SQLITE_CREATE = """
CREATE TABLE IF NOT EXISTS limit_counters (
    key        TEXT PRIMARY KEY,
    value      INTEGER NOT NULL,
    expires_at REAL NOT NULL
)"""

_SQLITE_INCR = """
INSERT INTO limit_counters (key, value, expires_at) VALUES (:key, :amount, :now + :expiry)
ON CONFLICT (key) DO UPDATE SET
    value = CASE WHEN expires_at <= :now THEN excluded.value ELSE value + excluded.value END,
    expires_at = CASE WHEN expires_at <= :now THEN excluded.expires_at ELSE expires_at END
RETURNING value, expires_at"""


class Counters(Protocol):
    """Windowed counters: ``(value, expires_at epoch seconds)``; absent/expired → ``(0, now)``."""

    async def incr(self, key: str, expiry_s: int, amount: int) -> tuple[int, float]: ...
    async def get(self, key: str) -> tuple[int, float]: ...
    async def clear(self, key: str | None) -> int: ...
    async def prune(self) -> int: ...
    async def expired(self) -> int:
        """How many rows :meth:`prune` would delete now (``diwaniya gc --dry-run``)."""
        ...
    async def ping(self) -> None: ...
    async def close(self) -> None: ...


class PostgresCounters:
    """Counters in ``diwaniya_limit_counters`` on the service's psycopg pool."""

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        # Here, not at module level: the SQLite default never loads psycopg.
        from psycopg.rows import tuple_row

        self._pool = pool
        self._tuples = tuple_row

    async def migrate(self) -> None:
        # Replicas start together: serialise CREATE TABLE IF NOT EXISTS, which
        # can otherwise fail on the catalog's unique index.
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (PG_TABLE,))
            await conn.execute(PG_DDL)

    async def incr(self, key: str, expiry_s: int, amount: int) -> tuple[int, float]:
        async with self._pool.connection() as conn:
            cur = await conn.cursor(row_factory=self._tuples).execute(
                _PG_INCR, {"key": key, "amount": amount, "expiry": expiry_s})
            row = await cur.fetchone()
        assert row is not None  # an upsert with RETURNING always returns its row
        return int(row[0]), float(row[1])

    async def get(self, key: str) -> tuple[int, float]:
        async with self._pool.connection() as conn:
            cur = await conn.cursor(row_factory=self._tuples).execute(_PG_GET, {"key": key})
            row = await cur.fetchone()
        return (int(row[0]), float(row[1])) if row else (0, time.time())

    async def clear(self, key: str | None) -> int:
        async with self._pool.connection() as conn:
            if key is None:
                cur = await conn.execute(f"DELETE FROM {PG_TABLE}")
            else:
                cur = await conn.execute(f"DELETE FROM {PG_TABLE} WHERE key = %s", (key,))
            return cur.rowcount

    async def prune(self) -> int:
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                f"DELETE FROM {PG_TABLE} WHERE expires_at <= clock_timestamp()")
            return cur.rowcount

    async def expired(self) -> int:
        async with self._pool.connection() as conn:
            cur = await conn.cursor(row_factory=self._tuples).execute(
                f"SELECT count(*) FROM {PG_TABLE} WHERE expires_at <= clock_timestamp()")
            row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def ping(self) -> None:
        async with self._pool.connection() as conn:
            await conn.execute("SELECT 1")

    async def close(self) -> None:
        """The pool belongs to the persistence layer, which closes it."""


class SqliteCounters:
    """Counters in ``limits.sqlite3`` for the embedded (single-host) default.

    One upsert statement is atomic in SQLite, so processes sharing the file
    (``serve --workers``) count correctly too.
    """

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    @classmethod
    async def open(cls, path: Path) -> SqliteCounters:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(path, timeout=30.0)
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute(_SQLITE_CREATE)
        await conn.commit()
        return cls(conn)

    async def incr(self, key: str, expiry_s: int, amount: int) -> tuple[int, float]:
        cur = await self._conn.execute(
            _SQLITE_INCR, {"key": key, "amount": amount, "now": time.time(), "expiry": expiry_s})
        row = await cur.fetchone()
        await self._conn.commit()
        assert row is not None
        return int(row[0]), float(row[1])

    async def get(self, key: str) -> tuple[int, float]:
        now = time.time()
        cur = await self._conn.execute(
            "SELECT value, expires_at FROM limit_counters WHERE key = ? AND expires_at > ?",
            (key, now))
        row = await cur.fetchone()
        return (int(row[0]), float(row[1])) if row else (0, now)

    async def clear(self, key: str | None) -> int:
        if key is None:
            cur = await self._conn.execute("DELETE FROM limit_counters")
        else:
            cur = await self._conn.execute("DELETE FROM limit_counters WHERE key = ?", (key,))
        await self._conn.commit()
        return cur.rowcount

    async def prune(self) -> int:
        cur = await self._conn.execute(
            "DELETE FROM limit_counters WHERE expires_at <= ?", (time.time(),))
        await self._conn.commit()
        return cur.rowcount

    async def expired(self) -> int:
        cur = await self._conn.execute(
            "SELECT count(*) FROM limit_counters WHERE expires_at <= ?", (time.time(),))
        row = await cur.fetchone()
        return int(row[0]) if row else 0

    async def ping(self) -> None:
        await self._conn.execute("SELECT 1")

    async def close(self) -> None:
        await self._conn.close()


class DatabaseStorage(Storage):
    """A ``limits.aio`` storage over :class:`Counters` (fixed-window strategy).

    >>> limiter = FixedWindowRateLimiter(DatabaseStorage(counters))   # doctest: +SKIP
    >>> await limiter.hit(parse("5/minute"), "turns", "acme")          # doctest: +SKIP
    True
    """

    STORAGE_SCHEME = None

    def __init__(self, counters: Counters) -> None:
        super().__init__(wrap_exceptions=False)
        self.counters = counters

    @property
    def base_exceptions(self) -> type[Exception] | tuple[type[Exception], ...]:
        return ()

    async def incr(self, key: str, expiry: int, amount: int = 1) -> int:
        value, _ = await self.counters.incr(key, int(expiry), amount)
        return value

    async def get(self, key: str) -> int:
        value, _ = await self.counters.get(key)
        return value

    async def get_expiry(self, key: str) -> float:
        _, expires_at = await self.counters.get(key)
        return expires_at

    async def check(self) -> bool:
        try:
            await self.counters.ping()
        except Exception:
            return False
        return True

    async def reset(self) -> int | None:
        return await self.counters.clear(None)

    async def clear(self, key: str) -> None:
        await self.counters.clear(key)
