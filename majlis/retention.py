"""Retention: how many checkpoints a thread keeps, and when an idle thread expires.

Two knobs (service.settings, docs/operations.md "Retention"):

* ``DIWANIYA_CHECKPOINTS_KEPT`` = N — each thread keeps its latest N
  checkpoints (0: all). A turn's fenced commit prunes its own thread in the
  same transaction (:meth:`CheckpointPruner.prune`: bounded, at most a few
  rows per turn once the thread is at N), and ``diwaniya gc`` prunes threads
  written before N was set. The head (``diwaniya_threads.head_checkpoint_id``,
  what fencing and ``turn_saved`` compare with) is never deleted, whatever its
  rank. Replay needs no checkpoint (a request record carries its turn's events
  and result) and resume reads the turn-event log, so neither limits N.
* ``DIWANIYA_THREAD_IDLE_TTL_S`` (per tenant: ``tenants.<name>.thread_idle_ttl_s``)
  — a thread with no committed turn for that long is expired: reads and turns
  answer NOT_FOUND at once (the thread stores filter on ``active_at``), and
  ``diwaniya gc`` erases it like DeleteThread — registry row, checkpoints,
  request records, turn events and the thread's memories. 0: never.

``active_at`` is the *server's* clock at the thread's last commit (not the
client's ``client_time``, which a client may set to any date).

PostgreSQL checkpoints are three tables: ``checkpoints`` (one row per
checkpoint, its ``channel_versions`` in the JSON), ``checkpoint_writes``
(per checkpoint) and ``checkpoint_blobs`` keyed by (channel, version): a
channel unchanged since an older checkpoint is *shared* with it, so a blob is
deleted only when no kept checkpoint of the thread references its version.
SQLite keeps the whole checkpoint in one row (tables ``checkpoints`` and
``writes``).

>>> RetentionPolicy(idle_ttl_s=86400, tenant_idle_ttl_s={"بنك": 3600}).idle_ttl("بنك")
3600
>>> RetentionPolicy(idle_ttl_s=86400).idle_ttl("متجر")
86400
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """Checkpoints kept per thread (0: all) and idle TTLs in seconds (0: never)."""

    checkpoints_kept: int = 0
    idle_ttl_s: float = 0.0
    # Tenants whose TTL differs from idle_ttl_s (0 there: that tenant's threads never expire).
    tenant_idle_ttl_s: Mapping[str, float] = field(default_factory=dict)

    def idle_ttl(self, tenant: str) -> float:
        return self.tenant_idle_ttl_s.get(tenant, self.idle_ttl_s)

    @property
    def expires(self) -> bool:
        """Whether any tenant's threads can expire."""
        return self.idle_ttl_s > 0 or any(v > 0 for v in self.tenant_idle_ttl_s.values())


# A commit deletes at most this many old checkpoints: a thread written before
# N was set (hundreds beyond N) is trimmed over a few turns, or by gc, never by
# one slow commit. At steady state a commit deletes one.
COMMIT_PRUNE_MAX = 16
_NO_LIMIT = 1 << 62


class CheckpointPruner(Protocol):
    """Deletes a thread's checkpoints beyond the latest ``keep``, on the caller's
    connection and inside its transaction (the fenced commit, or gc under the lock)."""

    async def prune(self, conn: Any, thread_id: str, *, keep: int, head: str,
                    limit: int = COMMIT_PRUNE_MAX) -> int:
        """Deletes at most ``limit``; returns how many; never ``head``; ``keep`` ≥ 1."""
        ...

    async def excess(self, conn: Any, thread_id: str, *, keep: int, head: str) -> int:
        """How many checkpoints are beyond ``keep`` now (``gc --dry-run``)."""
        ...


# --- PostgreSQL ---------------------------------------------------------------
# Ranked newest first (checkpoint ids are uuid6: they sort by creation time,
# the order LangGraph itself lists them in), per namespace; the head is exempt.
_PG_DOOMED = """
doomed AS (
    SELECT checkpoint_ns, checkpoint_id FROM (
        SELECT checkpoint_ns, checkpoint_id,
               row_number() OVER (PARTITION BY checkpoint_ns ORDER BY checkpoint_id DESC) AS rank
        FROM checkpoints WHERE thread_id = %(thread)s) ranked
    WHERE rank > %(keep)s AND NOT (checkpoint_ns = '' AND checkpoint_id = %(head)s)
    LIMIT %(limit)s)"""

