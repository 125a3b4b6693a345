"""Opens the durable parts: LangGraph's checkpointer and the thread registry.

``DATABASE_URL`` set → :class:`AsyncPostgresSaver` on a psycopg pool
(autocommit, dict_row, a connection check on checkout, ``prepare_threshold``
configurable because transaction-mode PgBouncer cannot keep prepared
statements). Unset → :class:`AsyncSqliteSaver` on ``<data_dir>/threads.sqlite3``.
Either is wrapped in :class:`~majlis.fence.DeferredSaver`, so that a turn's
checkpoint is written only by its fenced commit (docs/fencing.md).

Migrations are safe when several replicas start at once: PostgreSQL DDL runs
under an advisory lock, because LangGraph's own ``setup()`` races on its
``checkpoint_migrations`` insert.

Outages: every pool has a short checkout timeout and a connect timeout, so a
call fails with UNAVAILABLE (majlis.store_errors) instead of hanging while the
database is away. psycopg-pool backs reconnection off exponentially (1 s, 2 s,
4 s … — 49 s to recover after a 60 s outage); ``reconnect_timeout`` bounds one
such attempt, after which the next demand (a call, or the readiness check)
starts a fresh attempt at once, so recovery takes seconds however long the
outage was.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
import weakref
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiosqlite
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from diwaniya.errors import ConfigurationError, Unavailable
from majlis.fence import DeferredSaver
from majlis.limit_storage import PG_DDL as LIMITS_DDL
from majlis.records import CHECKPOINT_TYPES
from majlis.retention import RetentionPolicy
from majlis.store_errors import translate_store_errors
from majlis.threads import ThreadStore
from majlis.threads_pg import PostgresThreadStore
from majlis.threads_pg_schema import MIGRATION_LOCK, THREADS_DDL
from majlis.threads_sqlite import SqliteThreadStore, enable_wal
from majlis.turn_log import PG_DDL as TURN_EVENTS_DDL
from majlis.turn_log import PostgresTurnEvents, SqliteTurnEvents, TurnLog


def checkpoint_serde() -> JsonPlusSerializer:
    """LangGraph's serde with our turn records allowed by name (majlis.records).

    An explicit allowlist, not LangGraph's permissive default (which logs a
    warning per type and is to become strict): anything else that is not one
    of LangGraph's own safe types comes back as the dict of its fields, which
    the records' readers accept.
    """
    return JsonPlusSerializer(allowed_msgpack_modules=CHECKPOINT_TYPES)


@dataclass
class Persistence:
    """The checkpointer and thread registry, plus how to close them."""

    checkpointer: BaseCheckpointSaver[Any]
    threads: ThreadStore
    backend: str
    _closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    pool: AsyncConnectionPool[Any] | None = None
    drain_timeout_s: float = 5.0
    retry_after_s: float = 1.0
    # Each turn's events for ResumeTurn (majlis.turn_log); None: not logged.
    turn_log: TurnLog | None = None

    def errors(self) -> translate_store_errors:
        """``with persistence.errors():`` — database failures inside become domain errors."""
        return translate_store_errors(self.pool, retry_after_s=self.retry_after_s)

    async def drain(self) -> None:
        """Wait (bounded) until cancelled turns have given their thread locks back."""
        if self._closers:
            await self.threads.drain(self.drain_timeout_s)

    async def ping(self) -> None:
        """Raise :class:`Unavailable` when the database does not answer (readiness)."""
        try:
            await self.threads.ping()
        except Exception as exc:
            raise Unavailable(f"{self.backend} database is not answering: {exc}") from exc

    async def close(self) -> None:
        # Cancelled turns give their locks back on these connections: wait for
        # them before closing, or their leases outlive the process.
        await self.drain()
        for close in reversed(self._closers):
            await close()
        self._closers.clear()


# A connection last handed out less than this long ago was working a moment
# ago: checking it again on checkout is a round trip per query for nothing.
IDLE_CHECK_S = 1.0
_handed_out_at: weakref.WeakKeyDictionary[AsyncConnection[Any], float] = (
    weakref.WeakKeyDictionary())


async def _check_if_idle(conn: AsyncConnection[Any]) -> None:
    """The pool's checkout check, skipped for connections handed out within IDLE_CHECK_S.

    ``check_connection`` on every checkout cost six round trips per turn. A
    connection that idled longer (the ones a database restart leaves dead) is
    still checked; a busy one that broke fails its query and the pool discards
    it when it comes back. (Timed at checkout, not with the pool's ``reset``
    hook: with a reset hook psycopg returns every connection through a
    background task, which costs more than the check.)
    """
    now = time.monotonic()
    last = _handed_out_at.get(conn)
    _handed_out_at[conn] = now
    if last is not None and now - last < IDLE_CHECK_S and not conn.broken:
        return
    await AsyncConnectionPool.check_connection(conn)


async def _configure(conn: AsyncConnection[Any]) -> None:
    await conn.set_autocommit(True)


async def check_session_pooling(dsn: str, *, application_name: str | None = None,
                                connect_timeout: int = 3) -> None:
    """Refuse a transaction- or statement-pooling PgBouncer in front of PostgreSQL.

    The thread locks are *session* advisory locks held across a whole turn,
    and asyncpg caches prepared statements per session: both need one server
    session per client connection (PgBouncer ``pool_mode = session``, the
    CloudNativePG ``Pooler`` with ``poolMode: session``).

    Detection: two client connections open at the same time. Directly on
    PostgreSQL, and behind session pooling, each has a backend of its own;
    behind transaction pooling the second is handed the server connection the
    first just released (PgBouncer reuses the most recent one), so both report
    the same ``pg_backend_pid()``. Tried a few times; raises
    :class:`ConfigurationError` (exit 2 at startup) with what to change.
    """
    kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": None,
                              "connect_timeout": connect_timeout}
    if application_name:
        kwargs["application_name"] = application_name
    async with await AsyncConnection.connect(dsn, **kwargs) as a, \
            await AsyncConnection.connect(dsn, **kwargs) as b:
        for _ in range(3):
            pids = []
            for conn in (a, b):
                cur = await conn.execute("SELECT pg_backend_pid()")
                row = await cur.fetchone()
                pids.append(row[0] if row else None)
            if pids[0] == pids[1]:
                raise ConfigurationError(
                    "DATABASE_URL reaches PostgreSQL through a pooler in transaction or "
                    f"statement mode (two open connections share backend {pids[0]}): the "
                    "thread locks are session advisory locks, so set pool_mode=session "
                    "(CloudNativePG Pooler: poolMode: session) or connect directly")


async def migrate_postgres(
    dsn: str, *, prepare_threshold: int | None, wait_s: float = 300.0,
    application_name: str | None = None,
) -> None:
    """Create or upgrade the checkpoint and thread tables; idempotent and replica-safe.

    Replicas take turns through a session advisory lock. Waiters *poll* with
    ``pg_try_advisory_lock`` instead of blocking in ``pg_advisory_lock``: a
    blocked statement is an open transaction, and LangGraph's migrations run
    ``CREATE INDEX CONCURRENTLY``, which waits for every open transaction —
    a blocking waiter would deadlock with the replica that holds the lock.
    """
    extra: dict[str, Any] = {"application_name": application_name} if application_name else {}
    async with await AsyncConnection.connect(
        dsn, autocommit=True, prepare_threshold=prepare_threshold, row_factory=dict_row, **extra
    ) as conn:
        deadline = time.monotonic() + wait_s
        while True:
            cur = await conn.execute("SELECT pg_try_advisory_lock(%s) AS got", (MIGRATION_LOCK,))
            row = await cur.fetchone()
            if row and row["got"]:
                break
            if time.monotonic() > deadline:
                raise Unavailable(f"another replica held the migration lock for {wait_s:.0f}s")
            await asyncio.sleep(0.2)
        try:
            await AsyncPostgresSaver(conn).setup()
            await conn.execute(THREADS_DDL)
            await conn.execute(TURN_EVENTS_DDL)
            # The rate-limit counters (majlis.limit_storage): created here, so a
            # replica needs no DDL right at start-up (DIWANIYA_MIGRATE_ON_START=false).
            await conn.execute(LIMITS_DDL)
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))


@dataclass(frozen=True, slots=True)
class PoolOptions:
    """Sizes and timeouts of the psycopg pools (service.settings DIWANIYA_PG_*)."""

    min_size: int = 2
    max_size: int = 20
    lock_pool_size: int = 64
    checkout_timeout_s: float = 5.0
    connect_timeout_s: float = 3.0
    reconnect_timeout_s: float = 4.0
    max_waiting: int = 256
    open_timeout_s: float = 10.0
    retry_after_s: float = 1.0
    # pg_stat_activity.application_name of every connection (majlis.pg_budget).
    application_name: str | None = None
    # Refuse a transaction-pooling PgBouncer at startup (check_session_pooling).
    check_pooling: bool = True


async def open_postgres(
    dsn: str,
    *,
    min_size: int = 2,
    max_size: int = 20,
    lock_pool_size: int = 64,
    prepare_threshold: int | None = 5,
    migrate: bool = True,
    max_waiters: int = 8,
    options: PoolOptions | None = None,
    turn_log: dict[str, float] | None = None,
    retention: RetentionPolicy | None = None,
) -> Persistence:
    o = options or PoolOptions(min_size=min_size, max_size=max_size,
                               lock_pool_size=lock_pool_size)
    # libpq's connect_timeout is whole seconds (at least 2 honoured in practice).
    connect = max(1, round(o.connect_timeout_s))
    named = {"application_name": o.application_name} if o.application_name else {}
    kwargs = {"autocommit": True, "row_factory": dict_row, "prepare_threshold": prepare_threshold,
              "connect_timeout": connect, **named}
    common: dict[str, Any] = {
        "open": False, "check": _check_if_idle,
        "timeout": o.checkout_timeout_s, "reconnect_timeout": o.reconnect_timeout_s,
        "max_waiting": o.max_waiting,
    }
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        dsn, min_size=min(o.min_size, o.max_size), max_size=o.max_size, kwargs=kwargs,
        name="diwaniya", **common,
    )
    lock_pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        dsn, min_size=1, max_size=o.lock_pool_size,
        kwargs={"autocommit": True, "prepare_threshold": None, "connect_timeout": connect,
                **named},
        name="diwaniya-locks", **common,
    )
    try:
        # Before the pools open, on connections closed again: neither the
        # check nor the migration adds to the replica's connection peak.
        if o.check_pooling:
            await check_session_pooling(dsn, application_name=o.application_name,
                                        connect_timeout=connect)
        if migrate:
            await migrate_postgres(dsn, prepare_threshold=prepare_threshold,
                                   application_name=o.application_name)
        await pool.open(wait=True, timeout=o.open_timeout_s)
        await lock_pool.open(wait=True, timeout=o.open_timeout_s)
    except ConfigurationError:
        raise
    except Exception as exc:
        await pool.close()
        await lock_pool.close()
        raise Unavailable(f"cannot open PostgreSQL: {exc}") from exc
    # Checkpoints kept per thread, idle expiry (majlis.retention): the stores apply them.
    threads = PostgresThreadStore(pool, lock_pool, max_waiters=max_waiters, retention=retention)
    saver = DeferredSaver(AsyncPostgresSaver(pool, serde=checkpoint_serde()))
    return Persistence(saver, threads, "postgres", [pool.close, lock_pool.close], pool=pool,
                       retry_after_s=o.retry_after_s,
                       turn_log=TurnLog(PostgresTurnEvents(pool), **(turn_log or {})))


async def open_sqlite(data_dir: Path, *, migrate: bool = True, max_waiters: int = 8,
                      turn_log: dict[str, float] | None = None,
                      retention: RetentionPolicy | None = None) -> Persistence:
    await asyncio.to_thread(data_dir.mkdir, parents=True, exist_ok=True)
    path = data_dir / "threads.sqlite3"
    saver_conn = await aiosqlite.connect(path)
    await enable_wal(saver_conn)
    registry_conn = await aiosqlite.connect(path)
    inner = AsyncSqliteSaver(saver_conn, serde=checkpoint_serde())
    threads = SqliteThreadStore(registry_conn, max_waiters=max_waiters, retention=retention)
    if migrate:
        await inner.setup()
        await threads.migrate()
    # Its own connection: the registry's transactions must not be committed by
    # a turn-log write. The file is in WAL already; only the busy wait is per connection.
    events_conn = await aiosqlite.connect(path)
    await events_conn.execute("PRAGMA busy_timeout=5000")
    events = SqliteTurnEvents(events_conn)
    if migrate:
        await events.migrate()
    # A process that died mid-turn (SIGKILL, a grace period that ran out) left
    # its leases behind: clear them now rather than answer "busy" until they lapse.
    with suppress(sqlite3.OperationalError):  # a file from before migrations: they lapse
        await threads.clear_dead_leases()
    return Persistence(DeferredSaver(inner), threads, "sqlite",
                       [saver_conn.close, registry_conn.close, events_conn.close],
                       turn_log=TurnLog(events, **(turn_log or {})))
