"""The SQLite schema of the embedded thread store (majlis.threads_sqlite).

Applied by ``SqliteThreadStore.migrate`` in one IMMEDIATE transaction; the
columns added after the first release are added when ``PRAGMA table_info``
lacks them (ALTER TABLE has no IF NOT EXISTS in SQLite).
"""

from __future__ import annotations

__all__ = ["ADDED", "DDL", "LEASE_OWNER_COLUMNS"]

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
