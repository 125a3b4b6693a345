"""Per-tenant ranking statistics for the SQLite store: document frequencies and pools.

FTS5 keeps one set of term statistics per *file*, so with its ``bm25()`` or
its ``fts5vocab`` counts a tenant's ranking moved when another tenant of the
same file added rows (ARCD beside 20,000 tweets of another tenant: recall@1
0.7183 against 0.7247 alone).  Here every statistic BM25 needs is kept per
tenant, as the PostgreSQL store keeps ``memory_terms`` and ``memory_stats``:

* ``memory_terms (tenant, term, df)``: in how many of the tenant's rows each
  index key occurs, kept by triggers on ``memory_records`` (so every writer,
  old code or new, counts the same way, in the writer's own transaction);
* ``memory_pools`` (memory.sqlite_schema): the tenant's rows and summed
  lengths per length pool, read here for the tenant alone.

FTS5 is then used only as an index (which rows hold a term), never for a
score; memory.candidates chooses which rows to score from these frequencies
and memory.ranking scores them, both as the PostgreSQL store does, so a
tenant's ids and scores do not depend on any other tenant's rows.

A row's keys are word runs (memory.terms) joined by single spaces, so
``'["' || replace(keys, ' ', '","') || '"]'`` is a JSON array of them: no
word run holds ``"``, ``\\`` or a control character, the only characters JSON
would need escaped.  A row whose keys are not valid JSON that way (none is
written so) counts as having no terms instead of failing the write.

    >>> import sqlite3
    >>> row = "(SELECT 'سياسة الاسترجاع سياسة' AS keys) AS r"
    >>> sqlite3.connect(":memory:").execute(f"SELECT j.value FROM {row}, json_each("
    ...     + _ARRAY.format(r="r") + ") AS j").fetchall()
    [('سياسة',), ('الاسترجاع',), ('سياسة',)]
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import aiosqlite

from memory.ranking import PoolStats

__all__ = ["TERMS_BACKFILL", "TERMS_MARK", "TERMS_SCHEMA", "document_frequencies", "pool_stats"]

_ARRAY = """'["' || replace({r}.keys, ' ', '","') || '"]'"""
# The row's distinct keys (a key counts once per row in a document frequency).
_KEYS = (
    "(SELECT DISTINCT j.value FROM json_each(CASE WHEN json_valid({a}) THEN {a} ELSE '[]' END)"
    " AS j WHERE j.value <> '')"
)
NEW_KEYS = _KEYS.format(a=_ARRAY.format(r="new"))
OLD_KEYS = _KEYS.format(a=_ARRAY.format(r="old"))

# ``WHERE true`` before ON CONFLICT: SQLite's parser needs it to tell an
# upsert's ON from a join's after INSERT … SELECT … FROM.  Rows whose df
# falls to 0 are removed, so the table holds only keys some row holds.
_ADD = f"""
    INSERT INTO memory_terms (tenant, term, df)
    SELECT new.tenant, k.value, 1 FROM {NEW_KEYS} AS k WHERE true
    ON CONFLICT (tenant, term) DO UPDATE SET df = df + 1;"""
_REMOVE = f"""
    UPDATE memory_terms SET df = df - 1
    WHERE tenant = old.tenant AND term IN {OLD_KEYS};
    DELETE FROM memory_terms
    WHERE tenant = old.tenant AND df <= 0 AND term IN {OLD_KEYS};"""
TERMS_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS memory_terms (
    tenant TEXT NOT NULL,
    term   TEXT NOT NULL,
    df     INTEGER NOT NULL,
    PRIMARY KEY (tenant, term)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS memory_terms_ai AFTER INSERT ON memory_records BEGIN{_ADD}
END;
CREATE TRIGGER IF NOT EXISTS memory_terms_ad AFTER DELETE ON memory_records BEGIN{_REMOVE}
END;
CREATE TRIGGER IF NOT EXISTS memory_terms_au AFTER UPDATE OF keys ON memory_records
WHEN old.keys IS NOT new.keys BEGIN{_REMOVE}{_ADD}
END;
"""
# A file from before per-tenant statistics: counted from its rows once
# (TERMS_MARK), in the same IMMEDIATE transaction that creates the triggers,
# so no write lands between the count and the first trigger.
TERMS_BACKFILL = f"""
DELETE FROM memory_terms;
INSERT INTO memory_terms (tenant, term, df)
SELECT t.tenant, t.term, count(*) FROM (
    SELECT DISTINCT r.rowid, r.tenant, j.value AS term
    FROM memory_records AS r,
         json_each(CASE WHEN json_valid({_ARRAY.format(r="r")}) THEN {_ARRAY.format(r="r")}
                   ELSE '[]' END) AS j
    WHERE j.value <> ''
) AS t GROUP BY t.tenant, t.term;
"""
TERMS_MARK = "terms_v1"

_DF = (
    "SELECT term, df FROM memory_terms WHERE tenant = ?"
    " AND term IN (SELECT value FROM json_each(?)) AND df > 0"
)
_POOLS = "SELECT pool, n_docs, total_len FROM memory_pools WHERE tenant = ?"


async def document_frequencies(
    db: aiosqlite.Connection, tenant: str, terms: Sequence[str]
) -> dict[str, int]:
    """The tenant's document frequency of each term some of its rows hold."""
    async with db.execute(_DF, (tenant, json.dumps(list(terms), ensure_ascii=False))) as cur:
        return {str(term): int(df) for term, df in await cur.fetchall()}


async def pool_stats(db: aiosqlite.Connection, tenant: str) -> PoolStats:
    """The tenant's rows and summed lengths per length pool (memory.ranking)."""
    got = {0: (0, 0), 1: (0, 0)}
    async with db.execute(_POOLS, (tenant,)) as cur:
        for pool, n, total in await cur.fetchall():
            got[int(pool)] = (int(n or 0), int(total or 0))
    return PoolStats(short_docs=got[0][0], short_len=got[0][1],
                     long_docs=got[1][0], long_len=got[1][1])
