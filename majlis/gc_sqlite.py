"""SQLite :class:`~majlis.gc.RetentionStore`: the statements ``diwaniya gc`` runs on
``threads.sqlite3`` (registry, requests, turn events and LangGraph's checkpoints).

Its own connection with a busy timeout: the serving processes keep writing
the file meanwhile (WAL: one writer at a time, readers never blocked). Each
deletion is a short transaction of at most ``limit`` rows.
"""

from __future__ import annotations

import time
from typing import Any

import aiosqlite

from majlis.retention import RetentionPolicy, SqliteCheckpoints

_THREAD_TABLES = (
    ("writes", "thread_id = ?"),
    ("checkpoints", "thread_id = ?"),
    ("diwaniya_requests", "tenant = ? AND thread_id = ?"),
    ("diwaniya_turn_events", "tenant = ? AND thread_id = ?"),
)


def expired_where(policy: RetentionPolicy, now: float) -> tuple[str, list[Any]]:
    """The SQL condition (and its parameters) matching every tenant's expired threads."""
    parts: list[str] = []
    params: list[Any] = []
    overrides = sorted(policy.tenant_idle_ttl_s.items())
    for tenant, ttl in overrides:
        if ttl > 0:
            parts.append("(tenant = ? AND active_at < ?)")
            params += [tenant, now - ttl]
    if policy.idle_ttl_s > 0:
        marks = ",".join("?" * len(overrides))
        parts.append(f"(tenant NOT IN ({marks}) AND active_at < ?)")
        params += [t for t, _ in overrides] + [now - policy.idle_ttl_s]
    return (" OR ".join(parts) or "0"), params


class SqliteRetention:
    """gc's statements on one aiosqlite connection to ``threads.sqlite3``."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn
        self._checkpoints = SqliteCheckpoints()

    async def _rows(self, query: str, params: Any = ()) -> list[Any]:
        async with self._conn.execute(query, params) as cur:
            return list(await cur.fetchall())

    async def missing_tables(self) -> list[str]:
        names = ("diwaniya_threads", "diwaniya_requests", "diwaniya_turn_events", "checkpoints")
        have = {r[0] for r in await self._rows("SELECT name FROM sqlite_master WHERE type='table'")}
        return [n for n in names if n not in have]

    async def threads_over(self, keep: int, *, after: str, limit: int) -> list[str]:
        rows = await self._rows(
            "SELECT thread_id FROM checkpoints WHERE checkpoint_ns = '' AND thread_id > ?"
            " GROUP BY thread_id HAVING count(*) > ? ORDER BY thread_id LIMIT ?",
            (after, keep, limit))
        return [r[0] for r in rows]

    async def expired(self, policy: RetentionPolicy, *, after: str, limit: int
                      ) -> list[tuple[str, str]]:
        where, params = expired_where(policy, time.time())
        rows = await self._rows(
            f"SELECT tenant, thread_id FROM diwaniya_threads WHERE ({where}) AND thread_id > ?"
            " ORDER BY thread_id LIMIT ?", (*params, after, limit))
        return [(r[0], r[1]) for r in rows]

    async def still_expired(self, tenant: str, thread_id: str, policy: RetentionPolicy) -> bool:
        where, params = expired_where(policy, time.time())
        rows = await self._rows(
            f"SELECT 1 FROM diwaniya_threads WHERE tenant = ? AND thread_id = ? AND ({where})",
            (tenant, thread_id, *params))
        return bool(rows)

    async def prune_thread(self, thread_id: str, *, keep: int, dry_run: bool) -> int:
        rows = await self._rows(
            "SELECT head_checkpoint_id FROM diwaniya_threads WHERE thread_id = ?", (thread_id,))
        head = rows[0][0] if rows else ""
        if dry_run:
            return await self._checkpoints.excess(self._conn, thread_id, keep=keep, head=head)
        return await self._write(lambda: self._checkpoints.prune(
            self._conn, thread_id, keep=keep, head=head, limit=1 << 62))

    async def erase(self, tenant: str, thread_id: str) -> None:
        async def statements() -> int:
            for table, where in _THREAD_TABLES:
                params = (thread_id,) if where.count("?") == 1 else (tenant, thread_id)
                await self._conn.execute(f"DELETE FROM {table} WHERE {where}", params)
            # The registry row last: a gc that dies half-way finds the thread again.
            cur = await self._conn.execute(
                "DELETE FROM diwaniya_threads WHERE tenant = ? AND thread_id = ?",
                (tenant, thread_id))
            return int(cur.rowcount or 0)

        await self._write(statements)

    async def prune_requests(self, window_s: float, *, limit: int, dry_run: bool) -> int:
        return await self._prune("diwaniya_requests", "created_at < ?", time.time() - window_s,
                                 limit=limit, dry_run=dry_run)

    async def prune_turn_events(self, ttl_s: float, *, limit: int, dry_run: bool) -> int:
        return await self._prune("diwaniya_turn_events", "at < ?", time.time() - ttl_s,
                                 limit=limit, dry_run=dry_run)

    async def _prune(self, table: str, where: str, value: float, *, limit: int,
                     dry_run: bool) -> int:
        if dry_run:
            rows = await self._rows(f"SELECT count(*) FROM {table} WHERE {where}", (value,))
            return int(rows[0][0])

        async def statement() -> int:
            cur = await self._conn.execute(
                f"DELETE FROM {table} WHERE rowid IN"
                f" (SELECT rowid FROM {table} WHERE {where} LIMIT ?)", (value, limit))
            return int(cur.rowcount or 0)

        return await self._write(statement)

    async def _write(self, work: Any) -> int:
        """``work()`` in one IMMEDIATE transaction (the write lock up front, waiting
        out the serving processes' commits through the busy timeout)."""
        await self._conn.execute("BEGIN IMMEDIATE")
        try:
            done = int(await work())
            await self._conn.commit()
        except BaseException:
            await self._conn.rollback()
            raise
        return done
