"""The PostgreSQL pools check only connections that sat idle, and still replace dead ones.

Checking every checkout cost six round trips per turn; a connection handed back
a moment ago was working a moment ago. One that idled longer (what a database
restart leaves behind) is still checked and replaced before a caller sees it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from majlis import persistence
from majlis.persistence import open_postgres
from majlis.pg_pool import session_alive
from tests.conftest import ADMIN_DSN


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the pools have checked a connection (one item each): the real
    check, counted."""
    done: list[int] = []
    real = AsyncConnectionPool.check_connection

    async def counting(conn: Any) -> None:
        done.append(1)
        await real(conn)

    monkeypatch.setattr(AsyncConnectionPool, "check_connection", staticmethod(counting))
    return done


def _terminate_all(dsn: str) -> int:
    name = dsn.rsplit("/", 1)[1]
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        rows = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE datname = %s", (name,)).fetchall()
    return len(rows)


async def test_busy_connections_skip_the_check(own_database: str, checks: list[int]) -> None:
    db = await open_postgres(own_database, min_size=1, max_size=1, lock_pool_size=1)
    try:
        await db.threads.ping()  # a fresh connection: checked once
        before = len(checks)
        for _ in range(20):
            await db.threads.ping()
        assert len(checks) == before  # each was handed back a moment ago
    finally:
        await db.close()


async def test_a_connection_held_long_is_not_checked_when_it_comes_back(
        own_database: str, checks: list[int]) -> None:
    """Idle is since the connection was returned: a lock connection is held for
    a whole turn, which on a loaded server is longer than IDLE_CHECK_S."""
    db = await open_postgres(own_database, min_size=1, max_size=1, lock_pool_size=1)
    try:
        assert db.pool is not None
        async with db.pool.connection() as conn:  # a fresh connection: checked once
            await asyncio.sleep(persistence.IDLE_CHECK_S + 0.3)  # a long turn holds it
        before = len(checks)
        async with db.pool.connection() as again:
            assert again is conn
            await again.execute("SELECT 1")
        assert len(checks) == before  # handed back a moment ago, though handed out long ago
    finally:
        await db.close()


async def test_a_dead_idle_connection_is_replaced_unseen(own_database: str) -> None:
    db = await open_postgres(own_database, min_size=1, max_size=1, lock_pool_size=1)
    try:
        await db.threads.ping()
        # The test's own database: terminating its backends touches no other test.
        assert _terminate_all(own_database) >= 1  # as a database restart would
        await asyncio.sleep(persistence.IDLE_CHECK_S + 0.3)
        await db.threads.ping()  # the check found it dead; the pool opened another
        await db.threads.get("default", "no-such-thread")
    finally:
        await db.close()


async def test_a_slow_steady_caller_reuses_one_warm_connection(
        own_database: str, checks: list[int]) -> None:
    """Checkouts further apart than IDLE_CHECK_S / (idle connections) found every
    connection of a first-in-first-out pool idle too long — a check round trip
    each (the lock pool holds 18 by default). The one handed back last goes out first."""
    db = await open_postgres(own_database, min_size=3, max_size=3, lock_pool_size=1)
    try:
        assert db.pool is not None
        await db.pool.wait()  # all three open
        async with db.pool.connection() as first:
            pass
        before = len(checks)
        for _ in range(5):
            await asyncio.sleep(persistence.IDLE_CHECK_S * 0.4)
            async with db.pool.connection() as conn:
                assert conn is first
                await conn.execute("SELECT 1")
        assert len(checks) == before
    finally:
        await db.close()


async def test_session_alive_tells_a_terminated_session_without_a_query(own_database: str) -> None:
    """majlis.pg_pool.session_alive: what a turn's commit asks of its lock connection."""
    conn = await psycopg.AsyncConnection.connect(own_database, autocommit=True)
    try:
        assert session_alive(conn) and session_alive(conn)  # reads nothing, changes nothing
        with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
            # The second argument makes the call wait until the backend has exited.
            admin.execute("SELECT pg_terminate_backend(%s, 10000)", (conn.info.backend_pid,))
        assert not session_alive(conn)  # told without a query (no error raised)
    finally:
        await conn.close()
