"""PostgreSQL :class:`~majlis.threads.ThreadStore`: a table plus advisory locks.

Fencing: taking a thread's lock bumps ``lease_epoch`` on its row and sets
``lease_owner`` to a new uuid (one statement with the lock, committed
asynchronously); a turn's commit row-locks it with an UPDATE whose WHERE is
the (epoch, owner) its lock produced, and keeps its writes only if that
matched. A turn whose lock session died cannot commit once a successor has
taken the lock — nor after a crash lost its bump, since no one else is ever
given its owner — and the successor's bump waits for a commit already in
flight, so it always starts from the committed head (docs/fencing.md). The
commit itself is majlis.threads_pg_commit; the statements, majlis.threads_pg_sql.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from diwaniya.errors import NotFound
from majlis import threads_pg_commit
from majlis.retention import PostgresCheckpoints, RetentionPolicy
from majlis.store_errors import translate_store_errors
from majlis.threads import (
    CheckpointWrites,
    Lease,
    OnWait,
    Policy,
    RequestKey,
    RequestRecord,
    ThreadRow,
    TurnCommit,
    WaiterCounter,
    WaitSignal,
    acquire_polling,
)
from majlis.threads_pg_commit import Hold
from majlis.threads_pg_schema import MIGRATION_LOCK, THREADS_DDL
from majlis.threads_pg_sql import (
    CLAIM,
    CLAIM_NEW_THREAD,
    CLAIM_OWNED,
    COLS,
    LIVE,
    LOCK_CLASS,
    LOG_FIRST_PARAMS,
    REQ_COLS,
    REQ_KEY,
    lock_statement,
)

log = logging.getLogger("diwaniya.threads")

# Expired request records are deleted at most this often per process.
PRUNE_EVERY_S = 60.0

def _record(row: dict[str, Any]) -> RequestRecord:
    return RequestRecord(
        key=RequestKey(row["tenant"], row["user_id"], row["request_id"]),
        thread_id=row["thread_id"], content_hash=row["content_hash"],
        new_thread=row["new_thread"], done=row["done"], turn_id=row["turn_id"],
        events=list(row["events"]), result=dict(row["result"]),
        checkpoint_id=row["checkpoint_id"],
    )


class PostgresThreadStore:
    """Threads in PostgreSQL. ``pool`` serves queries; ``lock_pool`` holds one
    connection per running turn for its advisory lock (so locks never starve queries).

    Pool and connection failures leave as domain errors (majlis.store_errors):
    a lock pool that is merely full is RESOURCE_EXHAUSTED, a database that is
    down is UNAVAILABLE — each after at most the pool's checkout timeout.
    """

    def __init__(
        self, pool: AsyncConnectionPool, lock_pool: AsyncConnectionPool, *, max_waiters: int = 8,
        retention: RetentionPolicy | None = None,
    ) -> None:
        self._pool = pool
        self._retention = retention or RetentionPolicy()
        self._pruner = PostgresCheckpoints()
        self._lock_pool = lock_pool
        self._waiters = WaiterCounter(max_waiters)
        self._pruned_at = float("-inf")
        self._held = 0
        # Running turns' lock connections by lease token (the owner uuid).
        self._holds: dict[str, Hold] = {}
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
                f"INSERT INTO diwaniya_threads ({COLS}) VALUES (%s,%s,%s,%s,%s,%s,%s)",
                (row.thread_id, row.tenant, row.user_id, row.title, row.created_at,
                 row.updated_at, row.turn_count),
            )

    def _live(self, tenant: str) -> tuple[str, list[object]]:
        """The WHERE part that hides the tenant's expired threads (majlis.retention)."""
        ttl = self._retention.idle_ttl(tenant)
        if ttl <= 0:
            return "", []
        return " AND active_at >= now() - make_interval(secs => %s)", [ttl]

    async def get(self, tenant: str, thread_id: str) -> ThreadRow | None:
        live, extra = self._live(tenant)
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(
                f"SELECT {COLS} FROM diwaniya_threads WHERE tenant = %s AND thread_id = %s"
                + live, (tenant, thread_id, *extra),
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
        live, params = self._live(tenant)
        query = f"SELECT {COLS} FROM diwaniya_threads WHERE tenant = %s AND user_id = %s" + live
        params = [tenant, user_id, *params]
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
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(
                "DELETE FROM diwaniya_requests WHERE tenant = %s AND thread_id = %s",
                (tenant, thread_id),
            )
            cur = await conn.execute(
                "DELETE FROM diwaniya_threads WHERE tenant = %s AND thread_id = %s",
                (tenant, thread_id),
            )
            return cur.rowcount > 0

    # ------------------------------------------------------------ fencing
    async def commit_turn(self, lease: Lease, writes: CheckpointWrites, commit: TurnCommit) -> None:
        """The fenced commit (majlis.threads_pg_commit): on the turn's lock connection,
        with its unlock, while that session lives; else on a query-pool connection."""
        hold = self._holds.get(lease.token) if lease.token is not None else None
        await threads_pg_commit.commit_turn(
            self._pool, hold, lease, writes, commit,
            keep=self._retention.checkpoints_kept, pruner=self._pruner)

    async def turn_saved(self, thread_id: str, checkpoint_id: str) -> bool:
        async with self._pool.connection() as conn, conn.transaction():
            # FOR UPDATE waits for a commit of this thread still in flight.
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(
                "SELECT head_checkpoint_id FROM diwaniya_threads WHERE thread_id = %s FOR UPDATE",
                (thread_id,),
            )
            row = await cur.fetchone()
        return bool(row and checkpoint_id and row["head_checkpoint_id"] == checkpoint_id)

    # ----------------------------------------------------------- requests
    async def claim_request(
        self, key: RequestKey, *, thread_id: str, content_hash: str, new_thread: ThreadRow | None,
        window_s: float, owner_check: bool = False,
    ) -> RequestRecord:
        """One statement (atomic on its own): record the request unless a live record
        holds its id — an expired one is overwritten in place — and create
        ``new_thread`` only when this call recorded it, or (``owner_check``) only
        on a thread the user owns. A live record (a retry) is read by a second
        query; the first message of a new conversation and every new request
        cost one round trip."""
        async with translate_store_errors(self._pool), self._pool.connection() as conn:
            if time.monotonic() - self._pruned_at >= PRUNE_EVERY_S:
                await self._prune(conn, window_s)
            row = new_thread
            params: list[object] = [key.tenant, key.user_id, key.request_id, thread_id,
                                    content_hash, row is not None, window_s]
            sql = CLAIM
            if row is not None:
                sql = CLAIM_NEW_THREAD
                params += [row.thread_id, row.tenant, row.user_id, row.title, row.created_at,
                           row.updated_at, row.turn_count]
            elif owner_check:
                live, extra = self._live(key.tenant)
                sql = CLAIM_OWNED.replace("{live}", live)
                params = [key.user_id, key.tenant, thread_id, *extra, *params]
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(sql, params)
            claimed = await cur.fetchone()
            if owner_check and row is None:
                if not (claimed and claimed.pop("mine")):
                    # Exactly what a missing thread says: thread ids cannot be probed.
                    raise NotFound(f"thread {thread_id} not found for user {key.user_id}")
                if claimed["tenant"] is None:
                    claimed = None
            if claimed:
                return replace(_record(claimed), claimed=True)
            found = await self._select_request(conn, key)
        assert found is not None  # live already (not recorded above)
        return found

    async def get_request(self, key: RequestKey, *, window_s: float) -> RequestRecord | None:
        async with translate_store_errors(self._pool), self._pool.connection() as conn:
            found = await self._select_request(conn, key, window_s)
        return found

    @staticmethod
    async def _select_request(conn: AsyncConnection[Any], key: RequestKey,
                              window_s: float | None = None) -> RequestRecord | None:
        query = f"SELECT {REQ_COLS} FROM diwaniya_requests WHERE {REQ_KEY}"
        params: list[object] = [key.tenant, key.user_id, key.request_id]
        if window_s is not None:
            query += f" AND {LIVE}"
            params.append(window_s)
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(query, params)
        row = await cur.fetchone()
        return _record(row) if row else None

    async def _prune(self, conn: AsyncConnection[Any], window_s: float) -> None:
        now = time.monotonic()
        if now - self._pruned_at < PRUNE_EVERY_S:
            return
        self._pruned_at = now
        await conn.execute(
            f"DELETE FROM diwaniya_requests WHERE NOT ({LIVE})", (window_s,))

    @asynccontextmanager
    async def lock(self, thread_id: str, *, policy: Policy, wait_s: float,
                   on_wait: OnWait | None = None,
                   create: ThreadRow | None = None,
                   owner: tuple[str, str] | None = None,
                   request: tuple[RequestKey, float] | None = None,
                   log_row: Sequence[object] | None = None) -> AsyncIterator[Lease]:
        signal = WaitSignal(on_wait)  # one ``queued`` per reason, however it is found
        async with self._waiters.waiting(thread_id, policy=policy):
            full, queue = self._lock_queue()
            if full:  # every lock connection holds a running turn: a certain wait, said now
                signal("lock_pool", queue + 1)
            # Else said if the connection (idle, or still opening) is QUEUED_AFTER_S late.
            with translate_store_errors(self._lock_pool), signal.stage(
                    "lock_pool", lambda: max(1, self._lock_queue()[1])):
                conn = await self._lock_pool.getconn()
            self._held += 1
            self._idle.clear()
            try:
                # (epoch, request already done, no head yet) once the lock is taken.
                found: list[tuple[int | None, bool, bool]] = []
                # True while a lock attempt's outcome is unknown (it failed or was
                # cancelled mid-way): the lock may be held, so it must be released.
                unsure = False
                hold, token = Hold(conn), None

                sql, params = self._lock_sql(thread_id, create=create, owner=owner,
                                             request=request, log_row=log_row)

                async def try_lock() -> bool:
                    nonlocal unsure
                    unsure = True
                    with translate_store_errors():
                        cur = await conn.execute(sql, params)
                        row = await cur.fetchone()
                    unsure = False
                    if owner is not None and not (row and row[2]):
                        # Exactly what a missing thread says: thread ids cannot be probed.
                        raise NotFound(f"thread {thread_id} not found for user {owner[1]}")
                    if not (row and row[0]):
                        return False
                    found.append((row[1], bool(row[3]), bool(row[4])))
                    return True

                try:
                    # The lock and the fencing token in one statement: any earlier
                    # holder that lost its session without noticing can no longer
                    # commit (see commit_turn).
                    await acquire_polling(try_lock, thread_id, policy=policy, wait_s=wait_s,
                                          on_wait=signal,
                                          position=lambda: self._waiters.position(thread_id))
                    epoch, done, headless = found[-1]
                    # The token: the epoch and this acquisition's owner uuid (None
                    # when the thread has no row: nothing to fence, nothing to commit).
                    token = None if epoch is None else str(params["lease_owner"])
                    if token is not None:
                        self._holds[token] = hold
                    yield Lease(thread_id, token, epoch=epoch, request_done=done,
                                created=create is not None, headless=headless,
                                logged_first=log_row is not None and not done)
                finally:
                    if token is not None:
                        self._holds.pop(token, None)
                    # The lock is session-level: release it before the connection
                    # returns to the pool, even when the turn was cancelled. If the
                    # unlock itself fails, close the connection — PostgreSQL then
                    # drops the lock — rather than pool a connection that holds it.
                    # A session that is already gone (database restarted) holds no
                    # lock: the turn's outcome was decided by its fenced commit, so
                    # a failed unlock must not turn it into an error.
                    try:
                        if (found or unsure) and not hold.unlocked:
                            await asyncio.shield(conn.execute(
                                "SELECT pg_advisory_unlock(%s, hashtext(%s))",
                                (LOCK_CLASS, thread_id)))
                    except Exception as exc:
                        log.warning("unlock of thread %s failed (%s); closing its session",
                                    thread_id, exc)
                        await conn.close()
                    except BaseException:
                        await conn.close()
                        raise
            finally:
                await asyncio.shield(self._lock_pool.putconn(conn))
                self._held -= 1
                if not self._held:
                    self._idle.set()

    def _lock_sql(self, thread_id: str, *, create: ThreadRow | None,
                  owner: tuple[str, str] | None, request: tuple[RequestKey, float] | None,
                  log_row: Sequence[object] | None) -> tuple[str, dict[str, object]]:
        """The lock statement for this turn (majlis.threads_pg_sql.lock_statement) and
        its parameters, with a new owner uuid: one per acquisition, never reissued."""
        params: dict[str, object] = {"cls": LOCK_CLASS, "thread": thread_id,
                                     "lease_owner": uuid.uuid4()}
        live: str | None = None
        if owner is not None:
            ttl = self._retention.idle_ttl(owner[0])
            live = " AND active_at >= now() - make_interval(secs => %(ttl)s)" if ttl > 0 else ""
            params.update(tenant=owner[0], user=owner[1], ttl=ttl)
        if create is not None:
            params.update(tenant=create.tenant, user=create.user_id, title=create.title,
                          created_at=create.created_at, updated_at=create.updated_at,
                          turn_count=create.turn_count)
        if request is not None:
            key, window_s = request
            params.update(tenant=key.tenant, user=key.user_id, request_id=key.request_id,
                          window_s=window_s)
        if log_row is not None:
            params.update(zip(LOG_FIRST_PARAMS, log_row, strict=True))
        sql = lock_statement(create=create is not None, owned=live, request=request is not None,
                             log_first=log_row is not None)
        return sql, params

    def _lock_queue(self) -> tuple[bool, int]:
        """(the lock pool is at its size limit with no idle connection, turns queued on it)."""
        s = self._lock_pool.get_stats()
        full = s.get("pool_size", 0) >= self._lock_pool.max_size and not s.get("pool_available")
        return full, int(s.get("requests_waiting", 0))

    async def ping(self) -> None:
        with translate_store_errors(self._pool):
            async with self._pool.connection() as conn:
                await conn.execute("SELECT 1")

    async def drain(self, timeout_s: float = 5.0) -> None:
        """Wait up to ``timeout_s`` for cancelled turns to unlock and return their connections."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout_s)
