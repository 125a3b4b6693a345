"""The PostgreSQL pools check only connections that sat idle, and still replace dead ones.

Checking every checkout cost six round trips per turn; a connection handed back
a moment ago was working a moment ago. One that idled longer (what a database
restart leaves behind) is still checked and replaced before a caller sees it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from majlis import persistence
from majlis.persistence import open_postgres
from tests.conftest import ADMIN_DSN


@pytest.fixture
def own_db(pg_dsn: str) -> Iterator[str]:
    """A database of this test's own, so terminating its backends touches nothing else."""
    name = f"diwaniya_pool_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"{ADMIN_DSN.rsplit('/', 1)[0]}/{name}"
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _terminate_all(dsn: str) -> int:
    name = dsn.rsplit("/", 1)[1]
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        rows = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE datname = %s", (name,)).fetchall()
    return len(rows)


async def test_busy_connections_skip_the_check(own_db: str, monkeypatch: pytest.MonkeyPatch
                                               ) -> None:
    checks = 0
    real = AsyncConnectionPool.check_connection

    async def counting(conn: Any) -> None:
        nonlocal checks
        checks += 1
        await real(conn)

    monkeypatch.setattr(AsyncConnectionPool, "check_connection", staticmethod(counting))
    db = await open_postgres(own_db, min_size=1, max_size=1, lock_pool_size=1)
    try:
        await db.threads.ping()  # a fresh connection: checked once
        before = checks
        for _ in range(20):
            await db.threads.ping()
        assert checks == before  # each was handed back a moment ago
    finally:
        await db.close()


async def test_a_connection_held_long_is_not_checked_when_it_comes_back(
        own_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Idle is since the connection was returned: a lock connection is held for
    a whole turn, which on a loaded server is longer than IDLE_CHECK_S."""
    checks = 0
    real = AsyncConnectionPool.check_connection

    async def counting(conn: Any) -> None:
        nonlocal checks
        checks += 1
        await real(conn)

    monkeypatch.setattr(AsyncConnectionPool, "check_connection", staticmethod(counting))
    db = await open_postgres(own_db, min_size=1, max_size=1, lock_pool_size=1)
    try:
        assert db.pool is not None
        async with db.pool.connection() as conn:  # a fresh connection: checked once
            await asyncio.sleep(persistence.IDLE_CHECK_S + 0.3)  # a long turn holds it
        before = checks
        async with db.pool.connection() as again:
            assert again is conn
            await again.execute("SELECT 1")
        assert checks == before  # handed back a moment ago, though handed out long ago
    finally:
        await db.close()


async def test_a_dead_idle_connection_is_replaced_unseen(own_db: str) -> None:
    db = await open_postgres(own_db, min_size=1, max_size=1, lock_pool_size=1)
    try:
        await db.threads.ping()
        assert _terminate_all(own_db) >= 1  # as a database restart would
        await asyncio.sleep(persistence.IDLE_CHECK_S + 0.3)
        await db.threads.ping()  # the check found it dead; the pool opened another
        await db.threads.get("default", "no-such-thread")
    finally:
        await db.close()
