"""Looking into the database itself for the retention tests: rows per thread and table,
and moving a thread's last activity into the past (the one thing a test cannot wait for)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg

from service.settings import Settings

# (table, column naming the thread) in the threads database; memories are separate.
PG_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes", "diwaniya_requests",
             "diwaniya_turn_events", "diwaniya_threads")
SQLITE_TABLES = ("checkpoints", "writes", "diwaniya_requests", "diwaniya_turn_events",
                 "diwaniya_threads")


class ThreadRows:
    """Counts rows of one store directly (psycopg / sqlite3), outside the service."""

    def __init__(self, settings: Settings) -> None:
        self.dsn = settings.database_dsn()
        self.folder = Path(settings.data_dir)

    def _query(self, sql_pg: str, sql_lite: str, params: tuple[object, ...],
               *, memory: bool = False) -> list[tuple[object, ...]]:
        if self.dsn:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                return list(conn.execute(sql_pg, params).fetchall())
        name = "memory.sqlite3" if memory else "threads.sqlite3"
        with sqlite3.connect(self.folder / name) as conn:
            return list(conn.execute(sql_lite, params).fetchall())

    def per_table(self, thread_id: str) -> dict[str, int]:
        counts = {}
        for table in PG_TABLES if self.dsn else SQLITE_TABLES:
            (row,) = self._query(f"SELECT count(*) FROM {table} WHERE thread_id = %s",
                                 f"SELECT count(*) FROM {table} WHERE thread_id = ?", (thread_id,))
            counts[table] = int(row[0])  # type: ignore[call-overload]
        counts["memories"] = self.memories(thread_id)
        return counts

    def memories(self, thread_id: str) -> int:
        (row,) = self._query("SELECT count(*) FROM memory_records WHERE thread_id = %s",
                             "SELECT count(*) FROM memory_records WHERE thread_id = ?",
                             (thread_id,), memory=True)
        return int(row[0])  # type: ignore[call-overload]

    def checkpoints(self, thread_id: str) -> int:
        return self.per_table(thread_id)["checkpoints"]

    def orphan_blobs(self, thread_id: str) -> int:
        """PostgreSQL: blob versions no remaining checkpoint of the thread references."""
        if not self.dsn:
            return 0
        (row,) = self._query(
            "SELECT count(*) FROM checkpoint_blobs b WHERE thread_id = %s AND NOT EXISTS ("
            " SELECT 1 FROM checkpoints c WHERE c.thread_id = b.thread_id"
            " AND c.checkpoint_ns = b.checkpoint_ns"
            " AND c.checkpoint -> 'channel_versions' ->> b.channel = b.version)", "",
            (thread_id,))
        return int(row[0])  # type: ignore[call-overload]

    def age(self, thread_id: str, seconds: float) -> None:
        """The thread's last activity ``seconds`` further in the past."""
        self._query("UPDATE diwaniya_threads SET active_at = active_at - make_interval("
                    "secs => %s) WHERE thread_id = %s RETURNING 1",
                    "UPDATE diwaniya_threads SET active_at = active_at - ? WHERE thread_id = ?"
                    " RETURNING 1", (seconds, thread_id))

    def registry(self, thread_id: str) -> tuple[object, ...] | None:
        """(lease_epoch or 0, head_checkpoint_id) of the registry row, or None."""
        rows = self._query(
            "SELECT lease_epoch, head_checkpoint_id FROM diwaniya_threads WHERE thread_id = %s",
            "SELECT 0, head_checkpoint_id FROM diwaniya_threads WHERE thread_id = ?",
            (thread_id,))
        return rows[0] if rows else None

    def age_records(self, thread_id: str, seconds: float) -> None:
        """The thread's request records and turn events ``seconds`` older."""
        self._query("UPDATE diwaniya_requests SET created_at = created_at - make_interval("
                    "secs => %s) WHERE thread_id = %s RETURNING 1",
                    "UPDATE diwaniya_requests SET created_at = created_at - ? WHERE thread_id = ?"
                    " RETURNING 1", (seconds, thread_id))
        self._query("UPDATE diwaniya_turn_events SET at = at - %s WHERE thread_id = %s"
                    " RETURNING 1",
                    "UPDATE diwaniya_turn_events SET at = at - ? WHERE thread_id = ? RETURNING 1",
                    (seconds, thread_id))

    def counters(self) -> dict[str, int]:
        """Rate-limit counter rows by key (PostgreSQL table, or limits.sqlite3)."""
        if self.dsn:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                return {r[0]: int(r[1]) for r in conn.execute(
                    "SELECT key, value FROM diwaniya_limit_counters")}
        with sqlite3.connect(self.folder / "limits.sqlite3") as conn:
            return {r[0]: int(r[1]) for r in conn.execute("SELECT key, value FROM limit_counters")}

    def add_expired_counter(self, key: str) -> None:
        if self.dsn:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                conn.execute("INSERT INTO diwaniya_limit_counters VALUES (%s, 5, now() - interval"
                             " '1 hour')", (key,))
            return
        with sqlite3.connect(self.folder / "limits.sqlite3") as conn:
            conn.execute("INSERT INTO limit_counters VALUES (?, 5, 1)", (key,))
