"""PostgreSQL :class:`~majlis.gc.RetentionStore`: the statements ``diwaniya gc`` runs.

Every sweep is keyset-paged (``thread_id > after``) or deletes at most
``limit`` rows per statement (by ``ctid``), so one call holds no lock and no
transaction for long, whatever the table sizes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool

from majlis.retention import PostgresCheckpoints, RetentionPolicy

_THREAD_TABLES = (
    # (table, thread filter): everything a thread owns in this database.
    ("checkpoint_writes", "thread_id = %s"),
    ("checkpoint_blobs", "thread_id = %s"),
    ("checkpoints", "thread_id = %s"),
    ("diwaniya_requests", "tenant = %s AND thread_id = %s"),
    ("diwaniya_turn_events", "tenant = %s AND thread_id = %s"),
)


def expired_where(policy: RetentionPolicy, col: str = "active_at") -> tuple[str, list[Any]]:
    """The SQL condition (and its parameters) matching every tenant's expired threads."""
    parts: list[str] = []
    params: list[Any] = []
    overrides = dict(policy.tenant_idle_ttl_s)
    for tenant, ttl in sorted(overrides.items()):
        if ttl > 0:
            parts.append(f"(tenant = %s AND {col} < now() - make_interval(secs => %s))")
            params += [tenant, ttl]
    if policy.idle_ttl_s > 0:
        parts.append(f"(tenant <> ALL(%s) AND {col} < now() - make_interval(secs => %s))")
        params += [sorted(overrides), policy.idle_ttl_s]
    return (" OR ".join(parts) or "false"), params


class PostgresRetention:
    """gc's statements on the service's psycopg pool (autocommit connections)."""

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self._pool = pool
        self._checkpoints = PostgresCheckpoints()

    async def _rows(self, query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        async with self._pool.connection() as conn:
            cur = await conn.cursor(row_factory=tuple_row).execute(query, params)
            return list(await cur.fetchall())

    async def missing_tables(self) -> list[str]:
        names = ("diwaniya_threads", "diwaniya_requests", "diwaniya_turn_events", "checkpoints")
        rows = await self._rows("SELECT n FROM unnest(%s::text[]) n WHERE to_regclass(n) IS NULL",
                                (list(names),))
        return [r[0] for r in rows]

    async def threads_over(self, keep: int, *, after: str, limit: int) -> list[str]:
        rows = await self._rows(
            "SELECT thread_id FROM checkpoints WHERE checkpoint_ns = '' AND thread_id > %s"
            " GROUP BY thread_id HAVING count(*) > %s ORDER BY thread_id LIMIT %s",
            (after, keep, limit))
        return [r[0] for r in rows]

    async def expired(self, policy: RetentionPolicy, *, after: str, limit: int
                      ) -> list[tuple[str, str]]:
        where, params = expired_where(policy)
        rows = await self._rows(
            f"SELECT tenant, thread_id FROM diwaniya_threads WHERE ({where}) AND thread_id > %s"
            " ORDER BY thread_id LIMIT %s", (*params, after, limit))
        return [(r[0], r[1]) for r in rows]

    async def still_expired(self, tenant: str, thread_id: str, policy: RetentionPolicy) -> bool:
        where, params = expired_where(policy)
        rows = await self._rows(
            f"SELECT 1 FROM diwaniya_threads WHERE tenant = %s AND thread_id = %s AND ({where})",
            (tenant, thread_id, *params))
        return bool(rows)

    async def prune_thread(self, thread_id: str, *, keep: int, dry_run: bool) -> int:
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.cursor(row_factory=tuple_row).execute(
                "SELECT head_checkpoint_id FROM diwaniya_threads WHERE thread_id = %s",
                (thread_id,))
            row = await cur.fetchone()
            head = row[0] if row else ""
            if dry_run:
                return await self._checkpoints.excess(conn, thread_id, keep=keep, head=head)
            return await self._checkpoints.prune(conn, thread_id, keep=keep, head=head,
                                                 limit=1 << 62)

    async def erase(self, tenant: str, thread_id: str) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            for table, where in _THREAD_TABLES:
                params = (thread_id,) if where.count("%s") == 1 else (tenant, thread_id)
                await conn.execute(f"DELETE FROM {table} WHERE {where}", params)
            # The registry row last: a gc that dies half-way finds the thread again.
            await conn.execute("DELETE FROM diwaniya_threads WHERE tenant = %s AND thread_id = %s",
                               (tenant, thread_id))

    async def prune_requests(self, window_s: float, *, limit: int, dry_run: bool) -> int:
        return await self._prune("diwaniya_requests",
                                 "created_at < now() - make_interval(secs => %s)", window_s,
                                 limit=limit, dry_run=dry_run)

    async def prune_turn_events(self, ttl_s: float, *, limit: int, dry_run: bool) -> int:
        # ``at`` is the writer's clock (majlis.turn_log), as the log's own pruning uses.
        return await self._prune("diwaniya_turn_events", "at < %s", time.time() - ttl_s,
                                 limit=limit, dry_run=dry_run)

    async def _prune(self, table: str, where: str, value: float, *, limit: int,
                     dry_run: bool) -> int:
        if dry_run:
            rows = await self._rows(f"SELECT count(*) FROM {table} WHERE {where}", (value,))
            return int(rows[0][0])
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                f"DELETE FROM {table} WHERE ctid = ANY(ARRAY("
                f"SELECT ctid FROM {table} WHERE {where} LIMIT %s))", (value, limit))
            return int(cur.rowcount or 0)
