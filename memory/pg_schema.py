"""The PostgreSQL store's schema, its migrations and its write statements.

Split from ``memory.postgres_store`` (which runs them): every statement that
creates or changes tables lives here, so a migration is reviewed in one place.
"""

from __future__ import annotations

from memory.ranking import SHORT_TERMS

# Serialises schema creation across replicas starting at once.
SCHEMA_LOCK = 0x6469_7761_6D65_6D  # "diwamem"

SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_records (
    tenant     text NOT NULL,
    id         text NOT NULL,
    user_id    text,
    kind       text NOT NULL,
    text       text NOT NULL,
    title      text NOT NULL DEFAULT '',
    metadata   jsonb NOT NULL DEFAULT '{}',
    thread_id  text,
    turn_id    text,
    doc_id     text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    doc_len    integer NOT NULL,
    tsv        tsvector NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX IF NOT EXISTS memory_records_tsv ON memory_records USING gin (tsv);
CREATE INDEX IF NOT EXISTS memory_records_user ON memory_records (tenant, user_id);
CREATE INDEX IF NOT EXISTS memory_records_thread ON memory_records (tenant, thread_id);
CREATE INDEX IF NOT EXISTS memory_records_doc ON memory_records (tenant, doc_id);
CREATE TABLE IF NOT EXISTS memory_terms (
    tenant text NOT NULL,
    lexeme text NOT NULL,
    df     bigint NOT NULL,
    PRIMARY KEY (tenant, lexeme)
);
-- What the rows' keys were made with: key 'keys' -> nlp.keys_fingerprint (memory.rekey).
CREATE TABLE IF NOT EXISTS memory_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
CREATE TABLE IF NOT EXISTS memory_stats (
    tenant     text PRIMARY KEY,
    n_docs     bigint NOT NULL,
    total_len  bigint NOT NULL,
    short_docs bigint NOT NULL DEFAULT 0,
    short_len  bigint NOT NULL DEFAULT 0
);
"""

# Databases created before the keys column was dropped: tsv was generated
# from keys.  DROP EXPRESSION turns it into a plain column keeping its values
# (catalog change only, no rewrite), after which keys can go.  Run only when
# keys still exists, so a normal start takes no ACCESS EXCLUSIVE lock.
HAS_KEYS_COLUMN = """
SELECT EXISTS (SELECT 1 FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name = 'memory_records'
                 AND column_name = 'keys')
"""
DROP_KEYS_COLUMN = """
ALTER TABLE memory_records ALTER COLUMN tsv DROP EXPRESSION IF EXISTS;
ALTER TABLE memory_records DROP COLUMN IF EXISTS keys;
"""

# Databases created before length pools (memory.ranking): memory_stats has
# no per-pool counts.  Added and backfilled from the rows in the same
# transaction, under the schema lock, so replicas starting together add them
# once (ADD COLUMN IF NOT EXISTS makes a repeat a no-op).  Known limit during a
# rolling upgrade: an old replica's writes update n_docs/total_len but not the
# short counts, so the pools drift by those writes until the stats are rebuilt.
HAS_POOL_COLUMNS = """
SELECT EXISTS (SELECT 1 FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name = 'memory_stats'
                 AND column_name = 'short_docs')
"""
ADD_POOL_COLUMNS = """
ALTER TABLE memory_stats ADD COLUMN IF NOT EXISTS short_docs bigint NOT NULL DEFAULT 0,
                         ADD COLUMN IF NOT EXISTS short_len bigint NOT NULL DEFAULT 0;
UPDATE memory_stats AS s
SET short_docs = p.short_docs, short_len = p.short_len
FROM (SELECT r.tenant, count(*) AS short_docs, sum(r.doc_len) AS short_len
      FROM memory_records AS r WHERE r.doc_len < SHORT GROUP BY r.tenant) AS p
WHERE p.tenant = s.tenant;
""".replace("SHORT", str(int(SHORT_TERMS)))

COLUMNS = (
    "r.id, r.tenant, r.user_id, r.kind, r.text, r.title, r.metadata::text, r.thread_id,"
    " r.turn_id, r.doc_id, r.created_at, r.updated_at"
)

UPSERT = f"""
INSERT INTO memory_records AS r
    (tenant, id, user_id, kind, text, title, metadata, thread_id, turn_id, doc_id, tsv, doc_len)
SELECT t.tenant, t.id, t.user_id, t.kind, t.text, t.title, t.metadata::jsonb, t.thread_id,
       t.turn_id, t.doc_id, to_tsvector('simple'::regconfig, t.keys), t.doc_len
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
            $8::text[], $9::text[], $10::text[], $11::text[], $12::int[])
     AS t(tenant, id, user_id, kind, text, title, metadata, thread_id, turn_id, doc_id, keys,
          doc_len)
