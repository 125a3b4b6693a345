"""The production store: PostgreSQL through an asyncpg pool, ranked by BM25.

Layout and invariants:

* ``memory_records`` keeps the original ``text`` for display and ``tsv``,
  ``to_tsvector('simple', keys)`` of the key function's output computed on
  insert (the keys themselves are not stored: the tsvector holds them, and
  narrower rows mean fewer heap pages per candidate).  ``simple`` only lower-cases: the keys are
  already folded and stemmed, and a second stemmer would disagree with the
  query side.  A GIN index on ``tsv`` finds candidates.
* ``memory_terms`` (document frequency per tenant and lexeme) and
  ``memory_stats`` (rows and total length per tenant) are the corpus
  statistics BM25 needs.  They are changed in the same transaction as the
  rows, under a per-tenant advisory lock, so they never drift.
* Query text never becomes SQL: terms travel as parameters, are reduced to
  lexemes by ``to_tsvector`` on the server, and the tsquery is an OR of
  quoted lexemes, cast from a parameter (no parser, so no syntax errors).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

import asyncpg

from diwaniya.errors import ResourceExhausted, StoreUnavailable, Unavailable
from memory.expansion import BRIDGE_WEIGHT, Expander, weighted_terms
from memory.ranking import K1, SHORT_TERMS, B
from memory.records import (
    DocumentInfo,
    Kind,
    MemoryRecord,
    NewRecord,
    SearchHit,
    validated_chunks,
)
from memory.snippet import WordKeys, highlight_snippet
from memory.terms import MAX_K, KeyFunction
from memory.text_keys import record_terms

__all__ = ["PostgresMemoryStore"]

# Most candidate rows scored per search; see _SEARCH for how they are chosen.
CANDIDATE_BUDGET = 250
# A query whose rarest known word is very common (in 15% of rows, say) would
# make the GIN index read a posting list of 150,000 entries at 1M rows (57 ms
# measured) to keep 500 of them.  Reading rows in heap order finds matches
# after about rows/df rows each, so past the break-even the store scans
# instead and keeps SCAN_CANDIDATES.  Measured at 1M rows: a GIN posting entry
# costs ~0.36 us, a heap row tested with @@ ~1.4 us, hence the ratio 4: scan
# when df * 0.36 > SCAN_CANDIDATES * (n / df) * 1.4, i.e. df² > 4·C·n.  Both
# sides then cost at most ~7 ms at 1M rows.  SCAN_MAX_ROWS bounds a scan
# whose filters (kind, user) reject most rows; too few candidates then fall
# back to the index.  SCAN_CANDIDATES is also the candidate count whenever
# the rarest word is over the budget (AND of two common words, or its
# fallback): those candidates are the first matches in heap order, not the
# best, so scoring 250 of them instead of 100 bought no quality (ARCD with
# 20k distractors: same recall) and cost ~2 ms at p50.
SCAN_CANDIDATES = 100
SCAN_COST_RATIO = 4.0
SCAN_MAX_ROWS = 50_000

# Serialises schema creation across replicas starting at once.
_SCHEMA_LOCK = 0x6469_7761_6D65_6D  # "diwamem"

_SCHEMA = """
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
_HAS_KEYS_COLUMN = """
SELECT EXISTS (SELECT 1 FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name = 'memory_records'
                 AND column_name = 'keys')
"""
_DROP_KEYS_COLUMN = """
ALTER TABLE memory_records ALTER COLUMN tsv DROP EXPRESSION IF EXISTS;
ALTER TABLE memory_records DROP COLUMN IF EXISTS keys;
"""

