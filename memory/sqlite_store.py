"""The embedded store: one SQLite file with an FTS5 index over search keys.

FTS5 indexes the ``keys`` column (the key function's output, word runs
joined by spaces), never the original text, so both index and query see the
same normalised forms.  The original text lives in the content table untouched.

FTS5 only finds rows; it never scores them, because its statistics are the
whole file's and a file may hold several tenants.  Ranking uses per-tenant
statistics (memory.sqlite_stats: document frequencies and length pools kept
by triggers): memory.candidates picks the rows to score from the tenant's
document frequencies, and memory.ranking scores them with length-pooled
BM25 from each candidate's stored keys, the same choice and formula as the
PostgreSQL store, so a tenant's ids and scores never depend on another
tenant's rows.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite

from diwaniya.errors import ConfigurationError, Unavailable
from memory.arabizi_stage import all_keys, arabizi_readings, choose_readings
from memory.candidates import SCAN_CANDIDATES, plan
from memory.expansion import BRIDGE_WEIGHT, Expander, WeightedTerms, weighted_terms
from memory.ranking import idf, score_terms
from memory.records import (
    DocumentInfo,
    Kind,
    MemoryRecord,
    NewRecord,
    SearchHit,
    document_from_row,
    record_from_row,
    validated_chunks,
)
from memory.rekey import BATCH_ROWS, Progress, RekeyReport, warn_if_stale
from memory.snippet import WordKeys, highlight_snippet
from memory.sqlite_rekey import record_if_new, recorded_fingerprint, rekey_sqlite
from memory.sqlite_schema import (
    POOL_BACKFILL as _POOL_BACKFILL,
)
from memory.sqlite_schema import (
    POOL_MARK as _POOL_MARK,
)
from memory.sqlite_schema import (
    POOL_SCHEMA as _POOL_SCHEMA,
)
from memory.sqlite_schema import (
    SCHEMA as _SCHEMA,
)
from memory.sqlite_stats import (
    TERMS_BACKFILL,
    TERMS_MARK,
    TERMS_SCHEMA,
    document_frequencies,
    pool_stats,
)
from memory.sqlite_typo import (
    ADD_WORDS,
    KNOWN_WORDS,
    TYPO_MARK,
    TYPO_SCHEMA,
    corrections,
    words,
)
from memory.terms import MAX_K, MAX_QUERY_CHARS, KeyFunction
from memory.text_keys import record_terms
from memory.typo import TYPO_WEIGHT, unknown_terms
from nlp.keys import keys_fingerprint

__all__ = ["SqliteMemoryStore"]

# How long a write waits for another connection's write lock, and how long
# setup() waits for another process's migration (see setup).
_BUSY_MS = 5_000
_MIGRATION_WAIT_MS = 600_000

_UPSERT = """
INSERT INTO memory_records
    (tenant, id, user_id, kind, text, title, metadata, thread_id, turn_id, doc_id,
     created_at, updated_at, keys)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (tenant, id) DO UPDATE SET
    user_id = excluded.user_id, kind = excluded.kind, text = excluded.text,
    title = excluded.title, metadata = excluded.metadata, thread_id = excluded.thread_id,
    turn_id = excluded.turn_id, doc_id = excluded.doc_id,
    updated_at = excluded.updated_at, keys = excluded.keys
"""

_COLUMNS = (
    "r.id, r.tenant, r.user_id, r.kind, r.text, r.title, r.metadata, r.thread_id,"
    " r.turn_id, r.doc_id, r.created_at, r.updated_at"
)

# Visibility is the same predicate everywhere: tenant-wide rows, plus the
# asking user's own rows.  ``r.user_id = NULL`` is never true, so a search
# without a user id sees tenant-wide rows only.
# Rows in index (rowid) order, which FTS5 yields without sorting: a tenant's
# rows keep their relative order whatever other tenants add.
_CANDIDATES = """
SELECT r.rowid, r.keys, r.id
FROM memory_fts JOIN memory_records AS r ON r.rowid = memory_fts.rowid
WHERE memory_fts MATCH ?
  AND r.tenant = ?
  AND (r.user_id IS NULL OR r.user_id = ?)
  AND r.kind IN (SELECT value FROM json_each(?))
