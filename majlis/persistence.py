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
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from diwaniya.errors import Unavailable
from majlis.fence import DeferredSaver
from majlis.records import CHECKPOINT_TYPES
from majlis.retention import RetentionPolicy
from majlis.store_errors import translate_store_errors
from majlis.threads import ThreadStore
from majlis.threads_sqlite import SqliteThreadStore
from majlis.threads_sqlite_schema import enable_wal
from majlis.turn_log import SqliteTurnEvents, TurnLog

if TYPE_CHECKING:
    # The PostgreSQL half lives in majlis.persistence_pg, imported by the
    # functions below only when a DATABASE_URL is used: the SQLite default
    # never loads psycopg.
    from psycopg_pool import AsyncConnectionPool

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


# A connection returned to its pool less than this long ago was working a
# moment ago: checking it again on checkout is a round trip per query for nothing.
IDLE_CHECK_S = 1.0


@dataclass(frozen=True, slots=True)
class PoolOptions:
    """Sizes and timeouts of the psycopg pools (service.settings DIWANIYA_PG_*)."""

    min_size: int = 2
    max_size: int = 20
    lock_pool_size: int = 64
    # Lock connections opened with the pool and kept however long they idle.
    # psycopg grows a pool one connection at a time, so a burst of new turns on
    # a pool smaller than the burst waits for connects in a row (at 32 streams,
    # up to ~0.5 s before turn_started). The service opens its whole lock share
    # (service.settings DIWANIYA_PG_LOCK_POOL_MIN); 1 here for embedders/tests.
    lock_pool_min: int = 1
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


async def check_session_pooling(dsn: str, *, application_name: str | None = None,
                                connect_timeout: int = 3) -> None:
    """Refuse a transaction-pooling PgBouncer (majlis.persistence_pg.check_session_pooling)."""
    from majlis import persistence_pg

    await persistence_pg.check_session_pooling(dsn, application_name=application_name,
                                               connect_timeout=connect_timeout)


async def migrate_postgres(
    dsn: str, *, prepare_threshold: int | None, wait_s: float = 300.0,
    application_name: str | None = None,
) -> None:
    """Create or upgrade the PostgreSQL tables (majlis.persistence_pg.migrate_postgres)."""
    from majlis import persistence_pg

    await persistence_pg.migrate_postgres(dsn, prepare_threshold=prepare_threshold,
                                          wait_s=wait_s, application_name=application_name)


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
    """The checkpointer and registry on PostgreSQL (majlis.persistence_pg.open_postgres)."""
    from majlis import persistence_pg

    return await persistence_pg.open_postgres(
        dsn, min_size=min_size, max_size=max_size, lock_pool_size=lock_pool_size,
        prepare_threshold=prepare_threshold, migrate=migrate, max_waiters=max_waiters,
        options=options, turn_log=turn_log, retention=retention)


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