ON CONFLICT (tenant, id) DO UPDATE SET
    user_id = excluded.user_id, kind = excluded.kind, text = excluded.text,
    title = excluded.title, metadata = excluded.metadata, thread_id = excluded.thread_id,
    turn_id = excluded.turn_id, doc_id = excluded.doc_id, tsv = excluded.tsv,
    doc_len = excluded.doc_len, updated_at = now()
RETURNING {COLUMNS}
"""

# Add (sign=+1) or remove (sign=-1) the statistics of the rows matching
# {where}.  GROUP BY makes each (tenant, lexeme) appear once, as ON CONFLICT
# requires; ORDER BY takes row locks in one order so concurrent writers to
# different tenants cannot deadlock.
TERM_DELTA = """
INSERT INTO memory_terms AS m (tenant, lexeme, df)
SELECT r.tenant, u.lexeme, $1::int * count(*)
FROM memory_records AS r, unnest(r.tsv) AS u
WHERE {where}
GROUP BY 1, 2 ORDER BY 1, 2
ON CONFLICT (tenant, lexeme) DO UPDATE SET df = m.df + excluded.df
RETURNING m.tenant, m.lexeme, m.df
"""
STATS_DELTA = """
INSERT INTO memory_stats AS m (tenant, n_docs, total_len, short_docs, short_len)
SELECT r.tenant, $1::int * count(*), $1::int * coalesce(sum(r.doc_len), 0),
       $1::int * count(*) FILTER (WHERE r.doc_len < SHORT),
       $1::int * coalesce(sum(r.doc_len) FILTER (WHERE r.doc_len < SHORT), 0)
FROM memory_records AS r
WHERE {where}
GROUP BY 1 ORDER BY 1
ON CONFLICT (tenant) DO UPDATE SET
    n_docs = m.n_docs + excluded.n_docs, total_len = m.total_len + excluded.total_len,
    short_docs = m.short_docs + excluded.short_docs,
    short_len = m.short_len + excluded.short_len
""".replace("SHORT", str(int(SHORT_TERMS)))

# Typo stage (memory.typo): trigram index over the tenant vocabulary that
# memory_terms already is (one row per tenant and indexed key).  pg_trgm is a
# trusted extension (PostgreSQL 13+): the database owner may create it.  The
# index is built once, under the schema lock, on databases from before the
# stage; IF NOT EXISTS makes later starts a catalog lookup.  Run only when the
# stage is on, so a server without the contrib package still serves exact
# search with the stage switched off.
HAS_TRGM_INDEX = """
SELECT EXISTS (SELECT 1 FROM pg_indexes
               WHERE schemaname = current_schema() AND indexname = 'memory_terms_trgm')
"""
ADD_TRGM_INDEX = """
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX IF NOT EXISTS memory_terms_trgm ON memory_terms USING gin (lexeme gin_trgm_ops);
"""

# Re-keying (memory.rekey, memory.pg_rekey).  One replica re-keys at a time:
# a session advisory lock held from the fingerprint check to its recording.
REKEY_LOCK = 0x6469_7761_7265_6B79  # "diwareky"
GET_FINGERPRINT = "SELECT value FROM memory_meta WHERE key = 'keys'"
SET_FINGERPRINT = """
INSERT INTO memory_meta (key, value) VALUES ('keys', $1)
ON CONFLICT (key) DO UPDATE SET value = excluded.value
"""
# Setup, under SCHEMA_LOCK: an empty database takes the fingerprint at once.
RECORD_IF_EMPTY = """
INSERT INTO memory_meta (key, value)
SELECT 'keys', $1 WHERE NOT EXISTS (SELECT 1 FROM memory_records)
ON CONFLICT (key) DO NOTHING
"""
# Keyset pages over the primary key: each page an index range, never OFFSET.
REKEY_PAGE = """
SELECT tenant, id, title, text FROM memory_records
WHERE (tenant, id) > ($1, $2) ORDER BY tenant, id LIMIT $3
"""
REKEY_FRESH = """
SELECT r.tenant, r.id, r.title, r.text FROM memory_records AS r
WHERE (r.tenant, r.id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
"""
# The rows whose stored keys differ from the new ones: only those are written.
_NEW_KEYS = ("unnest($1::text[], $2::text[], $3::text[], $4::int[])"
             " AS k(tenant, id, keys, doc_len)")
REKEY_CHANGED = f"""
SELECT k.tenant, k.id FROM {_NEW_KEYS}
JOIN memory_records AS r ON r.tenant = k.tenant AND r.id = k.id
WHERE r.doc_len <> k.doc_len OR r.tsv <> to_tsvector('simple'::regconfig, k.keys)
"""
# updated_at stays: re-keying is not an edit of the record.
REKEY_UPDATE = f"""
UPDATE memory_records AS r
SET tsv = to_tsvector('simple'::regconfig, k.keys), doc_len = k.doc_len
FROM {_NEW_KEYS}
WHERE r.tenant = k.tenant AND r.id = k.id
"""
