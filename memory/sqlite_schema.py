"""The SQLite memory store's tables: records, FTS5 index, BM25 length pools.

Per-tenant document frequencies (``memory_terms``) are in memory.sqlite_stats.

Kept apart from the store (memory/sqlite_store.py) as memory/pg_schema.py is
from the PostgreSQL one: the DDL and its migrations, no behaviour.
"""

from __future__ import annotations

from memory.ranking import SHORT_TERMS

SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_records (
    rowid      INTEGER PRIMARY KEY,
    tenant     TEXT NOT NULL,
    id         TEXT NOT NULL,
    user_id    TEXT,
    kind       TEXT NOT NULL,
    text       TEXT NOT NULL,
    title      TEXT NOT NULL DEFAULT '',
    metadata   TEXT NOT NULL DEFAULT '{}',
    thread_id  TEXT,
    turn_id    TEXT,
    doc_id     TEXT,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    keys       TEXT NOT NULL,
    UNIQUE (tenant, id)
);
CREATE INDEX IF NOT EXISTS memory_records_user ON memory_records (tenant, user_id);
CREATE INDEX IF NOT EXISTS memory_records_thread ON memory_records (tenant, thread_id);
CREATE INDEX IF NOT EXISTS memory_records_doc ON memory_records (tenant, doc_id);
-- remove_diacritics 0: keys are already folded by the key function, and
-- unicode61 must not fold them a second, different way.
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
    keys, content='memory_records', content_rowid='rowid',
    tokenize='unicode61 remove_diacritics 0'
);
CREATE TRIGGER IF NOT EXISTS memory_records_ai AFTER INSERT ON memory_records BEGIN
    INSERT INTO memory_fts (rowid, keys) VALUES (new.rowid, new.keys);
END;
CREATE TRIGGER IF NOT EXISTS memory_records_ad AFTER DELETE ON memory_records BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, keys) VALUES ('delete', old.rowid, old.keys);
END;
CREATE TRIGGER IF NOT EXISTS memory_records_au AFTER UPDATE OF keys ON memory_records BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, keys) VALUES ('delete', old.rowid, old.keys);
    INSERT INTO memory_fts (rowid, keys) VALUES (new.rowid, new.keys);
END;
"""

# Length pools (memory.ranking), kept by triggers so every writer, old or
# new code path, counts the same way.  A row's length is its number of keys
# (word runs joined by single spaces).  Created and backfilled in one
# IMMEDIATE transaction (see setup), so a file from before pools gets exact
# counts even while another process writes.
DOC_LEN = (
    "(CASE WHEN {r}.keys = '' THEN 0"
    " ELSE length({r}.keys) - length(replace({r}.keys, ' ', '')) + 1 END)"
)
POOL = f"({DOC_LEN} >= {int(SHORT_TERMS)})"
NEW_LEN, OLD_LEN = DOC_LEN.format(r="new"), DOC_LEN.format(r="old")
NEW_POOL, OLD_POOL = POOL.format(r="new"), POOL.format(r="old")
POOL_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS memory_pools (
    tenant    TEXT NOT NULL,
    pool      INTEGER NOT NULL,
    n_docs    INTEGER NOT NULL,
    total_len INTEGER NOT NULL,
    PRIMARY KEY (tenant, pool)
);
CREATE TABLE IF NOT EXISTS memory_meta (key TEXT PRIMARY KEY);
-- The file-wide FTS5 vocabulary: no longer read (ranking uses per-tenant
-- memory_terms, memory.sqlite_stats); kept for releases before that, which
-- still read it while they run beside this one.
CREATE VIRTUAL TABLE IF NOT EXISTS memory_vocab USING fts5vocab(memory_fts, 'row');
CREATE TRIGGER IF NOT EXISTS memory_pools_ai AFTER INSERT ON memory_records BEGIN
    INSERT INTO memory_pools VALUES (new.tenant, {NEW_POOL}, 1, {NEW_LEN})
    ON CONFLICT (tenant, pool) DO UPDATE SET
        n_docs = n_docs + 1, total_len = total_len + excluded.total_len;
END;
CREATE TRIGGER IF NOT EXISTS memory_pools_ad AFTER DELETE ON memory_records BEGIN
    UPDATE memory_pools SET n_docs = n_docs - 1, total_len = total_len - {OLD_LEN}
    WHERE tenant = old.tenant AND pool = {OLD_POOL};
END;
CREATE TRIGGER IF NOT EXISTS memory_pools_au AFTER UPDATE OF keys ON memory_records BEGIN
    UPDATE memory_pools SET n_docs = n_docs - 1, total_len = total_len - {OLD_LEN}
    WHERE tenant = old.tenant AND pool = {OLD_POOL};
    INSERT INTO memory_pools VALUES (new.tenant, {NEW_POOL}, 1, {NEW_LEN})
    ON CONFLICT (tenant, pool) DO UPDATE SET
        n_docs = n_docs + 1, total_len = total_len + excluded.total_len;
END;
"""
POOL_BACKFILL = f"""
DELETE FROM memory_pools;
INSERT INTO memory_pools
SELECT r.tenant, {POOL.format(r="r")}, count(*), sum({DOC_LEN.format(r="r")})
FROM memory_records AS r GROUP BY 1, 2;
"""
POOL_MARK = "pools_v1"
