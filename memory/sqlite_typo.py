"""The SQLite store's typo stage (memory.typo): vocabulary table, trigram index, lookup.

Split from ``memory.sqlite_store``, which calls ``setup_vocabulary`` in its
migration and ``corrections`` when a query has keys the tenant lacks.
"""

from __future__ import annotations

import aiosqlite

from memory.sqlite_stats import document_frequencies
from memory.typo import CANDIDATES_PER_TERM, best_corrections, candidate_trigrams

__all__ = ["ADD_WORDS", "KNOWN_WORDS", "TYPO_MARK", "TYPO_SCHEMA", "corrections", "words"]

# Typo stage (memory.typo): each tenant's vocabulary of index keys, and an
# FTS5 trigram index over it (external content, kept by the trigger).  Keys
# are added by put(); a file from before the stage is backfilled from its
# rows once (TYPO_MARK), in the same IMMEDIATE transaction as the schema.
# Keys whose last record is deleted stay listed: corrections are checked
# against the tenant's document frequencies (memory.sqlite_stats), so such a
# key is never chosen.
TYPO_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_words (
    tenant TEXT NOT NULL,
    term   TEXT NOT NULL,
    PRIMARY KEY (tenant, term)
);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_words_trgm USING fts5(
    term, content='memory_words', content_rowid='rowid', tokenize='trigram'
);
CREATE TRIGGER IF NOT EXISTS memory_words_ai AFTER INSERT ON memory_words BEGIN
    INSERT INTO memory_words_trgm (rowid, term) VALUES (new.rowid, new.term);
END;
"""
TYPO_MARK = "typo_v1"
ADD_WORDS = "INSERT OR IGNORE INTO memory_words (tenant, term) VALUES (?, ?)"
KNOWN_WORDS = (
    "SELECT term FROM memory_words WHERE tenant = ?"
    " AND term IN (SELECT value FROM json_each(?))"
)
# Candidates sharing an inner trigram with the unknown key, best-matching first.
_TRIGRAM_WORDS = """
SELECT w.term FROM memory_words_trgm AS f JOIN memory_words AS w ON w.rowid = f.rowid
WHERE memory_words_trgm MATCH ? AND w.tenant = ?
ORDER BY f.rank LIMIT ?
"""
# A key at pg_trgm's threshold that shares no inner trigram shares its two
# padded opening trigrams and its closing one: same first two and last two
# letters (memory.typo.candidate_trigrams).  The primary key's range finds them.
_EDGE_WORDS = """
SELECT term FROM memory_words
WHERE tenant = ? AND term >= ? AND term < ? AND substr(term, -2) = ?
LIMIT ?
"""


def words(tenant: str, keys: str) -> set[tuple[str, str]]:
    """(tenant, key) pairs of one row's space-joined keys, for memory_words."""
    return {(tenant, term) for term in keys.split()}


async def corrections(db: aiosqlite.Connection, tenant: str, unknown: list[str],
                       have: set[str]) -> list[str]:
    """Vocabulary keys replacing the ``unknown`` ones (memory.typo), not already in ``have``."""
    fixes: dict[str, None] = {}
    for term in unknown:
        found: set[str] = set()
        grams = candidate_trigrams(term)
        if grams:
            match = " OR ".join('"' + g.replace('"', '""') + '"' for g in grams)
            async with db.execute(_TRIGRAM_WORDS, (match, tenant, CANDIDATES_PER_TERM)) as cur:
                found.update(str(r[0]) for r in await cur.fetchall())
        edge = (tenant, term[:2], term[:2] + "\U0010ffff", term[-2:], CANDIDATES_PER_TERM)
        async with db.execute(_EDGE_WORDS, edge) as cur:
            found.update(str(r[0]) for r in await cur.fetchall())
        # The tenant's document frequencies: a key no row holds any more is never chosen.
        df = await document_frequencies(db, tenant, sorted(found))
        for fix in best_corrections(term, [(w, df[w]) for w in found if df.get(w)]):
            if fix not in have:
                fixes.setdefault(fix, None)
    return list(fixes)
