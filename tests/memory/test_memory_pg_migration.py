"""A database created before ``keys`` was dropped keeps working after setup()."""

from __future__ import annotations

import asyncpg

from memory import Kind, NewRecord, PostgresMemoryStore
from memory.terms import whitespace_keys

# The table as the previous release created it: tsv generated from keys.
_OLD_TABLE = """
CREATE TABLE memory_records (
    tenant text NOT NULL, id text NOT NULL, user_id text, kind text NOT NULL,
    text text NOT NULL, title text NOT NULL DEFAULT '', metadata jsonb NOT NULL DEFAULT '{}',
    thread_id text, turn_id text, doc_id text,
    created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(),
    keys text NOT NULL, doc_len integer NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, keys)) STORED,
    PRIMARY KEY (tenant, id)
);
INSERT INTO memory_records (tenant, id, kind, text, keys, doc_len)
VALUES ('t', 'old', 'document', 'ساعات العمل في رمضان', 'ساعات العمل رمضان', 3);
CREATE TABLE memory_terms (tenant text, lexeme text, df bigint, PRIMARY KEY (tenant, lexeme));
INSERT INTO memory_terms VALUES ('t', 'ساعات', 1), ('t', 'العمل', 1), ('t', 'رمضان', 1);
CREATE TABLE memory_stats (tenant text PRIMARY KEY, n_docs bigint, total_len bigint);
INSERT INTO memory_stats VALUES ('t', 1, 3);
"""


async def test_setup_drops_the_keys_column_and_keeps_old_rows_searchable(
        own_database: str) -> None:
    conn = await asyncpg.connect(own_database)
    await conn.execute(_OLD_TABLE)
    store = await PostgresMemoryStore.connect(own_database, keys=whitespace_keys, max_size=1)
    try:
        await store.setup()
        await store.setup()  # idempotent: the second run finds nothing to migrate
        columns = {r[0] for r in await conn.fetch(
            "SELECT column_name FROM information_schema.columns"
            " WHERE table_name = 'memory_records'")}
        assert "keys" not in columns and "tsv" in columns
        hits = await store.search("t", "رمضان")
        assert [h.record.id for h in hits] == ["old"]
        # New writes fill tsv themselves now that it is a plain column.
        await store.put([NewRecord(tenant="t", kind=Kind.DOCUMENT, id="new",
                                   text="العمل عن بعد يوم الخميس")])
        assert {h.record.id for h in await store.search("t", "العمل")} == {"old", "new"}
    finally:
        await store.close()
        await conn.close()