# Databases created before length pools (memory.ranking): memory_stats has
# no per-pool counts.  Added and backfilled from the rows in the same
# transaction, under the schema lock, so replicas starting together add them
# once (ADD COLUMN IF NOT EXISTS makes a repeat a no-op).  Known limit during a
# rolling upgrade: an old replica's writes update n_docs/total_len but not the
# short counts, so the pools drift by those writes until the stats are rebuilt.
_HAS_POOL_COLUMNS = """
SELECT EXISTS (SELECT 1 FROM information_schema.columns
               WHERE table_schema = current_schema() AND table_name = 'memory_stats'
                 AND column_name = 'short_docs')
"""
_ADD_POOL_COLUMNS = """
ALTER TABLE memory_stats ADD COLUMN IF NOT EXISTS short_docs bigint NOT NULL DEFAULT 0,
                         ADD COLUMN IF NOT EXISTS short_len bigint NOT NULL DEFAULT 0;
UPDATE memory_stats AS s
SET short_docs = p.short_docs, short_len = p.short_len
FROM (SELECT r.tenant, count(*) AS short_docs, sum(r.doc_len) AS short_len
      FROM memory_records AS r WHERE r.doc_len < SHORT GROUP BY r.tenant) AS p
WHERE p.tenant = s.tenant;
""".replace("SHORT", str(int(SHORT_TERMS)))

_COLUMNS = (
    "r.id, r.tenant, r.user_id, r.kind, r.text, r.title, r.metadata::text, r.thread_id,"
    " r.turn_id, r.doc_id, r.created_at, r.updated_at"
)

_UPSERT = f"""
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
RETURNING {_COLUMNS}
"""

# A document is listed by its first chunk (``{doc_id}#0``, memory.chunking),
# which every non-empty document has; the count walks the (tenant, doc_id) index.
_DOCUMENTS = (
    "SELECT {columns}, (SELECT count(*) FROM memory_records AS c"
    " WHERE c.tenant = r.tenant AND c.doc_id = r.doc_id AND c.kind = 'document')"
    " FROM memory_records AS r WHERE r.tenant = $1 AND r.kind = 'document'"
    " AND r.id = r.doc_id || '#0' AND {filter} ORDER BY r.doc_id LIMIT $3"
)
_DOC_CHUNKS = "r.tenant = $2 AND r.kind = 'document' AND r.doc_id = ANY($3::text[])"

