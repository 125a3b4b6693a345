"""SQLite :class:`~majlis.threads.ThreadStore` for the embedded default.

Locks are lease rows (thread_id, owner, expires_at) renewed by a heartbeat
while the turn runs; this excludes turns across processes sharing the file,
and a crashed holder's lease simply lapses.

Fencing: the lease row's ``owner`` is the fencing token. A turn commits in one
``BEGIN IMMEDIATE`` transaction on this store's connection that first checks
its lease row is still there: taking a lapsed lease over deletes that row, and
SQLite serialises writers, so a turn that lost its lease can never commit after
its successor took the thread.

Each lease also names its holder process: pid, boot id and the process's start
time (``/proc/self/stat``, so a reused pid — pid 1 in every container — is not
mistaken for the dead holder). At startup, leases whose holder is provably
gone are cleared, so a thread whose turn died with a SIGKILLed process takes a
new turn at once instead of answering ABORTED until the lease lapses.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import datetime
from typing import Any, cast

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from diwaniya.errors import LeaseLost, NotFound
from majlis.lease_owner import ProcessId
from majlis.retention import RetentionPolicy, SqliteCheckpoints
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
    acquire_polling,
)
from majlis.threads_sqlite_schema import ADDED, DDL, LEASE_OWNER_COLUMNS, enable_wal

PRUNE_EVERY_S = 60.0

log = logging.getLogger("diwaniya.threads")

_REQ_COLS = ("tenant, user_id, request_id, thread_id, content_hash, new_thread, done, turn_id,"
             " events, result, checkpoint_id")
_REQ_KEY = "tenant = ? AND user_id = ? AND request_id = ?"


def _record(v: aiosqlite.Row) -> RequestRecord:
    return RequestRecord(
        key=RequestKey(v[0], v[1], v[2]), thread_id=v[3], content_hash=v[4],
        new_thread=bool(v[5]), done=bool(v[6]), turn_id=v[7], events=json.loads(v[8]),
        result=json.loads(v[9]), checkpoint_id=v[10],
    )


class _NoCommit:
    """The store's connection as LangGraph's SQLite saver sees it during a fenced
    commit: its own ``commit()`` calls become no-ops, so its writes join our transaction."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    async def commit(self) -> None:
        return None

_COLS = "thread_id, tenant, user_id, title, created_at, updated_at, turn_count"
_INSERT = f"INSERT INTO diwaniya_threads ({_COLS}, active_at) VALUES (?,?,?,?,?,?,?,?)"

def _row(values: aiosqlite.Row) -> ThreadRow:
    return ThreadRow(
        thread_id=values[0], tenant=values[1], user_id=values[2], title=values[3],
        created_at=datetime.fromisoformat(values[4]), updated_at=datetime.fromisoformat(values[5]),
        turn_count=values[6],
    )


