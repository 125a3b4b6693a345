"""The embedded thread store's SQLite schema and connection setup (majlis.threads_sqlite).

Applied by ``SqliteThreadStore.migrate`` in one IMMEDIATE transaction; the
columns added after the first release are added when ``PRAGMA table_info``
lacks them (ALTER TABLE has no IF NOT EXISTS in SQLite).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time

import aiosqlite

__all__ = ["ADDED", "DDL", "LEASE_OWNER_COLUMNS", "enable_wal"]

DDL = """
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
CREATE TABLE IF NOT EXISTS diwaniya_requests (
    tenant        TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    request_id    TEXT NOT NULL,
    thread_id     TEXT NOT NULL,
    content_hash  TEXT NOT NULL,
    new_thread    INTEGER NOT NULL,
    done          INTEGER NOT NULL DEFAULT 0,
    turn_id       TEXT NOT NULL DEFAULT '',
    events        TEXT NOT NULL DEFAULT '[]',
    result        TEXT NOT NULL DEFAULT '{}',
    checkpoint_id TEXT NOT NULL DEFAULT '',
    created_at    REAL NOT NULL,
    PRIMARY KEY (tenant, user_id, request_id)
);
CREATE INDEX IF NOT EXISTS diwaniya_requests_by_age ON diwaniya_requests (created_at);
CREATE INDEX IF NOT EXISTS diwaniya_requests_by_thread ON diwaniya_requests (thread_id);
"""
# Columns added after the first release: ALTER TABLE has no IF NOT EXISTS in SQLite.
# active_at: this host's clock (epoch s) at the last commit (majlis.retention).
ADDED = (("diwaniya_threads", "head_checkpoint_id", "TEXT NOT NULL DEFAULT ''"),
         ("diwaniya_threads", "active_at", "REAL NOT NULL DEFAULT 0"))

# Added after the first release: the holder process of a lease.
LEASE_OWNER_COLUMNS = (("owner_pid", "INTEGER NOT NULL DEFAULT 0"),
                       ("owner_boot", "TEXT NOT NULL DEFAULT ''"),
                       ("owner_start", "TEXT NOT NULL DEFAULT ''"),
                       ("owner_host", "TEXT NOT NULL DEFAULT ''"))


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
