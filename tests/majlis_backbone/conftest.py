"""``replicas``: two ThreadStore objects over one database, as two replicas see it.

Parametrized over SQLite (two connections to one file) and PostgreSQL (a query
pool and a lock pool each, on the session database).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
from psycopg_pool import AsyncConnectionPool

from majlis.threads import ThreadStore
from majlis.threads_pg import PostgresThreadStore
from majlis.threads_sqlite import SqliteThreadStore


@pytest.fixture(params=["sqlite", "postgres"])
def replicas(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[..., Any]:
    """``async with replicas(max_waiters=…, pool_size=…) as (a, b)``: two migrated stores
    (their migrations run at once: that is safe) over one database, closed after."""

    @asynccontextmanager
    async def open_two(max_waiters: int = 8, pool_size: int = 4
                       ) -> AsyncIterator[tuple[ThreadStore, ThreadStore]]:
        closers: list[Any] = []
        stores: list[ThreadStore] = []
        for _ in range(2):
            if request.param == "postgres":
                dsn = request.getfixturevalue("pg_dsn")
                pool = AsyncConnectionPool(dsn, min_size=1, max_size=pool_size, open=False,
                                           kwargs={"autocommit": True})
                locks = AsyncConnectionPool(dsn, min_size=1, max_size=4, open=False,
                                            kwargs={"autocommit": True})
                await pool.open()
                await locks.open()
                closers += [pool.close, locks.close]
                stores.append(PostgresThreadStore(pool, locks, max_waiters=max_waiters))
            else:
                conn = await aiosqlite.connect(tmp_path / "threads.sqlite3")
                closers.append(conn.close)
                stores.append(SqliteThreadStore(conn, lease_ttl_s=3, max_waiters=max_waiters))
        await asyncio.gather(*(s.migrate() for s in stores))
        try:
            yield stores[0], stores[1]
        finally:
            for close in closers:
                await close()

    return open_two