class SqliteThreadStore:
    """Threads in the embedded SQLite file (its own connection, WAL mode)."""

    def __init__(self, conn: aiosqlite.Connection, *, lease_ttl_s: float = 30.0,
                 max_waiters: int = 8, process: ProcessId | None = None,
                 retention: RetentionPolicy | None = None) -> None:
        self._conn = conn
        self._retention = retention or RetentionPolicy()
        self._pruner = SqliteCheckpoints()
        self._ttl = lease_ttl_s
        self._waiters = WaiterCounter(max_waiters)
        # aiosqlite shares one connection: one statement at a time, reads too. A
        # read cursor still open when a write starts pins an old WAL snapshot; if
        # another process (serve --workers) committed since, SQLite answers
        # "database is locked" at once, without waiting out the busy timeout.
        self._write = asyncio.Lock()
        self._pruned_at = float("-inf")
        self._me = process or ProcessId.current()
        self._held: set[str] = set()  # owners of this process's live leases
        self._idle = asyncio.Event()
        self._idle.set()
        # Failed lease renewals since start; the hook is service.instrument's metric.
        self.heartbeat_failures = 0
        self.on_heartbeat_failure: Callable[[], None] | None = None

    @asynccontextmanager
    async def _tx(self) -> AsyncIterator[aiosqlite.Connection]:
        """One write transaction on the shared connection: committed at the end, rolled
        back on any error or cancellation. Python's sqlite3 opens a transaction before
        the first INSERT/UPDATE/DELETE; a statement that fails ("database is locked",
        a constraint) leaves it open, and the next ``BEGIN IMMEDIATE`` (commit_turn,
        claim_request) would fail "cannot start a transaction within a transaction"
        while its snapshot and locks are held — or a later commit would save half a write.
        """
        async with self._write:
            try:
                yield self._conn
                await self._conn.commit()
            except BaseException:
                await asyncio.shield(self._conn.rollback())
                raise

    async def migrate(self) -> None:
        await enable_wal(self._conn)
        # One IMMEDIATE transaction: it takes the write lock up front (waiting
        # via busy_timeout), so processes migrating at once run one after the
        # other — a DDL statement that upgrades a stale read to a write would
        # fail at once with "database is locked" instead of waiting.
        added = (*ADDED, *(("diwaniya_thread_leases", name, decl)
                           for name, decl in LEASE_OWNER_COLUMNS))
        await self._conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in DDL.split(";"):
                if statement.strip():
                    await self._conn.execute(statement)
            for table, column, decl in added:
                async with self._conn.execute(f"PRAGMA table_info({table})") as cur:
                    have = {row[1] for row in await cur.fetchall()}
                if column not in have:
                    await self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
            # Rows from before active_at start their idle time now: never expired early.
            await self._conn.execute(
                "UPDATE diwaniya_threads SET active_at = ? WHERE active_at = 0", (time.time(),))
            await self._conn.commit()
        except BaseException:
            await self._conn.rollback()
            raise

    async def clear_dead_leases(self) -> int:
        """Delete leases whose holder process is gone (another boot, or no such process).

        Leases without an owner (written before owners were recorded) are left to
        lapse by their expiry. Returns how many were cleared.
        """
        async with self._write, self._conn.execute(
            "SELECT thread_id, owner, owner_pid, owner_boot, owner_start, owner_host"
            " FROM diwaniya_thread_leases WHERE owner_pid > 0"
        ) as cur:
            rows = await cur.fetchall()
        dead = [(r[0], r[1]) for r in rows if not ProcessId(r[2], r[3], r[4], r[5]).alive()]
        if dead:
            async with self._tx() as conn:
                await conn.executemany(
                    "DELETE FROM diwaniya_thread_leases WHERE thread_id = ? AND owner = ?", dead)
        return len(dead)

    async def drain(self, timeout_s: float = 5.0) -> None:
        """Before the connection closes: let cancelled turns give their leases back.

        Waits up to ``timeout_s`` for every lease this process holds to be
        released, then deletes whatever is left of this process's leases — the
        turns that held them can no longer write once the stores close.
        """
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout_s)
        async with self._tx() as conn:
            await conn.execute(
                "DELETE FROM diwaniya_thread_leases WHERE owner_pid = ? AND owner_boot = ?"
                " AND owner_start = ? AND owner_host = ?",
                (self._me.pid, self._me.boot, self._me.start, self._me.host))

    async def create(self, row: ThreadRow) -> None:
        async with self._tx() as conn:
            await conn.execute(
                _INSERT,
                (row.thread_id, row.tenant, row.user_id, row.title, row.created_at.isoformat(),
                 row.updated_at.isoformat(), row.turn_count, time.time()),
            )

    def _live(self, tenant: str) -> tuple[str, list[object]]:
        """The WHERE part that hides the tenant's expired threads (majlis.retention)."""
        ttl = self._retention.idle_ttl(tenant)
        return (" AND active_at >= ?", [time.time() - ttl]) if ttl > 0 else ("", [])

    async def get(self, tenant: str, thread_id: str) -> ThreadRow | None:
        live, extra = self._live(tenant)
        async with self._write, self._conn.execute(
            f"SELECT {_COLS} FROM diwaniya_threads WHERE tenant = ? AND thread_id = ?" + live,
            (tenant, thread_id, *extra),
        ) as cur:
            found = await cur.fetchone()
        return _row(found) if found else None

    async def record_turn(self, thread_id: str, *, at: datetime, title: str) -> None:
        async with self._tx() as conn:
            await conn.execute(
                "UPDATE diwaniya_threads SET updated_at = max(updated_at, ?),"
                " turn_count = turn_count + 1,"
                " title = CASE WHEN title = '' THEN ? ELSE title END WHERE thread_id = ?",
                (at.isoformat(), title, thread_id),
            )

    async def list(
        self, tenant: str, user_id: str, *, limit: int, after: tuple[datetime, str] | None
    ) -> list[ThreadRow]:
        # ISO-8601 strings in UTC sort like the instants they name.
        live, params = self._live(tenant)
        query = f"SELECT {_COLS} FROM diwaniya_threads WHERE tenant = ? AND user_id = ?" + live
        params = [tenant, user_id, *params]
        if after is not None:
            query += " AND (updated_at < ? OR (updated_at = ? AND thread_id < ?))"
            params += [after[0].isoformat(), after[0].isoformat(), after[1]]
        query += " ORDER BY updated_at DESC, thread_id DESC LIMIT ?"
        params.append(limit)
        async with self._write, self._conn.execute(query, params) as cur:
            rows = await cur.fetchall()
        return [_row(r) for r in rows]

    async def delete(self, tenant: str, thread_id: str) -> bool:
        async with self._tx() as conn:
            await conn.execute(
                "DELETE FROM diwaniya_requests WHERE tenant = ? AND thread_id = ?",
                (tenant, thread_id),
            )
            cur = await conn.execute(
                "DELETE FROM diwaniya_threads WHERE tenant = ? AND thread_id = ?",
                (tenant, thread_id),
            )
        return cur.rowcount > 0

    # ------------------------------------------------------------ fencing
    async def commit_turn(self, lease: Lease, writes: CheckpointWrites, commit: TurnCommit) -> None:
        async with self._write:
            conn = self._conn
            try:
                await conn.execute("BEGIN IMMEDIATE")
                async with conn.execute(
                    "SELECT 1 FROM diwaniya_thread_leases WHERE thread_id = ? AND owner = ?",
                    (lease.thread_id, lease.token),
                ) as cur:
                    held = await cur.fetchone()
                if held is None:
                    raise LeaseLost(
                        f"this turn lost its lease on thread {lease.thread_id} (it was not renewed "
                        "in time and another turn took the thread over); nothing of it was saved "
                        "— send the message again (the same request_id is safe)")
                async with conn.execute(
                    "SELECT 1 FROM diwaniya_threads WHERE thread_id = ?", (lease.thread_id,)
                ) as cur:
                    if await cur.fetchone() is None:
                        raise NotFound(f"thread {lease.thread_id} was deleted while this turn "
                                       "ran; nothing was saved")
                saver = AsyncSqliteSaver(cast(aiosqlite.Connection, _NoCommit(conn)),
                                         serde=writes.serde)
                saver.is_setup = True  # the tables exist; setup() would run PRAGMAs mid-transaction
                await writes.apply(saver)
                if keep := self._retention.checkpoints_kept:
                    await self._pruner.prune(conn, lease.thread_id, keep=keep,
                                             head=commit.checkpoint_id)
                await conn.execute(
                    "UPDATE diwaniya_threads SET updated_at = max(updated_at, ?),"
                    " turn_count = turn_count + ?, head_checkpoint_id = ?, active_at = ?,"
                    " title = CASE WHEN title = '' THEN ? ELSE title END WHERE thread_id = ?",
                    (commit.at.isoformat(), int(commit.counts_turn), commit.checkpoint_id,
                     time.time(), commit.title, lease.thread_id),
                )
                if commit.request is not None:
                    key = commit.request
                    await conn.execute(
                        "UPDATE diwaniya_requests SET done = 1, turn_id = ?, events = ?,"
                        f" result = ?, checkpoint_id = ? WHERE {_REQ_KEY}",
                        (commit.turn_id, json.dumps(commit.events, ensure_ascii=False),
                         json.dumps(commit.result, ensure_ascii=False), commit.checkpoint_id,
                         key.tenant, key.user_id, key.request_id),
                    )
                if commit.log_rows:
                    await conn.executemany(
                        "INSERT OR IGNORE INTO diwaniya_turn_events (tenant, thread_id, turn_id,"
                        " seq, user_id, at, body) VALUES (?,?,?,?,?,?,?)", commit.log_rows)
                await conn.commit()
            except BaseException:
                await asyncio.shield(conn.rollback())
                raise

    async def turn_saved(self, thread_id: str, checkpoint_id: str) -> bool:
        async with self._write, self._conn.execute(
            "SELECT head_checkpoint_id FROM diwaniya_threads WHERE thread_id = ?", (thread_id,)
        ) as cur:
            row = await cur.fetchone()
        return bool(row and checkpoint_id and row[0] == checkpoint_id)

    # ----------------------------------------------------------- requests
    async def claim_request(
        self, key: RequestKey, *, thread_id: str, content_hash: str, new_thread: ThreadRow | None,
        window_s: float, owner_check: bool = False,
    ) -> RequestRecord:
        now = time.time()
        async with self._write:
            conn = self._conn
            try:
                await conn.execute("BEGIN IMMEDIATE")
                if owner_check and not await self._owns(key.tenant, key.user_id, thread_id):
                    # Exactly what a missing thread says: thread ids cannot be probed.
                    raise NotFound(f"thread {thread_id} not found for user {key.user_id}")
                if now - self._pruned_at >= PRUNE_EVERY_S:
                    self._pruned_at = now
                    await conn.execute("DELETE FROM diwaniya_requests WHERE created_at < ?",
                                       (now - window_s,))
                await conn.execute(
                    f"DELETE FROM diwaniya_requests WHERE {_REQ_KEY} AND created_at < ?",
                    (key.tenant, key.user_id, key.request_id, now - window_s),
                )
                cur = await conn.execute(
                    "INSERT OR IGNORE INTO diwaniya_requests (tenant, user_id, request_id,"
                    " thread_id, content_hash, new_thread, created_at) VALUES (?,?,?,?,?,?,?)",
                    (key.tenant, key.user_id, key.request_id, thread_id, content_hash,
                     int(new_thread is not None), now),
                )
                claimed = cur.rowcount == 1
                if claimed and new_thread is not None:
                    row = new_thread
                    await conn.execute(
                        _INSERT,
                        (row.thread_id, row.tenant, row.user_id, row.title,
                         row.created_at.isoformat(), row.updated_at.isoformat(), row.turn_count,
                         now),
                    )
                await conn.commit()
            except BaseException:
                await asyncio.shield(conn.rollback())
                raise
        found = await self.get_request(key, window_s=window_s)
        assert found is not None  # inserted above, or already there and live
        return replace(found, claimed=claimed)

    async def _owns(self, tenant: str, user_id: str, thread_id: str) -> bool:
        """Whether ``user_id`` owns the live thread (``get``'s view; caller holds _write)."""
        live, extra = self._live(tenant)
        async with self._conn.execute(
            "SELECT user_id FROM diwaniya_threads WHERE tenant = ? AND thread_id = ?" + live,
            (tenant, thread_id, *extra),
        ) as cur:
            found = await cur.fetchone()
        return found is not None and found[0] == user_id

    async def get_request(self, key: RequestKey, *, window_s: float) -> RequestRecord | None:
        async with self._write, self._conn.execute(
            f"SELECT {_REQ_COLS} FROM diwaniya_requests WHERE {_REQ_KEY} AND created_at >= ?",
            (key.tenant, key.user_id, key.request_id, time.time() - window_s),
        ) as cur:
            row = await cur.fetchone()
        return _record(row) if row else None

    async def _try_lease(self, thread_id: str, owner: str) -> bool:
        now = time.time()
        async with self._tx() as conn:
            await conn.execute(
                "DELETE FROM diwaniya_thread_leases WHERE thread_id = ? AND expires_at < ?",
                (thread_id, now),
            )
            cur = await conn.execute(
                "INSERT OR IGNORE INTO diwaniya_thread_leases (thread_id, owner, expires_at,"
                " owner_pid, owner_boot, owner_start, owner_host) VALUES (?,?,?,?,?,?,?)",
                (thread_id, owner, now + self._ttl, self._me.pid, self._me.boot, self._me.start,
                 self._me.host),
            )
        return cur.rowcount == 1

    async def _renew(self, thread_id: str, owner: str) -> None:
        """The lease's heartbeat: every ttl/3 its expiry moves on.

        A failed renewal ("database is locked" past the busy timeout, a full
        disk) is retried at the next beat, so the lease lapses only after a
        whole ttl without one success; it never ends the turn (its fenced
        commit decides). One WARNING per failure streak, every failure counted
        (``heartbeat_failures``, the diwaniya_lease_heartbeat_failures metric).
        """
        failing = False
        while True:
            await asyncio.sleep(self._ttl / 3)
            try:
                async with self._tx() as conn:
                    await conn.execute(
                        "UPDATE diwaniya_thread_leases SET expires_at = ?"
                        " WHERE thread_id = ? AND owner = ?",
                        (time.time() + self._ttl, thread_id, owner),
                    )
            except Exception as exc:
                self.heartbeat_failures += 1
                if self.on_heartbeat_failure is not None:
                    self.on_heartbeat_failure()
                if not failing:
                    log.warning("lease heartbeat failed for thread %s (lease %s): %s; retrying"
                                " every %g s, the lease lapses %g s after its last renewal",
                                thread_id, owner, exc, self._ttl / 3, self._ttl)
                failing = True
                continue
            if failing:
                log.info("lease heartbeat for thread %s (lease %s) renewed again", thread_id, owner)
                failing = False

    @asynccontextmanager
    async def lock(self, thread_id: str, *, policy: Policy, wait_s: float,
                   on_wait: OnWait | None = None,
                   create: ThreadRow | None = None,
                   owner: tuple[str, str] | None = None,
                   request: tuple[RequestKey, float] | None = None,
                   log_row: Sequence[object] | None = None) -> AsyncIterator[Lease]:
        # ``log_row`` is not written here (the turn log has a connection of its
        # own): the lease says so (``logged_first`` False) and the turn logs it.
        # ``request`` is looked up once the lease is held, by a query of its own.
        if owner is not None:
            row = await self.get(owner[0], thread_id)
            if row is None or row.user_id != owner[1]:
                raise NotFound(f"thread {thread_id} not found for user {owner[1]}")
        if create is not None:
            await self.create(create)
        holder = uuid.uuid4().hex
        # Counted from before the first try: drain() must wait for a lease
        # that is being written while the turn is cancelled.
        self._held.add(holder)
        self._idle.clear()
        try:
            async with self._waiters.waiting(thread_id, policy=policy):
                await acquire_polling(
                    lambda: self._try_lease(thread_id, holder), thread_id, policy=policy,
                    wait_s=wait_s, on_wait=on_wait,
                    position=lambda: self._waiters.position(thread_id),
                )
            done = False
            if request is not None:
                record = await self.get_request(request[0], window_s=request[1])
                done = record is not None and record.done
            heartbeat = asyncio.create_task(self._renew(thread_id, holder))
            try:
                yield Lease(thread_id, holder, request_done=done, created=create is not None,
                            headless=create is not None)
            finally:
                heartbeat.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await heartbeat
        finally:
            # Shielded: a cancelled turn must still give the lease back.
            await asyncio.shield(self._release(thread_id, holder))

    async def _release(self, thread_id: str, owner: str) -> None:
        try:
            async with self._tx() as conn:
                await conn.execute(
                    "DELETE FROM diwaniya_thread_leases WHERE thread_id = ? AND owner = ?",
                    (thread_id, owner),
                )
        finally:
            self._held.discard(owner)
            if not self._held:
                self._idle.set()

    async def ping(self) -> None:
        async with self._write, self._conn.execute("SELECT 1") as cur:
            await cur.fetchone()