# Add (sign=+1) or remove (sign=-1) the statistics of the rows matching
# {where}.  GROUP BY makes each (tenant, lexeme) appear once, as ON CONFLICT
# requires; ORDER BY takes row locks in one order so concurrent writers to
# different tenants cannot deadlock.
_TERM_DELTA = """
INSERT INTO memory_terms AS m (tenant, lexeme, df)
SELECT r.tenant, u.lexeme, $1::int * count(*)
FROM memory_records AS r, unnest(r.tsv) AS u
WHERE {where}
GROUP BY 1, 2 ORDER BY 1, 2
ON CONFLICT (tenant, lexeme) DO UPDATE SET df = m.df + excluded.df
RETURNING m.tenant, m.lexeme, m.df
"""
_STATS_DELTA = """
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

# One round trip per search: statistics, candidate choice and BM25 in a
# single statement.  On a busy 2-core machine every extra round trip is one
# more wake-up of the backend, and those wake-ups, not the plan, made p99.
#
# q: the query's lexemes that the tenant's rows contain, rarest first, with the
#    running sum of their document frequencies.
# pick: the candidate tsquery.  The rarest lexemes OR-ed while their summed
#    document frequencies stay within the budget ($7); commoner terms still
#    score the candidates but do not widen the set.  A record holding none of
#    the rare terms scores at most the commoner terms' IDF sum, so this is
#    max-score pruning, simplified.  When even the rarest is over budget (a
#    query of common words only) it is AND-ed with the rarest lexeme that is
#    not a form of the same word (a stem inside its surface form, as يرحم in
#    يرحمك, would narrow nothing); ``alone`` is then the rarest by itself,
#    searched only when the AND leaves fewer than k candidates; both keep
#    only SCAN_CANDIDATES rows ($9, ``take``).  scan: see SCAN_CANDIDATES.
# Lexemes are quoted for the tsquery cast exactly as the tsquery input
# function expects ('' and \ escaped), so no lexeme can be an operator.
# Either way the rows scored per query are bounded by the budget, which keeps
# p99 flat as the table grows (bench/memory_scale.py).
#
# Term frequencies come from the candidate's own tsvector: setweight() marks
# the query lexemes and ts_filter() keeps only those, both in C, so only the
# handful of matching lexemes are unnested instead of the whole vector.
# Every numeric parameter is cast explicitly: left to inference, a float next
# to the integer ``doc_len`` became an integer and BM25 lost its length
# normalisation.
# Visibility: tenant-wide rows (user_id NULL) plus the asking user's own; a
# search without a user sees tenant-wide rows only ('' is never a user id:
# NewRecord.validated rejects it).  Written with coalesce rather than
# "user_id IS NULL OR user_id = $3" on purpose: that form matches the
# (tenant, user_id) btree, and before ANALYZE has run on a freshly loaded
# table the planner preferred it and checked tsv row by row (20k rows:
# 135 ms) instead of using the GIN index.
_SEARCH = r"""
WITH u AS MATERIALIZED (
    -- Own lexemes weigh 1, bridge-only lexemes ($12, memory.expansion) weigh $13.
    SELECT x.lexeme, max(x.wt) AS wt FROM (
        SELECT o.lexeme, 1.0::float8 AS wt
        FROM unnest(to_tsvector('simple'::regconfig, $2::text)) AS o
        UNION ALL
        SELECT b.lexeme, $13::float8
        FROM unnest(to_tsvector('simple'::regconfig, $12::text)) AS b
    ) AS x GROUP BY x.lexeme
),
q AS MATERIALIZED (
    SELECT u.lexeme, u.wt, t.df,
           sum(t.df) OVER (ORDER BY t.df, u.lexeme) AS spent,
           row_number() OVER (ORDER BY t.df, u.lexeme) AS rank,
           '''' || replace(replace(u.lexeme, '\', '\\'), '''', '''''') || '''' AS quoted
    FROM u
    JOIN memory_terms AS t ON t.tenant = $1 AND t.lexeme = u.lexeme
),
st AS MATERIALIZED (
    -- Length pools (memory.ranking): short items and passages each have
    -- their own average length; N and IDF stay the tenant's.
    SELECT s.n_docs::float8 AS n,
           greatest(s.short_len::float8 / greatest(s.short_docs, 1), 1.0) AS avg_short,
           greatest((s.total_len - s.short_len)::float8 / greatest(s.n_docs - s.short_docs, 1),
                    1.0) AS avg_long
    FROM memory_stats AS s WHERE s.tenant = $1
),
w AS MATERIALIZED (
    SELECT q.lexeme, q.wt * ln(1 + (st.n - q.df + 0.5) / (q.df + 0.5)) AS idf FROM q, st
),
pick AS MATERIALIZED (
    SELECT CASE WHEN r1.df <= $7::bigint
                THEN (SELECT string_agg(q.quoted, ' | ' ORDER BY q.rank) FROM q
                      WHERE q.spent <= $7::bigint)
                ELSE r1.quoted || coalesce(' & ' || partner.quoted, '')
           END::tsquery AS main,
           CASE WHEN r1.df > $7::bigint THEN r1.quoted::tsquery END AS alone,
           CASE WHEN r1.df > $7::bigint THEN $9::bigint ELSE $7::bigint END AS take,
           r1.df::float8 * r1.df > $10::float8 * $9::int * st.n AS scan,
           least(ceil($10::float8 * $9::int * st.n / r1.df), $11::float8)::bigint AS scan_rows
    FROM q AS r1
    CROSS JOIN st
    LEFT JOIN LATERAL (
        SELECT q.quoted FROM q
        WHERE q.rank > 1 AND strpos(r1.lexeme, q.lexeme) = 0 AND strpos(q.lexeme, r1.lexeme) = 0
        ORDER BY q.rank LIMIT 1
    ) AS partner ON true
    WHERE r1.rank = 1
),
cand AS MATERIALIZED (
  (SELECT r.id, r.doc_len, r.tsv FROM memory_records AS r
    WHERE NOT (SELECT scan FROM pick)
      AND r.tsv @@ (SELECT main FROM pick)
      AND r.tenant = $1
      AND coalesce(r.user_id, '') IN ('', coalesce($3::text, ''))
      AND r.kind = ANY($4::text[])
    LIMIT (SELECT take FROM pick))
  UNION ALL
    -- ts_match_vq is @@ spelled as a function, which no index matches: the
    -- scan reads the tenant's rows in heap order, at most scan_rows of them.
  (SELECT r.id, r.doc_len, r.tsv
    FROM (SELECT r.id, r.doc_len, r.tsv, r.user_id, r.kind FROM memory_records AS r
          WHERE (SELECT scan FROM pick) AND r.tenant = $1
          LIMIT (SELECT scan_rows FROM pick)) AS r
    WHERE ts_match_vq(r.tsv, (SELECT alone FROM pick))
      AND coalesce(r.user_id, '') IN ('', coalesce($3::text, ''))
      AND r.kind = ANY($4::text[])
    LIMIT $9)
),
extra AS (
    SELECT r.id, r.doc_len, r.tsv FROM memory_records AS r
    WHERE (SELECT count(*) FROM cand) < $8::int
      AND r.tsv @@ (SELECT alone FROM pick)
      AND r.id NOT IN (SELECT cand.id FROM cand)
      AND r.tenant = $1
      AND coalesce(r.user_id, '') IN ('', coalesce($3::text, ''))
      AND r.kind = ANY($4::text[])
    LIMIT $9
),
top AS (
    -- One join of every candidate's matching lexemes against w, grouped per
    -- candidate: a LATERAL sum per candidate built a hash table per row.
    SELECT c.id,
           sum(w.idf * (x.tf * ($5::float8 + 1))
               / (x.tf + $5::float8 * (1 - $6::float8
                                       + $6::float8 * c.doc_len
                                         / CASE WHEN c.doc_len < SHORT
                                                THEN (SELECT avg_short FROM st)
                                                ELSE (SELECT avg_long FROM st) END)))
           AS score
    FROM (SELECT * FROM cand UNION ALL SELECT * FROM extra) AS c
    CROSS JOIN LATERAL (
        SELECT u.lexeme, coalesce(cardinality(u.positions), 1)::float8 AS tf
        FROM unnest(ts_filter(setweight(c.tsv, 'A', (SELECT array_agg(w.lexeme) FROM w)),
                              '{a}')) AS u
    ) AS x
    JOIN w ON w.lexeme = x.lexeme
    GROUP BY c.id
    ORDER BY score DESC, c.id
    LIMIT $8
)
-- Only the k winners are read in full (text, metadata): candidates carry
-- just what scoring needs.
SELECT COLUMNS, top.score, (SELECT array_agg(w.lexeme) FROM w) AS lexemes
FROM top JOIN memory_records AS r ON r.tenant = $1 AND r.id = top.id
ORDER BY top.score DESC, top.id
""".replace("COLUMNS", _COLUMNS.replace(
    # A hit never carries the uploaded document (memory.kb keeps it in its
    # first chunk's metadata): up to DIWANIYA_KB_MAX_DOCUMENT_BYTES per hit.
    "r.metadata::text", "(r.metadata - 'document')::text")).replace("SHORT", str(int(SHORT_TERMS)))


class _NoResetConnection(asyncpg.Connection):
    """A pooled connection released without asyncpg's reset query.

    asyncpg sends ``pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL``
    on every release — a round trip per recall and per remember. This store
    takes no session advisory locks (only ``pg_advisory_xact_lock``), opens no
    cursors outside transactions, never LISTENs and never SETs session state,
    so there is nothing to reset; asyncpg still rolls back an open transaction.
    """

    def get_reset_query(self) -> str:
        return ""


class PostgresMemoryStore:
    """:class:`memory.MemoryStore` over PostgreSQL (asyncpg pool, GIN + BM25).

    Give it a pool you own (create it with ``server_settings={"jit": "off"}``
    for flat latency), or use :meth:`connect` to let the store own one.
    """

    def __init__(
        self,
        pool: asyncpg.Pool,
        *,
        keys: KeyFunction,
        owns_pool: bool = False,
        candidate_budget: int = CANDIDATE_BUDGET,
        expand: Expander | None = None,
        acquire_timeout_s: float | None = None,
    ) -> None:
        self._pool = pool
        self._expand = expand  # query-side only (memory.expansion); the index never sees it
        self._acquire_timeout = acquire_timeout_s
        self._budget = candidate_budget
        self._keys = keys
        self._word_keys = WordKeys(keys)
        self._owns_pool = owns_pool

    @classmethod
    async def connect(
        cls,
        dsn: str,
        *,
        keys: KeyFunction,
        min_size: int = 1,
        max_size: int = 10,
        candidate_budget: int = CANDIDATE_BUDGET,
        expand: Expander | None = None,
        connect_timeout_s: float = 60.0,
        command_timeout_s: float | None = None,
        acquire_timeout_s: float | None = None,
        application_name: str | None = None,
    ) -> PostgresMemoryStore:
        """Open a pool for ``dsn`` that :meth:`close` will close.

        The timeouts bound a database outage: connecting (asyncpg reconnects
        on each acquire), one statement, and waiting for a pooled connection.
        """
        try:
            # JIT compiles a plan once its estimated cost passes jit_above_cost;
            # at 1M rows a GIN bitmap plan does, and 10-50 ms of compiling a
            # query that runs in 5 ms is exactly the p99 we must avoid.
            server_settings = {"jit": "off"}
            if application_name:
                server_settings["application_name"] = application_name
            pool = await asyncpg.create_pool(
                dsn, min_size=min(min_size, max_size), max_size=max_size,
                server_settings=server_settings,
                connection_class=_NoResetConnection,
                timeout=connect_timeout_s, command_timeout=command_timeout_s,
            )
        except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
            raise Unavailable(f"cannot connect to the memory database: {exc}") from exc
        return cls(pool, keys=keys, owns_pool=True, candidate_budget=candidate_budget,
                   expand=expand, acquire_timeout_s=acquire_timeout_s)

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection; a lost or unreachable database becomes Unavailable."""
        try:
            try:
                conn = await self._pool.acquire(timeout=self._acquire_timeout)
            except TimeoutError:
                if self._pool.get_size() >= self._pool.get_max_size() and \
                        not self._pool.get_idle_size():
                    raise ResourceExhausted(
                        f"all {self._pool.get_max_size()} memory database connections are "
                        "busy; retry in a moment", retry_after_s=1.0) from None
                raise
            try:
                yield conn
            finally:
                await self._pool.release(conn)
        except (OSError, TimeoutError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError,
                asyncpg.CannotConnectNowError) as exc:
            raise StoreUnavailable(
                f"the memory database is unavailable ({exc or type(exc).__name__}); "
                "retry in a few seconds") from exc

    async def setup(self) -> None:
        async with self._conn() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _SCHEMA_LOCK)
            await conn.execute(_SCHEMA)
            if await conn.fetchval(_HAS_KEYS_COLUMN):
                await conn.execute(_DROP_KEYS_COLUMN)
            if not await conn.fetchval(_HAS_POOL_COLUMNS):
                await conn.execute(_ADD_POOL_COLUMNS)

    async def put(self, records: Sequence[NewRecord]) -> list[MemoryRecord]:
        # The last write of an id wins within a batch, as it would across batches
        # (ON CONFLICT cannot touch one row twice in a statement).
        ready = {(r.tenant, r.id): r for r in (x.validated() for x in records)}
        if not ready:
            return []
        cols = self._columns(ready.values())
        tenants, ids = cols[0], cols[1]
        where = "(r.tenant, r.id) IN (SELECT * FROM unnest($2::text[], $3::text[]))"
        async with self._conn() as conn, conn.transaction():
            await _lock_tenants(conn, tenants)
            await _apply_delta(conn, -1, where, tenants, ids)
            rows = await conn.fetch(_UPSERT, *cols)
            await _apply_delta(conn, +1, where, tenants, ids)
        by_key = {(row[1], row[0]): _record(row) for row in rows}
        return [by_key[key] for key in ready]

    def _columns(self, records: Collection[NewRecord]) -> list[list[Any]]:
        """The upsert's twelve parallel arrays (unnest), one entry per record."""
        cols: list[list[Any]] = [[] for _ in range(12)]
        for r in records:
            terms = record_terms(r.title, r.text, self._keys)
            values = (
                r.tenant, r.id, r.user_id, Kind(r.kind).value, r.text, r.title,
                json.dumps(dict(r.metadata), ensure_ascii=False), r.thread_id, r.turn_id,
                r.doc_id, " ".join(terms), len(terms),
            )
            for col, value in zip(cols, values, strict=True):
                col.append(value)
        return cols

    async def replace_documents(
        self, tenant: str, documents: Mapping[str, Sequence[NewRecord]]
    ) -> int:
        ready = {r.id: r for r in validated_chunks(tenant, documents)}
        cols = self._columns(ready.values())
        doc_ids = list(documents)
        # One transaction under the tenant's lock: the old chunks' statistics
        # leave with them and the new ones' arrive, so BM25 never drifts.
        async with self._conn() as conn, conn.transaction():
            await _lock_tenants(conn, [tenant])
            await _apply_delta(conn, -1, _DOC_CHUNKS, tenant, doc_ids)
            await conn.execute(
                f"DELETE FROM memory_records AS r WHERE $1::int < 0 AND {_DOC_CHUNKS}",
                -1, tenant, doc_ids)
            if ready:
                await conn.execute(_UPSERT.split("RETURNING")[0], *cols)
            await _apply_delta(conn, +1, _DOC_CHUNKS, tenant, doc_ids)
        return len(ready)

    async def list_documents(
        self, tenant: str, *, after: str = "", limit: int = 20
    ) -> list[DocumentInfo]:
        async with self._conn() as conn:
            # A listing leaves each document's text out (it may be a megabyte).
            rows = await conn.fetch(_DOCUMENTS.format(columns=_COLUMNS.replace(
                "r.metadata::text", "(r.metadata #- '{document,text}')::text"),
                filter="r.doc_id > $2"), tenant, after, limit)
        return [_document(row) for row in rows]

    async def get_document(self, tenant: str, doc_id: str) -> DocumentInfo | None:
        async with self._conn() as conn:
            row = await conn.fetchrow(_DOCUMENTS.format(columns=_COLUMNS, filter="r.doc_id = $2"),
                                      tenant, doc_id, 1)
        return _document(row) if row else None

    async def get(self, tenant: str, record_id: str) -> MemoryRecord | None:
        sql = f"SELECT {_COLUMNS} FROM memory_records AS r WHERE r.tenant = $1 AND r.id = $2"
        async with self._conn() as conn:
            row = await conn.fetchrow(sql, tenant, record_id)
        return _record(row) if row else None

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
        terms = weighted.all
        k = min(k, MAX_K)
        if not terms or k <= 0:
            return []
        kind_list = [Kind(x).value for x in (kinds or list(Kind))]
        async with self._conn() as conn:
            rows = await conn.fetch(
                _SEARCH, tenant, " ".join(weighted.own), user_id, kind_list, K1, B, self._budget,
                k, SCAN_CANDIDATES, SCAN_COST_RATIO, SCAN_MAX_ROWS, " ".join(weighted.bridged),
                BRIDGE_WEIGHT,
            )
        if not rows:
            return []
        wanted = set(terms) | set(rows[0][13])
        return [
            SearchHit(
                record=(rec := _record(row)),
                score=float(row[12]),
                snippet=highlight_snippet(rec.text, wanted, self._word_keys),
            )
            for row in rows
        ]

    async def user_records(
        self, tenant: str, user_id: str, *, kinds: Collection[Kind] | None = None, limit: int = 50
    ) -> list[MemoryRecord]:
        sql = (
            f"SELECT {_COLUMNS} FROM memory_records AS r WHERE r.tenant = $1 AND r.user_id = $2"
            " AND r.kind = ANY($3::text[]) ORDER BY r.updated_at DESC, r.id LIMIT $4"
        )
        kind_list = [Kind(x).value for x in (kinds or list(Kind))]
        async with self._conn() as conn:
            rows = await conn.fetch(sql, tenant, user_id, kind_list, limit)
        return [_record(row) for row in rows]

    async def _delete(self, where: str, *args: Any) -> int:
        tenant = args[0]
        async with self._conn() as conn, conn.transaction():
            await _lock_tenants(conn, [tenant])
            await _apply_delta(conn, -1, where, *args)
            # ``where`` numbers its parameters from $2 ($1 is the delta's sign);
            # the DELETE mentions $1 too so the same argument list fits.
            status = await conn.execute(
                f"DELETE FROM memory_records AS r WHERE $1::int < 0 AND {where}", -1, *args
            )
        return int(status.split()[-1])

    async def erase_user(self, tenant: str, user_id: str) -> int:
        return await self._delete("r.tenant = $2 AND r.user_id = $3", tenant, user_id)

    async def erase_thread(self, tenant: str, thread_id: str) -> int:
        return await self._delete("r.tenant = $2 AND r.thread_id = $3", tenant, thread_id)

    async def delete_document(
        self, tenant: str, doc_id: str, *, keep: Collection[str] = ()
    ) -> int:
        return await self._delete(
            "r.tenant = $2 AND r.doc_id = $3 AND NOT (r.id = ANY($4::text[]))",
            tenant, doc_id, list(keep),
        )

    async def close(self) -> None:
        if self._owns_pool:
            await self._pool.close()