# One statement, one round trip. Every CTE sees the same snapshot, so the
# checkpoints that stay are "this thread's rows minus doomed". Candidate blobs
# are only the versions a doomed checkpoint names (a handful per checkpoint,
# each a primary-key probe); one goes when no checkpoint that stays names it.
_PG_PRUNE = f"""
WITH {_PG_DOOMED},
old AS (
    SELECT DISTINCT c.checkpoint_ns, v.key AS channel, v.value AS version
    FROM checkpoints c JOIN doomed d USING (checkpoint_ns, checkpoint_id)
    CROSS JOIN LATERAL jsonb_each_text(c.checkpoint -> 'channel_versions') v
    WHERE c.thread_id = %(thread)s),
blobs AS (
    DELETE FROM checkpoint_blobs b USING old
    WHERE b.thread_id = %(thread)s AND b.checkpoint_ns = old.checkpoint_ns
      AND b.channel = old.channel AND b.version = old.version
      AND NOT EXISTS (
          SELECT 1 FROM checkpoints k
          WHERE k.thread_id = %(thread)s AND k.checkpoint_ns = old.checkpoint_ns
            AND k.checkpoint -> 'channel_versions' ->> old.channel = old.version
            AND (k.checkpoint_ns, k.checkpoint_id) NOT IN (
                SELECT checkpoint_ns, checkpoint_id FROM doomed))),
writes AS (
    DELETE FROM checkpoint_writes w USING doomed d
    WHERE w.thread_id = %(thread)s AND w.checkpoint_ns = d.checkpoint_ns
      AND w.checkpoint_id = d.checkpoint_id)
DELETE FROM checkpoints c USING doomed d
WHERE c.thread_id = %(thread)s AND c.checkpoint_ns = d.checkpoint_ns
  AND c.checkpoint_id = d.checkpoint_id"""

_PG_EXCESS = f"WITH {_PG_DOOMED} SELECT count(*) FROM doomed"


class PostgresCheckpoints:
    """:class:`CheckpointPruner` for LangGraph's PostgreSQL tables (psycopg connection)."""

    async def prune(self, conn: Any, thread_id: str, *, keep: int, head: str,
                    limit: int = COMMIT_PRUNE_MAX) -> int:
        params = {"thread": thread_id, "keep": max(keep, 1), "head": head, "limit": limit}
        cur = await conn.execute(_PG_PRUNE, params)
        return int(cur.rowcount or 0)

    async def excess(self, conn: Any, thread_id: str, *, keep: int, head: str) -> int:
        cur = await conn.execute(_PG_EXCESS, {"thread": thread_id, "keep": max(keep, 1),
                                              "head": head, "limit": _NO_LIMIT})
        row = await cur.fetchone()
        return int(_first(row))


# --- SQLite -------------------------------------------------------------------
_SQLITE_DOOMED = """
SELECT checkpoint_ns, checkpoint_id FROM (
    SELECT checkpoint_ns, checkpoint_id,
           row_number() OVER (PARTITION BY checkpoint_ns ORDER BY checkpoint_id DESC) AS rank
    FROM checkpoints WHERE thread_id = :thread)
WHERE rank > :keep AND NOT (checkpoint_ns = '' AND checkpoint_id = :head)
LIMIT :limit"""


class SqliteCheckpoints:
    """:class:`CheckpointPruner` for LangGraph's SQLite tables (aiosqlite connection).

    Runs inside the caller's transaction and never commits itself.
    """

    async def prune(self, conn: Any, thread_id: str, *, keep: int, head: str,
                    limit: int = COMMIT_PRUNE_MAX) -> int:
        params = {"thread": thread_id, "keep": max(keep, 1), "head": head, "limit": limit}
        await conn.execute(
            "DELETE FROM writes WHERE thread_id = :thread AND (checkpoint_ns, checkpoint_id)"
            f" IN ({_SQLITE_DOOMED})", params)
        cur = await conn.execute(
            "DELETE FROM checkpoints WHERE thread_id = :thread AND (checkpoint_ns, checkpoint_id)"
            f" IN ({_SQLITE_DOOMED})", params)
        return int(cur.rowcount or 0)

    async def excess(self, conn: Any, thread_id: str, *, keep: int, head: str) -> int:
        async with conn.execute(f"SELECT count(*) FROM ({_SQLITE_DOOMED})",
                                {"thread": thread_id, "keep": max(keep, 1), "head": head,
                                 "limit": _NO_LIMIT}) as cur:
            row = await cur.fetchone()
        return int(_first(row))


def _first(row: Any) -> Any:
    if row is None:
        return 0
    if isinstance(row, Mapping):
        return next(iter(row.values()))
    return row[0]
