"""SQLite :class:`~majlis.threads.ThreadStore` for the embedded default.

Locks are lease rows (thread_id, owner, expires_at) renewed by a heartbeat
while the turn runs; this excludes turns across processes sharing the file,
and a crashed holder's lease simply lapses.

Each lease also names its holder process: pid, boot id and the process's start
time (``/proc/self/stat``, so a reused pid — pid 1 in every container — is not
mistaken for the dead holder). At startup, leases whose holder is provably
gone are cleared, so a thread whose turn died with a SIGKILLed process takes a
new turn at once instead of answering ABORTED until the lease lapses.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import aiosqlite

from majlis.threads import OnWait, Policy, ThreadRow, WaiterCounter, acquire_polling

_DDL = """
CREATE TABLE IF NOT EXISTS diwaniya_threads (
    thread_id   TEXT PRIMARY KEY,
    tenant      TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    title       TEXT NOT NULL DEFAULT '',
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    turn_count  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS diwaniya_threads_by_user
    ON diwaniya_threads (tenant, user_id, updated_at DESC, thread_id DESC);
CREATE TABLE IF NOT EXISTS diwaniya_thread_leases (
    thread_id   TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    expires_at  REAL NOT NULL
);
"""

_COLS = "thread_id, tenant, user_id, title, created_at, updated_at, turn_count"

# Added after the first release: the holder process of a lease.
_LEASE_OWNER_COLUMNS = (("owner_pid", "INTEGER NOT NULL DEFAULT 0"),
                        ("owner_boot", "TEXT NOT NULL DEFAULT ''"),
                        ("owner_start", "TEXT NOT NULL DEFAULT ''"),
                        ("owner_host", "TEXT NOT NULL DEFAULT ''"))


@dataclass(frozen=True, slots=True)
class ProcessId:
    """Who holds a lease: pid, boot id and the process's start time (a pid-reuse guard).

    ``host`` (the hostname) tells whether pids are comparable at all: a
    process in another container sharing the file has pids this one cannot
    see, so its leases are left to lapse rather than judged dead.
    """

    pid: int
    boot: str
    start: str
    host: str = ""

    @classmethod
    def current(cls, proc: Path = Path("/proc")) -> ProcessId:
        pid = os.getpid()
        return cls(pid, _boot_id(proc), _start_time(proc, pid) or uuid.uuid4().hex,
                   socket.gethostname())

    def alive(self, proc: Path = Path("/proc")) -> bool:
        """Whether this process may still run; False only when it provably does not."""
        if self.host != socket.gethostname():
            return True  # another host or container: its pids are not ours to check
        if self.boot != _boot_id(proc):
            return False
        started = _start_time(proc, self.pid)
        if started is None:
            # No /proc entry: fall back to signalling it (works without /proc too).
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                return True
            return not (proc / "self").exists()
        return started == self.start


def _boot_id(proc: Path) -> str:
    try:
        return (proc / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_time(proc: Path, pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (clock ticks since boot); None: no such process."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its ")".
    return stat.rpartition(")")[2].split()[19]


async def enable_wal(conn: aiosqlite.Connection, *, wait_s: float = 10.0) -> None:
    """WAL journal (readers and the one writer overlap) and a 5 s busy timeout.

    Switching to WAL needs the file to itself and SQLite does not always run
    the busy handler for it, so two processes opening a fresh file at once can
    get "database is locked": retry until ``wait_s``.
    """
    await conn.execute("PRAGMA busy_timeout=5000")
    deadline = time.monotonic() + wait_s
    while True:
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


def _row(values: aiosqlite.Row) -> ThreadRow:
    return ThreadRow(
        thread_id=values[0], tenant=values[1], user_id=values[2], title=values[3],
        created_at=datetime.fromisoformat(values[4]), updated_at=datetime.fromisoformat(values[5]),
        turn_count=values[6],
    )


class SqliteThreadStore:
    """Threads in the embedded SQLite file (its own connection, WAL mode)."""

    def __init__(self, conn: aiosqlite.Connection, *, lease_ttl_s: float = 30.0,
                 max_waiters: int = 8, process: ProcessId | None = None) -> None:
        self._conn = conn
        self._ttl = lease_ttl_s
        self._waiters = WaiterCounter(max_waiters)
        self._write = asyncio.Lock()  # aiosqlite shares one connection: serialise write txns
        self._me = process or ProcessId.current()
        self._held: set[str] = set()  # owners of this process's live leases
        self._idle = asyncio.Event()
        self._idle.set()

    async def migrate(self) -> None:
        await enable_wal(self._conn)
        # One IMMEDIATE transaction: it takes the write lock up front (waiting
        # via busy_timeout), so processes migrating at once run one after the
        # other — a DDL statement that upgrades a stale read to a write would
        # fail at once with "database is locked" instead of waiting.
        await self._conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _DDL.split(";"):
                if statement.strip():
                    await self._conn.execute(statement)
            async with self._conn.execute("PRAGMA table_info(diwaniya_thread_leases)") as cur:
                have = {row[1] for row in await cur.fetchall()}
            for name, decl in _LEASE_OWNER_COLUMNS:
                if name not in have:
                    await self._conn.execute(
                        f"ALTER TABLE diwaniya_thread_leases ADD COLUMN {name} {decl}")
            await self._conn.commit()
        except BaseException:
            await self._conn.rollback()
            raise

    async def clear_dead_leases(self) -> int:
        """Delete leases whose holder process is gone (another boot, or no such process).

        Leases without an owner (written before owners were recorded) are left to
        lapse by their expiry. Returns how many were cleared.
        """
        async with self._conn.execute(
            "SELECT thread_id, owner, owner_pid, owner_boot, owner_start, owner_host"
            " FROM diwaniya_thread_leases WHERE owner_pid > 0"
        ) as cur:
            rows = await cur.fetchall()
        dead = [(r[0], r[1]) for r in rows if not ProcessId(r[2], r[3], r[4], r[5]).alive()]
        if dead:
            async with self._write:
                await self._conn.executemany(
                    "DELETE FROM diwaniya_thread_leases WHERE thread_id = ? AND owner = ?", dead)
                await self._conn.commit()
        return len(dead)

    async def drain(self, timeout_s: float = 5.0) -> None:
        """Before the connection closes: let cancelled turns give their leases back.

        Waits up to ``timeout_s`` for every lease this process holds to be
        released, then deletes whatever is left of this process's leases — the
        turns that held them can no longer write once the stores close.
        """
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout_s)
        async with self._write:
            await self._conn.execute(
                "DELETE FROM diwaniya_thread_leases WHERE owner_pid = ? AND owner_boot = ?"
                " AND owner_start = ? AND owner_host = ?",
                (self._me.pid, self._me.boot, self._me.start, self._me.host))
            await self._conn.commit()

    async def create(self, row: ThreadRow) -> None:
        async with self._write:
            await self._conn.execute(
                f"INSERT INTO diwaniya_threads ({_COLS}) VALUES (?,?,?,?,?,?,?)",
                (row.thread_id, row.tenant, row.user_id, row.title, row.created_at.isoformat(),
                 row.updated_at.isoformat(), row.turn_count),
            )
            await self._conn.commit()

    async def get(self, tenant: str, thread_id: str) -> ThreadRow | None:
        async with self._conn.execute(
            f"SELECT {_COLS} FROM diwaniya_threads WHERE tenant = ? AND thread_id = ?",
            (tenant, thread_id),
        ) as cur:
            found = await cur.fetchone()
        return _row(found) if found else None

    async def record_turn(self, thread_id: str, *, at: datetime, title: str) -> None:
        async with self._write:
            await self._conn.execute(
                "UPDATE diwaniya_threads SET updated_at = max(updated_at, ?),"
                " turn_count = turn_count + 1,"
                " title = CASE WHEN title = '' THEN ? ELSE title END WHERE thread_id = ?",
                (at.isoformat(), title, thread_id),
            )
            await self._conn.commit()

    async def list(
        self, tenant: str, user_id: str, *, limit: int, after: tuple[datetime, str] | None
    ) -> list[ThreadRow]:
        # ISO-8601 strings in UTC sort like the instants they name.
        query = f"SELECT {_COLS} FROM diwaniya_threads WHERE tenant = ? AND user_id = ?"
        params: list[object] = [tenant, user_id]
        if after is not None:
            query += " AND (updated_at < ? OR (updated_at = ? AND thread_id < ?))"
            params += [after[0].isoformat(), after[0].isoformat(), after[1]]
        query += " ORDER BY updated_at DESC, thread_id DESC LIMIT ?"
        params.append(limit)
        async with self._conn.execute(query, params) as cur:
            rows = await cur.fetchall()
        return [_row(r) for r in rows]

    async def delete(self, tenant: str, thread_id: str) -> bool:
        async with self._write:
            cur = await self._conn.execute(
                "DELETE FROM diwaniya_threads WHERE tenant = ? AND thread_id = ?",
                (tenant, thread_id),
            )
            await self._conn.commit()
            return cur.rowcount > 0

    async def _try_lease(self, thread_id: str, owner: str) -> bool:
        now = time.time()
        async with self._write:
            await self._conn.execute(
                "DELETE FROM diwaniya_thread_leases WHERE thread_id = ? AND expires_at < ?",
                (thread_id, now),
            )
            cur = await self._conn.execute(
                "INSERT OR IGNORE INTO diwaniya_thread_leases (thread_id, owner, expires_at,"
                " owner_pid, owner_boot, owner_start, owner_host) VALUES (?,?,?,?,?,?,?)",
                (thread_id, owner, now + self._ttl, self._me.pid, self._me.boot, self._me.start,
                 self._me.host),
            )
            await self._conn.commit()
            return cur.rowcount == 1

    async def _renew(self, thread_id: str, owner: str) -> None:
        while True:
            await asyncio.sleep(self._ttl / 3)
            async with self._write:
                await self._conn.execute(
                    "UPDATE diwaniya_thread_leases SET expires_at = ?"
                    " WHERE thread_id = ? AND owner = ?",
                    (time.time() + self._ttl, thread_id, owner),
                )
                await self._conn.commit()

    @asynccontextmanager
    async def lock(self, thread_id: str, *, policy: Policy, wait_s: float,
                   on_wait: OnWait | None = None) -> AsyncIterator[None]:
        owner = uuid.uuid4().hex
        # Counted from before the first try: drain() must wait for a lease
        # that is being written while the turn is cancelled.
        self._held.add(owner)
        self._idle.clear()
        try:
            async with self._waiters.waiting(thread_id, policy=policy):
                await acquire_polling(
                    lambda: self._try_lease(thread_id, owner), thread_id, policy=policy,
                    wait_s=wait_s, on_wait=on_wait,
                    position=lambda: self._waiters.position(thread_id),
                )
            heartbeat = asyncio.create_task(self._renew(thread_id, owner))
            try:
                yield
            finally:
                heartbeat.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await heartbeat
        finally:
            # Shielded: a cancelled turn must still give the lease back.
            await asyncio.shield(self._release(thread_id, owner))

    async def _release(self, thread_id: str, owner: str) -> None:
        try:
            async with self._write:
                await self._conn.execute(
                    "DELETE FROM diwaniya_thread_leases WHERE thread_id = ? AND owner = ?",
                    (thread_id, owner),
                )
                await self._conn.commit()
        finally:
            self._held.discard(owner)
            if not self._held:
                self._idle.set()

    async def ping(self) -> None:
        async with self._conn.execute("SELECT 1") as cur:
            await cur.fetchone()