async def _lock_tenants(conn: asyncpg.Connection, tenants: Sequence[str]) -> None:
    # Sorted, so two writers touching the same tenants lock in the same order.
    for tenant in sorted(set(tenants)):
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('diwaniya.memory:' || $1, 0))", tenant
        )


async def _apply_delta(conn: asyncpg.Connection, sign: int, where: str, *args: Any) -> None:
    touched = await conn.fetch(_TERM_DELTA.format(where=where), sign, *args)
    await conn.execute(_STATS_DELTA.format(where=where), sign, *args)
    if sign < 0:
        gone = [(row[0], row[1]) for row in touched if row[2] <= 0]
        if gone:
            await conn.execute(
                "DELETE FROM memory_terms WHERE (tenant, lexeme) IN"
                " (SELECT * FROM unnest($1::text[], $2::text[]))",
                [g[0] for g in gone], [g[1] for g in gone],
            )


def _document(row: Sequence[Any]) -> DocumentInfo:
    return DocumentInfo(doc_id=row[9], first=_record(row[:12]), chunk_count=int(row[12]))


def _record(row: Sequence[Any]) -> MemoryRecord:
    return MemoryRecord(
        id=row[0],
        tenant=row[1],
        user_id=row[2],
        kind=Kind(row[3]),
        text=row[4],
        title=row[5],
        metadata=json.loads(row[6]),
        thread_id=row[7],
        turn_id=row[8],
        doc_id=row[9],
        created_at=row[10],
        updated_at=row[11],
    )
