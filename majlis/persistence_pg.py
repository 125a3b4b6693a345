"""The PostgreSQL half of majlis.persistence: pools, the pooling check, migrations.

Imported only when ``DATABASE_URL`` is set (through the wrappers in
majlis.persistence), so the SQLite default never loads psycopg, psycopg-pool
or LangGraph's PostgreSQL saver (≈0.15 CPU-s of every process start).
The module docstring of majlis.persistence explains the pool timeouts.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import deque
from collections.abc import Collection
from typing import Any, cast

from langgraph.checkpoint.base import Checkpoint, CheckpointTuple
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg import AsyncConnection
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from diwaniya.errors import ConfigurationError, Unavailable
from majlis.fence import DeferredSaver
from majlis.limit_storage import PG_DDL as LIMITS_DDL
from majlis.persistence import IDLE_CHECK_S, Persistence, PoolOptions, checkpoint_serde
from majlis.pg_pool import EvidencePool
from majlis.retention import RetentionPolicy
from majlis.state import TURN_RECORDS
from majlis.threads_pg import PostgresThreadStore
from majlis.threads_pg_schema import MIGRATION_LOCK, THREADS_DDL
from majlis.turn_log import PG_DDL as TURN_EVENTS_DDL
from majlis.turn_log import PostgresTurnEvents, TurnLog

_returned_at: weakref.WeakKeyDictionary[AsyncConnection[Any], float] = (
    weakref.WeakKeyDictionary())


class _StampedPool(EvidencePool):
    """A pool that notes when each connection came back (for :func:`_check_if_idle`)
    and hands out the one back last first; its checkout timeouts carry their
    verdict, busy or down (majlis.pg_pool)."""

    async def putconn(self, conn: AsyncConnection[Any]) -> None:
        _returned_at[conn] = time.monotonic()
        await super().putconn(conn)
        # psycopg_pool queues idle connections first in, first out: below full
        # load each of the lock pool's 18 then idles 18 turns, over IDLE_CHECK_S
        # from ~18 turns/s down, and every turn paid a check round trip on its
        # lock connection. Back last, out first: the connections in use stay
        # warm (their prepared statements too), the rest idle and are checked
        # when next needed (a pool grown past min_size that shrinks after
        # max_idle closes from the front: a warm one, as correct, the others
        # get checked). Nothing awaited since the pool queued it: no other
        # checkout ran in between.
        idle = getattr(self, "_pool", None)  # psycopg_pool's deque of idle connections
        if isinstance(idle, deque) and idle and idle[-1] is conn:
            idle.rotate(1)


async def _check_if_idle(conn: AsyncConnection[Any]) -> None:
    """The pool's checkout check, skipped for connections returned within IDLE_CHECK_S.

    ``check_connection`` on every checkout cost six round trips per turn. A
    connection that idled longer (the ones a database restart leaves dead) is
    still checked; a busy one that broke fails its query and the pool discards
    it when it comes back. (Stamped by the pool's ``putconn``, not with its
    ``reset`` hook: with a reset hook psycopg returns every connection through
    a background task, which costs more than the check.)

    Idle means since the connection was *returned*, not since it was handed
    out: a lock connection is held for its whole turn, so on a loaded server
    (turns over IDLE_CHECK_S) timing from the hand-out checked the lock
    connection of nearly every turn — a round trip that was 2.3 % of the
    server's samples (py-spy, 32 streams, the shared machine).
    """
    now = time.monotonic()
    last = _returned_at.get(conn)
    if last is not None and now - last < IDLE_CHECK_S and not conn.broken:
        return
    await AsyncConnectionPool.check_connection(conn)


class TurnSaver(AsyncPostgresSaver):
    """LangGraph's PostgreSQL saver, reading a checkpoint's pending writes on the loop.

    ``AsyncPostgresSaver`` deserialises a checkpoint's pending writes in a
    worker thread (``asyncio.to_thread``), once for every checkpoint a
    continuing turn starts from. A turn run with ``durability="exit"`` leaves
    none (majlis.fence): the hop — a thread-pool submit, a wake-up, the GIL
    handed over and back, a self-pipe write to wake the loop — deserialised an
    empty list, and was most of what a continuing turn cost over a fresh one.
    A checkpoint that does hold writes (one written by an older version) is
    still read correctly, only on the loop.

    ``scratch`` channels are not deserialised when a checkpoint is loaded:
    the turn records (majlis.state.TURN_RECORDS), which every turn's input
    replaces before any step reads them — rebuilding the last turn's six
    records through the serde's Python hooks was most of a continuing turn's
    checkpoint decoding. They are still written with every checkpoint.
    Everything else is the saver's own.
    """

    def __init__(self, conn: Any, *, serde: Any = None,
                 scratch: Collection[str] = TURN_RECORDS) -> None:
        super().__init__(conn, serde=serde)
        self._scratch = frozenset(s.encode() for s in scratch)

    def _load_blobs(self, blob_values: list[tuple[bytes, bytes, bytes]]) -> dict[str, Any]:
        if not blob_values:
            return {}
        return {k.decode(): self.serde.loads_typed((t.decode(), v))
                for k, t, v in blob_values if k not in self._scratch and t != b"empty"}

    async def _load_checkpoint_tuple(self, value: DictRow) -> CheckpointTuple:
        thread_id, ns = value["thread_id"], value["checkpoint_ns"]
        parent = value["parent_checkpoint_id"]
        return CheckpointTuple(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                              "checkpoint_id": value["checkpoint_id"]}},
            cast(Checkpoint, {
                **value["checkpoint"],
                "channel_values": {**(value["checkpoint"].get("channel_values") or {}),
                                   **self._load_blobs(value["channel_values"])}}),
            value["metadata"],
            ({"configurable": {"thread_id": thread_id, "checkpoint_ns": ns,
                               "checkpoint_id": parent}} if parent else None),
            self._load_writes(value["pending_writes"]),
        )


async def _configure(conn: AsyncConnection[Any]) -> None:
    await conn.set_autocommit(True)


async def check_session_pooling(dsn: str, *, application_name: str | None = None,
                                connect_timeout: int = 3) -> None:
    """Refuse a transaction- or statement-pooling PgBouncer in front of PostgreSQL.

    The thread locks are *session* advisory locks held across a whole turn,
    and asyncpg caches prepared statements per session: both need one server
    session per client connection (PgBouncer ``pool_mode = session``, the
    CloudNativePG ``Pooler`` with ``poolMode: session``).

    Detection: two client connections open at the same time (:func:`_check_backends`).
    Raises :class:`ConfigurationError` (exit 2 at startup) with what to change.
    """
    kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": None,
                              "connect_timeout": connect_timeout}
    if application_name:
        kwargs["application_name"] = application_name
    async with await AsyncConnection.connect(dsn, **kwargs) as a, \
            await AsyncConnection.connect(dsn, **kwargs) as b:
        await _check_backends(a, b)


async def _check_backends(a: AsyncConnection[Any], b: AsyncConnection[Any]) -> None:
    """Two client connections open at once: their own backends, or a pooler's one.

    Directly on PostgreSQL, and behind session pooling, each has a backend of
    its own; behind transaction pooling the second is handed the server
    connection the first just released (PgBouncer reuses the most recent one),
    so both report the same ``pg_backend_pid()``. Tried a few times.
    """
    for _ in range(3):
        pids = []
        for conn in (a, b):
            cur = await conn.execute("SELECT pg_backend_pid()")
            row = await cur.fetchone()
            pids.append((row["pg_backend_pid"] if isinstance(row, dict) else row[0])
                        if row else None)
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
        await _migrate_on(conn, wait_s=wait_s)


async def _migrate_on(conn: AsyncConnection[Any], *, wait_s: float = 300.0) -> None:
    """:func:`migrate_postgres` on ``conn`` (autocommit, dict rows), under the migration lock."""
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


async def _start_checks(pool: AsyncConnectionPool[Any], lock_pool: AsyncConnectionPool[Any],
                        *, check_pooling: bool, migrate: bool) -> None:
    """The pooling check and the migration, on connections the pools opened anyway.

    A connection of each pool at once is the check's pair (two client
    connections, whichever pool they belong to); the migration runs on a
    query-pool connection. A connection that failed mid-way is closed, not
    given back: it may still hold the migration lock, and the pool hands
    connections out again without a reset.
    """
    if check_pooling:
        async with pool.connection() as a, lock_pool.connection() as b:
            await _check_backends(a, b)
    if migrate:
        async with pool.connection() as conn:
            try:
                await _migrate_on(conn)
            except BaseException:
                await conn.close()
                raise


async def _why(dsn: str, connect_timeout: int, exc: Exception) -> str:
    """What stopped the pools: a pool's open timeout says only that it timed out, so
    one direct connection (on this failure path only) gives the driver's reason."""
    if not isinstance(exc, PoolTimeout):
        return str(exc)
    try:
        conn = await AsyncConnection.connect(dsn, connect_timeout=connect_timeout)
    except Exception as direct:
        return f"{exc} ({direct})"
    await conn.close()
    return str(exc)


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
    pool: AsyncConnectionPool[Any] = _StampedPool(
        dsn, min_size=min(o.min_size, o.max_size), max_size=o.max_size, kwargs=kwargs,
        name="diwaniya", **common,
    )
    lock_pool: AsyncConnectionPool[Any] = _StampedPool(
        dsn, min_size=max(1, min(o.lock_pool_min, o.lock_pool_size)), max_size=o.lock_pool_size,
        # Prepared like the query pool's: a lock connection runs the same few
        # statements all day, and their plans (CTEs, the log row) cost the
        # PostgreSQL backend more than executing them.
        kwargs={"autocommit": True, "prepare_threshold": prepare_threshold,
                "connect_timeout": connect, **named},
        name="diwaniya-locks", **common,
    )
    try:
        # The pooling check and the migration run on the pools' own connections:
        # a start-up opens no backend beyond the pools (each is a fork, an
        # authentication and a cold catalog cache on the server: 50-90 ms of
        # its CPU), and neither adds to the replica's connection peak.
        await pool.open(wait=True, timeout=o.open_timeout_s)
        await lock_pool.open(wait=True, timeout=o.open_timeout_s)
        await _start_checks(pool, lock_pool, check_pooling=o.check_pooling, migrate=migrate)
    except BaseException as exc:
        await pool.close()
        await lock_pool.close()
        if isinstance(exc, ConfigurationError) or not isinstance(exc, Exception):
            raise
        raise Unavailable(f"cannot open PostgreSQL: {await _why(dsn, connect, exc)}") from exc
    # Checkpoints kept per thread, idle expiry (majlis.retention): the stores apply them.
    threads = PostgresThreadStore(pool, lock_pool, max_waiters=max_waiters, retention=retention)
    saver = DeferredSaver(TurnSaver(pool, serde=checkpoint_serde()))
    return Persistence(saver, threads, "postgres", [pool.close, lock_pool.close], pool=pool,
                       retry_after_s=o.retry_after_s,
                       turn_log=TurnLog(PostgresTurnEvents(pool), **(turn_log or {})))
