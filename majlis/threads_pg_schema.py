"""The PostgreSQL schema of the thread registry and the request records.

Applied by ``diwaniya migrate`` (``majlis.persistence.migrate_postgres``) under
``MIGRATION_LOCK``; every statement is idempotent (``IF NOT EXISTS``), so
replicas migrating at once, or an old database, end in the same schema.
"""

from __future__ import annotations

__all__ = ["MIGRATION_LOCK", "THREADS_DDL"]

MIGRATION_LOCK = 0x44570001

THREADS_DDL = """
CREATE TABLE IF NOT EXISTS diwaniya_threads (
    thread_id   text PRIMARY KEY,
    tenant      text NOT NULL,
    user_id     text NOT NULL,
    title       text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    turn_count  integer NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS diwaniya_threads_by_user
    ON diwaniya_threads (tenant, user_id, updated_at DESC, thread_id DESC);
-- Fencing token (bumped by every lock holder) and the last committed checkpoint.
ALTER TABLE diwaniya_threads ADD COLUMN IF NOT EXISTS lease_epoch bigint NOT NULL DEFAULT 0;
-- The holder's uuid, set with every bump and checked with the epoch: unique per
-- acquisition, so a bump lost with its asynchronous commit is never reissued.
ALTER TABLE diwaniya_threads ADD COLUMN IF NOT EXISTS lease_owner uuid;
ALTER TABLE diwaniya_threads ADD COLUMN IF NOT EXISTS head_checkpoint_id text NOT NULL DEFAULT '';
-- The database clock at the last commit (majlis.retention: idle expiry); rows
-- from before get the migration's time, so they never expire early.
ALTER TABLE diwaniya_threads ADD COLUMN IF NOT EXISTS active_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX IF NOT EXISTS diwaniya_threads_by_activity ON diwaniya_threads (active_at);
CREATE TABLE IF NOT EXISTS diwaniya_requests (
    tenant        text NOT NULL,
    user_id       text NOT NULL,
    request_id    text NOT NULL,
    thread_id     text NOT NULL,
    content_hash  text NOT NULL,
    new_thread    boolean NOT NULL,
    done          boolean NOT NULL DEFAULT false,
    turn_id       text NOT NULL DEFAULT '',
    events        jsonb NOT NULL DEFAULT '[]',
    result        jsonb NOT NULL DEFAULT '{}',
    checkpoint_id text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, user_id, request_id)
);
CREATE INDEX IF NOT EXISTS diwaniya_requests_by_age ON diwaniya_requests (created_at);
CREATE INDEX IF NOT EXISTS diwaniya_requests_by_thread ON diwaniya_requests (thread_id);
"""