ORDER BY memory_fts.rowid
LIMIT ?
"""
# A document is listed by its first chunk (``{doc_id}#0``, memory.chunking),
# which every non-empty document has; the count walks the (tenant, doc_id) index.
_DOCUMENTS = (
    "SELECT {columns}, (SELECT count(*) FROM memory_records AS c"
    " WHERE c.tenant = r.tenant AND c.doc_id = r.doc_id AND c.kind = 'document')"
    " FROM memory_records AS r WHERE r.tenant = ? AND r.kind = 'document'"
    " AND r.id = r.doc_id || '#0' AND {filter} ORDER BY r.doc_id LIMIT ?"
)
# A hit never carries the uploaded document (memory.kb keeps it in its first
# chunk's metadata): up to DIWANIYA_KB_MAX_DOCUMENT_BYTES per hit.
_HIT_COLUMNS = _COLUMNS.replace("r.metadata", "json_remove(r.metadata, '$.document')")
_BY_ROWIDS = (
    f"SELECT r.rowid, {_HIT_COLUMNS} FROM memory_records AS r"
    " WHERE r.rowid IN (SELECT value FROM json_each(?))"
)


class SqliteMemoryStore:
    """:class:`memory.MemoryStore` over an SQLite file (FTS5, via aiosqlite).

    Tenants sharing a file share nothing but the file: rows are isolated by
    every query, and ranking statistics are kept per tenant
    (memory.sqlite_stats), so each tenant ranks as if it were alone.

    >>> store = SqliteMemoryStore(Path("data/memory.sqlite3"), keys=search_keys)  # doctest: +SKIP
    """

    def __init__(
        self, path: Path | str, *, keys: KeyFunction, expand: Expander | None = None,
        typo: bool = True, fingerprint: str | None = None,
    ) -> None:
        self._path = str(path)
        # What the rows' keys are recorded as (memory.rekey); None: a key
        # function nlp did not name (tests' own), never recorded nor re-keyed.
        self._fingerprint = fingerprint or keys_fingerprint(keys)
        self._typo = typo  # second stage for unknown keys (memory.typo)
        # True once setup() has made (or found) the vocabulary tables.  They are
        # kept whether or not the stage is on, so turning it on needs no rebuild;
        # a file written without setup() is backfilled by the next setup().
        self._vocabulary = False
        self._keys = keys
        self._expand = expand  # query-side only (memory.expansion); the index never sees it
        self._word_keys = WordKeys(keys)
        self._db: aiosqlite.Connection | None = None
        # One connection, many coroutines: the lock keeps one coroutine's
        # transaction from swallowing another's statements.
        self._lock = asyncio.Lock()

    @asynccontextmanager
    async def _locked(self) -> AsyncIterator[aiosqlite.Connection]:
        """The connection, held exclusively; a locked or broken file becomes Unavailable."""
        async with self._lock:
            db = await self._conn()
            try:
                yield db
            except BaseException as exc:
                # Never leave a half-written batch open for the next caller.
                if db.in_transaction:
                    await db.rollback()
                if isinstance(exc, sqlite3.OperationalError):
                    raise Unavailable(f"the memory database is unavailable: {exc}") from exc
                raise

    async def _conn(self) -> aiosqlite.Connection:
        if self._db is None:
            if self._path != ":memory:":
                Path(self._path).parent.mkdir(parents=True, exist_ok=True)
            try:
                db = await aiosqlite.connect(self._path)
            except Exception as exc:  # sqlite3.Error and OSError alike
                raise Unavailable(f"cannot open memory database {self._path}: {exc}") from exc
            await db.execute("PRAGMA journal_mode=WAL")
            await db.execute(f"PRAGMA busy_timeout={_BUSY_MS}")
            self._db = db
        return self._db

    async def setup(self) -> None:
        async with self._locked() as db:
            await db.executescript(_SCHEMA)
            await db.commit()
            # IMMEDIATE takes the write lock first: a second process running
            # setup, or writing rows, waits, so the backfill is exact and runs once.
            # A backfill holds that lock for a while (memory_terms of 100,000
            # rows: ~12 s of CPU), so setup waits for it up to _MIGRATION_WAIT_MS
            # rather than the 5 s a normal write waits, and then finds it done.
            await db.execute(f"PRAGMA busy_timeout={_MIGRATION_WAIT_MS}")
            try:
                await self._migrate(db)
            finally:
                await db.execute(f"PRAGMA busy_timeout={_BUSY_MS}")
            self._vocabulary = True

    async def _migrate(self, db: aiosqlite.Connection) -> None:
        """Create the derived tables and triggers, backfilling each once (its mark)."""
        await db.execute("BEGIN IMMEDIATE")
        for statement in _statements(_POOL_SCHEMA):
            await db.execute(statement)
        cur = await db.execute("INSERT OR IGNORE INTO memory_meta VALUES (?)", (_POOL_MARK,))
        if cur.rowcount == 1:
            for statement in _statements(_POOL_BACKFILL):
                await db.execute(statement)
        for statement in _statements(TERMS_SCHEMA):
            await db.execute(statement)
        cur = await db.execute("INSERT OR IGNORE INTO memory_meta VALUES (?)", (TERMS_MARK,))
        if cur.rowcount == 1:
            for statement in _statements(TERMS_BACKFILL):
                await db.execute(statement)
        for statement in _statements(TYPO_SCHEMA):
            await db.execute(statement)
        cur = await db.execute("INSERT OR IGNORE INTO memory_meta VALUES (?)", (TYPO_MARK,))
        if cur.rowcount == 1:
            async with db.execute("SELECT tenant, keys FROM memory_records") as rows:
                async for tenant, keys in rows:
                    await db.executemany(ADD_WORDS, words(tenant, keys))
        if self._fingerprint is not None:
            warn_if_stale(await record_if_new(db, self._fingerprint), self._fingerprint,
                          where=self._path)
        await db.commit()

    async def keys_fingerprint(self) -> str | None:
        async with self._locked() as db:
            return await recorded_fingerprint(db)

    async def rekey(self, *, force: bool = False, progress: Progress | None = None,
                    batch: int = BATCH_ROWS) -> RekeyReport:
        """Re-key every row (memory.rekey) when its recorded fingerprint differs."""
        if self._fingerprint is None:
            raise ConfigurationError("this store's key function has no fingerprint "
                                     "(nlp.keys_fingerprint): it cannot record or re-key")
        return await rekey_sqlite(self._locked, self._keys, self._fingerprint, force=force,
                                  progress=progress, batch=batch)

    async def put(self, records: Sequence[NewRecord]) -> list[MemoryRecord]:
        ready = [r.validated() for r in records]
        if not ready:
            return []
        now = datetime.now(UTC).isoformat()
        rows = [
            (
                r.tenant, r.id, r.user_id, Kind(r.kind).value, r.text, r.title,
                json.dumps(dict(r.metadata), ensure_ascii=False), r.thread_id, r.turn_id,
                r.doc_id, now, now, " ".join(record_terms(r.title, r.text, self._keys)),
            )
            for r in ready
        ]
        vocabulary: set[tuple[str, str]] = set()
        for row in rows:
            vocabulary.update(words(row[0], row[12]))
        async with self._locked() as db:
            await db.executemany(_UPSERT, rows)
            if self._vocabulary:
                await db.executemany(ADD_WORDS, sorted(vocabulary))
            await db.commit()
            stored = [await self._get(db, r.tenant, r.id or "") for r in ready]
        return [s for s in stored if s is not None]

    async def replace_documents(
        self, tenant: str, documents: Mapping[str, Sequence[NewRecord]]
    ) -> int:
        ready = validated_chunks(tenant, documents)
        now = datetime.now(UTC).isoformat()
        rows = [
            (
                r.tenant, r.id, None, Kind.DOCUMENT.value, r.text, r.title,
                json.dumps(dict(r.metadata), ensure_ascii=False), None, None, r.doc_id, now,
                now, " ".join(record_terms(r.title, r.text, self._keys)),
            )
            for r in ready
        ]
        # sqlite3 opens one transaction before the DELETE and keeps it until
        # commit(); _locked rolls it back on any error, so nothing half-lands.
        async with self._locked() as db:
            await db.execute(
                "DELETE FROM memory_records WHERE tenant = ? AND kind = 'document'"
                " AND doc_id IN (SELECT value FROM json_each(?))",
                (tenant, json.dumps(list(documents), ensure_ascii=False)))
            await db.executemany(_UPSERT, rows)
            if self._vocabulary:  # the typo stage's vocabulary, as put() adds it
                await db.executemany(ADD_WORDS, sorted(
                    {pair for row in rows for pair in words(row[0], row[12])}))
            await db.commit()
        return len(rows)

    async def list_documents(
        self, tenant: str, *, after: str = "", limit: int = 20
    ) -> list[DocumentInfo]:
        # A listing leaves each document's text out (it may be a megabyte).
        sql = _DOCUMENTS.format(columns=_COLUMNS.replace(
            "r.metadata", "json_remove(r.metadata, '$.document.text')"), filter="r.doc_id > ?")
        async with self._locked() as db:
            async with db.execute(sql, (tenant, after, limit)) as cur:
                return [document_from_row(row) for row in await cur.fetchall()]

    async def get_document(self, tenant: str, doc_id: str) -> DocumentInfo | None:
        sql = _DOCUMENTS.format(columns=_COLUMNS, filter="r.doc_id = ?")
        async with self._locked() as db:
            async with db.execute(sql, (tenant, doc_id, 1)) as cur:
                row = await cur.fetchone()
        return document_from_row(row) if row else None

    async def get(self, tenant: str, record_id: str) -> MemoryRecord | None:
        async with self._locked() as db:
            return await self._get(db, tenant, record_id)

    async def _get(
        self, db: aiosqlite.Connection, tenant: str, record_id: str
    ) -> MemoryRecord | None:
        sql = f"SELECT {_COLUMNS} FROM memory_records AS r WHERE r.tenant = ? AND r.id = ?"
        async with db.execute(sql, (tenant, record_id)) as cur:
            row = await cur.fetchone()
        return record_from_row(row) if row else None

    async def search(
        self,
        tenant: str,
        query: str,
        *,
        user_id: str | None = None,
        kinds: Collection[Kind] | None = None,
        k: int = 5,
    ) -> list[SearchHit]:
        weighted = weighted_terms(query, self._keys, self._expand)
        k = min(k, MAX_K)
        if not weighted.all or k <= 0:
            return []
        # Arabizi stage (memory.arabizi_stage), with the bridge: readings of the
        # query's Latin words, kept only where this tenant's vocabulary has them.
        readings = arabizi_readings(query[:MAX_QUERY_CHARS], self._keys) \
            if self._expand is not None else []
        async with self._locked() as db:
            fixes: list[str] = []
            if self._typo and not readings:
                # Second stage (memory.typo) only for own keys the tenant lacks.  An
                # Arabizi query's own keys are transliteration guesses: its readings
                # (below) replace them, a trigram neighbour of a guess would not.
                async with db.execute(KNOWN_WORDS, (tenant, _json(weighted.own))) as cur:
                    known = {str(r[0]) for r in await cur.fetchall()}
                unknown = unknown_terms(weighted.own, known)
                if unknown:
                    fixes = await corrections(db, tenant, unknown, set(weighted.all))
            if readings:
                fixes += await self._arabizi_keys(db, tenant, readings,
                                                  set(weighted.all) | set(fixes))
            rows = await self._ranked(db, tenant, weighted, fixes, user_id, kinds, k)
        wanted = set(weighted.all) | set(fixes)
        return [
            SearchHit(
                record=(rec := record_from_row(row)),
                score=score,
                snippet=highlight_snippet(rec.text, wanted, self._word_keys),
            )
            for score, row in rows
        ]

    async def _arabizi_keys(self, db: aiosqlite.Connection, tenant: str,
                            readings: list[tuple[str, list[tuple[str, str]]]],
                            have: set[str]) -> list[str]:
        """The readings' keys this tenant's rows hold (memory.arabizi_stage), new to ``have``."""
        async with db.execute(KNOWN_WORDS, (tenant, _json(all_keys(readings)))) as cur:
            listed = [str(r[0]) for r in await cur.fetchall()]
        # The tenant's document frequencies: a key no row holds any more is never chosen.
        held = await document_frequencies(db, tenant, listed)
        return [t for t in choose_readings(readings, held) if t not in have]

    async def _ranked(
        self, db: aiosqlite.Connection, tenant: str, weighted: WeightedTerms, fixes: list[str],
        user_id: str | None, kinds: Collection[Kind] | None, k: int,
    ) -> list[tuple[float, Sequence[Any]]]:
        """The k best (score, row) pairs: candidates (memory.candidates) scored with pools."""
        df = await document_frequencies(db, tenant, list(dict.fromkeys(weighted.all + fixes)))
        chosen = plan(df)
        if chosen is None:
            return []
        kind_list = json.dumps([Kind(x).value for x in (kinds or list(Kind))])

        async def matching(terms: list[str], conjunctive: bool, limit: int) -> list[Any]:
            # Each term is a quoted FTS5 string: inside quotes only '"' is
            # special and it is doubled; word-run terms never contain one anyway.
            match = (" AND " if conjunctive else " OR ").join(
                '"' + t.replace('"', '""') + '"' for t in terms)
            async with db.execute(_CANDIDATES, (match, tenant, user_id, kind_list, limit)) as cur:
                return list(await cur.fetchall())

        candidates = await matching(chosen.main, chosen.conjunctive, chosen.take)
        if chosen.alone is not None and len(candidates) < k:
            # Every AND match holds the rarest term too: skip those, keep the next.
            seen = {row[0] for row in candidates}
            more = await matching([chosen.alone], False, SCAN_CANDIDATES + len(candidates))
            candidates += [row for row in more if row[0] not in seen][:SCAN_CANDIDATES]
        if not candidates:
            return []
        stats = await pool_stats(db, tenant)
        weights = {t: idf(stats.n_docs, df[t]) for t in weighted.own if t in df}
        for t in weighted.bridged:
            if t in df:
                weights.setdefault(t, BRIDGE_WEIGHT * idf(stats.n_docs, df[t]))
        for t in fixes:
            if t in df:
                weights.setdefault(t, TYPO_WEIGHT * idf(stats.n_docs, df[t]))
        # Ties go to the smaller record id, as in the PostgreSQL store.
        scored = sorted(
            ((score_terms(row[1].split(), weights, stats), row[2], row[0]) for row in candidates),
            key=lambda item: (-item[0], item[1]),
        )[:k]
        async with db.execute(_BY_ROWIDS, (json.dumps([r for _, _, r in scored]),)) as cur:
            by_rowid = {row[0]: row[1:] for row in await cur.fetchall()}
        return [(score, by_rowid[r]) for score, _, r in scored if r in by_rowid]

    async def user_records(
        self, tenant: str, user_id: str, *, kinds: Collection[Kind] | None = None, limit: int = 50
    ) -> list[MemoryRecord]:
        sql = (
            f"SELECT {_COLUMNS} FROM memory_records AS r WHERE r.tenant = ? AND r.user_id = ?"
            " AND r.kind IN (SELECT value FROM json_each(?)) ORDER BY r.updated_at DESC, r.id"
            " LIMIT ?"
        )
        kind_list = json.dumps([Kind(x).value for x in (kinds or list(Kind))])
        async with self._locked() as db:
            async with db.execute(sql, (tenant, user_id, kind_list, limit)) as cur:
                return [record_from_row(row) for row in await cur.fetchall()]

    async def _delete(self, where: str, args: tuple[Any, ...]) -> int:
        async with self._locked() as db:
            cur = await db.execute(f"DELETE FROM memory_records WHERE {where}", args)
            await db.commit()
            return cur.rowcount

    async def erase_user(self, tenant: str, user_id: str) -> int:
        return await self._delete("tenant = ? AND user_id = ?", (tenant, user_id))

    async def erase_thread(self, tenant: str, thread_id: str) -> int:
        return await self._delete("tenant = ? AND thread_id = ?", (tenant, thread_id))

    async def delete_document(
        self, tenant: str, doc_id: str, *, keep: Collection[str] = ()
    ) -> int:
        return await self._delete(
            "tenant = ? AND doc_id = ? AND id NOT IN (SELECT value FROM json_each(?))",
            (tenant, doc_id, json.dumps(list(keep))),
        )

    async def close(self) -> None:
        async with self._lock:
            if self._db is not None:
                await self._db.close()
                self._db = None


def _statements(script: str) -> list[str]:
    """Split a script of ``;``-terminated statements, keeping trigger bodies whole."""
    out: list[str] = []
    current: list[str] = []
    for line in script.strip().splitlines():
        current.append(line)
        joined = "\n".join(current).strip()
        if joined.endswith(";") and sqlite3.complete_statement(joined):
            out.append(joined)
            current = []
    return out


def _json(values: Sequence[str]) -> str:
    return json.dumps(list(values), ensure_ascii=False)
