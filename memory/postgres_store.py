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

from diwaniya.errors import ConfigurationError, StoreUnavailable, Unavailable
from memory.arabizi_stage import all_keys, arabizi_readings, choose_readings
from memory.expansion import BRIDGE_WEIGHT, Expander, weighted_terms
from memory.pg_deltas import apply_delta as _apply_delta
from memory.pg_deltas import lock_tenants as _lock_tenants
from memory.pg_rekey import rekey_postgres
from memory.pg_schema import (
    ADD_POOL_COLUMNS,
    ADD_TRGM_INDEX,
    COLUMNS,
    DROP_KEYS_COLUMN,
    GET_FINGERPRINT,
    HAS_KEYS_COLUMN,
    HAS_POOL_COLUMNS,
    HAS_TRGM_INDEX,
    RECORD_IF_EMPTY,
    SCHEMA,
    SCHEMA_LOCK,
    UPSERT,
)
from memory.pg_search_sql import RECALL, SEARCH, SIMILAR_TERMS
from memory.pool_health import ConnectEvidence, timeout_error
from memory.ranking import K1, B
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
from memory.terms import MAX_K, MAX_QUERY_CHARS, KeyFunction
from memory.text_keys import record_terms
from memory.typo import (
    CANDIDATES_PER_TERM,
    THRESHOLD,
    TYPO_WEIGHT,
    corrections_for,
    unknown_terms,
)
from nlp.keys import keys_fingerprint

__all__ = ["PostgresMemoryStore"]

# Most candidate rows scored per search; see SEARCH for how they are chosen.
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


# A document is listed by its first chunk (``{doc_id}#0``, memory.chunking),
# which every non-empty document has; the count walks the (tenant, doc_id) index.
_DOCUMENTS = (
    "SELECT {columns}, (SELECT count(*) FROM memory_records AS c"
    " WHERE c.tenant = r.tenant AND c.doc_id = r.doc_id AND c.kind = 'document')"
    " FROM memory_records AS r WHERE r.tenant = $1 AND r.kind = 'document'"
    " AND r.id = r.doc_id || '#0' AND {filter} ORDER BY r.doc_id LIMIT $3"
)
_DOC_CHUNKS = "r.tenant = $2 AND r.kind = 'document' AND r.doc_id = ANY($3::text[])"

class _NoResetConnection(asyncpg.Connection):
    """A pooled connection released without asyncpg's reset query.

    asyncpg sends ``pg_advisory_unlock_all(); CLOSE ALL; UNLISTEN *; RESET ALL``
    on every release — a round trip per recall and per remember. This store
    takes no session advisory locks but re-keying's, which it releases itself
    or closes the connection (memory.pg_rekey), opens no
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
        typo: bool = True,
        trgm_threshold_set: bool = False,
        fingerprint: str | None = None,
        evidence: ConnectEvidence | None = None,
    ) -> None:
        self._pool = pool
        # What acquire timeouts are judged on; a caller's own pool records none (busy).
        self._evidence = evidence or ConnectEvidence()
        # What the rows' keys are recorded as (memory.rekey); None: a key
        # function nlp did not name (tests' own), never recorded nor re-keyed.
        self._fingerprint = fingerprint or keys_fingerprint(keys)
        self._typo = typo  # second stage for unknown keys (memory.typo)
        # Every connection of ``pool`` was opened with pg_trgm's threshold at
        # THRESHOLD (connect() does so): the typo lookup is then one statement
        # instead of BEGIN, SET LOCAL, the lookup and COMMIT — four round trips.
        self._trgm_threshold_set = trgm_threshold_set
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
        typo: bool = True,
        fingerprint: str | None = None,
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
            if typo:
                # The typo stage's threshold for pg_trgm's %, as a start-up
                # parameter: the same on every connection of this pool for its
                # whole life, so the lookup needs no SET (and RESET ALL, were
                # it sent, restores exactly this value).  Accepted before
                # pg_trgm is loaded: a dotted name is a placeholder until then.
                server_settings["pg_trgm.similarity_threshold"] = str(float(THRESHOLD))
            if application_name:
                server_settings["application_name"] = application_name
            evidence = ConnectEvidence()  # every connection attempt's outcome, for _conn
            pool = await asyncpg.create_pool(
                dsn, min_size=min(min_size, max_size), max_size=max_size,
                server_settings=server_settings, connect=evidence.recording(asyncpg.connect),
                connection_class=_NoResetConnection,
                timeout=connect_timeout_s, command_timeout=command_timeout_s,
            )
        except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
            raise Unavailable(f"cannot connect to the memory database: {exc}") from exc
        return cls(pool, keys=keys, owns_pool=True, candidate_budget=candidate_budget,
                   expand=expand, acquire_timeout_s=acquire_timeout_s, typo=typo,
                   trgm_threshold_set=typo, fingerprint=fingerprint, evidence=evidence)

    @asynccontextmanager
    async def _conn(self) -> AsyncIterator[asyncpg.Connection]:
        """A pooled connection; a lost or unreachable database becomes Unavailable."""
        try:
            try:
                conn = await self._pool.acquire(timeout=self._acquire_timeout)
            except TimeoutError as exc:  # busy, also while the pool grows, unless a connect failed
                raise timeout_error(self._evidence.verdict(), what="the memory pool",
                                    max_size=self._pool.get_max_size(), retry_after_s=1.0,
                                    timeout_detail="no pooled connection in time") from exc
            try:
                yield conn
            finally:
                await self._pool.release(conn)
        # InsufficientResourcesError (class 53): the server refused a new pooled
        # connection — too many connections (53300, its max_connections or the
        # role's limit), out of memory — a state of the database, which passes,
        # not a bug of the request: retryable like an outage, never INTERNAL.
        except (OSError, TimeoutError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError,
                asyncpg.CannotConnectNowError, asyncpg.InsufficientResourcesError) as exc:
            raise StoreUnavailable(
                f"the memory database is unavailable ({exc or type(exc).__name__}); "
                "retry in a few seconds") from exc

    async def setup(self) -> None:
        async with self._conn() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", SCHEMA_LOCK)
            await conn.execute(SCHEMA)
            if await conn.fetchval(HAS_KEYS_COLUMN):
                await conn.execute(DROP_KEYS_COLUMN)
            if not await conn.fetchval(HAS_POOL_COLUMNS):
                await conn.execute(ADD_POOL_COLUMNS)
            if self._typo and not await conn.fetchval(HAS_TRGM_INDEX):
                try:
                    async with conn.transaction():  # a savepoint: the rest stays applied
                        await conn.execute(ADD_TRGM_INDEX)
                except asyncpg.PostgresError as exc:
                    raise ConfigurationError(
                        f"the typo stage needs PostgreSQL's pg_trgm extension ({exc}); install"
                        " the contrib package or turn the stage off (memory_typo_stage=false)"
                    ) from exc
            if self._fingerprint is not None:
                await conn.execute(RECORD_IF_EMPTY, self._fingerprint)
                warn_if_stale(await conn.fetchval(GET_FINGERPRINT), self._fingerprint,
                              where="PostgreSQL")

    async def keys_fingerprint(self) -> str | None:
        async with self._conn() as conn:
            value = await conn.fetchval(GET_FINGERPRINT)
        return None if value is None else str(value)

    async def rekey(self, *, force: bool = False, progress: Progress | None = None,
                    batch: int = BATCH_ROWS) -> RekeyReport:
        """Re-key every row (memory.rekey, memory.pg_rekey) when the fingerprint differs."""
        if self._fingerprint is None:
            raise ConfigurationError("this store's key function has no fingerprint "
                                     "(nlp.keys_fingerprint): it cannot record or re-key")
        return await rekey_postgres(self._conn, self._keys, self._fingerprint, force=force,
                                    progress=progress, batch=batch)

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
            rows = await conn.fetch(UPSERT, *cols)
            await _apply_delta(conn, +1, where, tenants, ids)
        by_key = {(row[1], row[0]): record_from_row(row) for row in rows}
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
                await conn.execute(UPSERT.split("RETURNING")[0], *cols)
            await _apply_delta(conn, +1, _DOC_CHUNKS, tenant, doc_ids)
        return len(ready)

    async def list_documents(
        self, tenant: str, *, after: str = "", limit: int = 20
    ) -> list[DocumentInfo]:
        async with self._conn() as conn:
            # A listing leaves each document's text out (it may be a megabyte).
            rows = await conn.fetch(_DOCUMENTS.format(columns=COLUMNS.replace(
                "r.metadata::text", "(r.metadata #- '{document,text}')::text"),
                filter="r.doc_id > $2"), tenant, after, limit)
        return [document_from_row(row) for row in rows]

    async def get_document(self, tenant: str, doc_id: str) -> DocumentInfo | None:
        async with self._conn() as conn:
            row = await conn.fetchrow(_DOCUMENTS.format(columns=COLUMNS, filter="r.doc_id = $2"),
                                      tenant, doc_id, 1)
        return document_from_row(row) if row else None

    async def get(self, tenant: str, record_id: str) -> MemoryRecord | None:
        sql = f"SELECT {COLUMNS} FROM memory_records AS r WHERE r.tenant = $1 AND r.id = $2"
        async with self._conn() as conn:
            row = await conn.fetchrow(sql, tenant, record_id)
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
        return (await self._recall(tenant, query, user_id=user_id, kinds=kinds, k=k))[1]

    async def facts_and_search(
        self, tenant: str, user_id: str, query: str, *, fact_kinds: Collection[Kind],
        max_facts: int, kinds: Collection[Kind], k: int,
    ) -> tuple[list[MemoryRecord], list[SearchHit]]:
        """``user_records`` and a tenant-wide ``search`` in one statement (memory.recall).

        >>> await store.facts_and_search("t", "u1", "كم مدة الاسترجاع؟", fact_kinds={Kind.FACT},
        ...                              max_facts=20, kinds={Kind.DOCUMENT}, k=3)  # doctest: +SKIP
        ([MemoryRecord(..., text='ناديني ابو فهد', ...)], [SearchHit(...)])
        """
        return await self._recall(tenant, query, user_id=None, kinds=kinds, k=k,
                                  facts=(user_id, fact_kinds, max_facts))

    async def _recall(
        self, tenant: str, query: str, *, user_id: str | None, kinds: Collection[Kind] | None,
        k: int, facts: tuple[str, Collection[Kind], int] | None = None,
    ) -> tuple[list[MemoryRecord], list[SearchHit]]:
        """Facts (when asked) and search hits: RECALL, and SEARCH again after a correction."""
        weighted = weighted_terms(query, self._keys, self._expand)
        terms = weighted.all
        k = min(k, MAX_K)
        if not terms or k <= 0:
            return (await self.user_records(tenant, facts[0], kinds=facts[1], limit=facts[2])
                    if facts else []), []
        kind_list = [Kind(x).value for x in (kinds or list(Kind))]
        # Arabizi stage (memory.arabizi_stage), with the bridge: readings of
        # the query's Latin words that this tenant's vocabulary holds.  They
        # replace the typo stage: an Arabizi query's own keys are
        # transliteration guesses, a trigram neighbour of a guess is not wanted.
        readings = arabizi_readings(query[:MAX_QUERY_CHARS], self._keys) \
            if self._expand is not None else []
        typo = self._typo and not readings
        # The typo candidates come with the first statement when pg_trgm's
        # threshold is the pool's start-up setting (see _corrections).
        folded = typo and self._trgm_threshold_set
        fixes: list[str] = []
        async with self._conn() as conn:
            args = [tenant, " ".join(weighted.own), user_id, kind_list, K1, B, self._budget,
                    k, SCAN_CANDIDATES, SCAN_COST_RATIO, SCAN_MAX_ROWS,
                    " ".join(weighted.bridged), BRIDGE_WEIGHT, "", TYPO_WEIGHT]
            rows = await conn.fetch(
                RECALL, *args, facts[0] if facts else None,
                [Kind(x).value for x in facts[1]] if facts else [], facts[2] if facts else 0,
                unknown_terms(weighted.own, ()) if folded else [], CANDIDATES_PER_TERM,
                all_keys(readings) if readings else [])
            parts: dict[int, list[asyncpg.Record]] = {0: [], 1: [], 2: [], 3: [], 4: []}
            for row in rows:
                parts[row[0]].append(row)
            hits = [(row[2:14], float(row[14])) for row in parts[0]]
            lexemes = parts[2][0][15] or ()
            # Second stage (memory.typo) only when own keys are unknown to the tenant.
            unknown = unknown_terms(weighted.own, lexemes) if typo else []
            if unknown:
                found = [(r[16], r[17], r[18]) for r in parts[3]] if folded \
                    else await self._corrections(conn, tenant, unknown)
                fixes = corrections_for(unknown, found, set(terms))
            if readings:
                have = set(terms) | set(fixes)
                fixes += [t for t in choose_readings(readings, {str(r[17]) for r in parts[4]})
                          if t not in have]
            if fixes:
                args[13] = " ".join(fixes)
                again = await conn.fetch(SEARCH, *args)
                hits = [(row[:12], float(row[12])) for row in again]
                lexemes = again[0][13] if again else ()
        facts_found = [record_from_row(row[2:14]) for row in parts[1]]
        wanted = set(terms) | set(lexemes) | set(fixes)
        return facts_found, [
            SearchHit(record=(rec := record_from_row(row)), score=score,
                      snippet=highlight_snippet(rec.text, wanted, self._word_keys))
            for row, score in hits
        ]

    async def _corrections(self, conn: asyncpg.Connection, tenant: str,
                           unknown: list[str]) -> list[tuple[str, str, int]]:
        """The typo stage's candidates on a pool the caller made (memory.typo).

        pg_trgm's % reads its threshold from a setting, and SET LOCAL keeps it
        to this transaction, so the pooled connection carries no session state.
        """
        async with conn.transaction():
            await conn.execute(f"SET LOCAL pg_trgm.similarity_threshold = {float(THRESHOLD)}")
            found = await conn.fetch(SIMILAR_TERMS, tenant, unknown, CANDIDATES_PER_TERM)
        return [(str(t), str(lx), int(df)) for t, lx, df in found]

    async def user_records(
        self, tenant: str, user_id: str, *, kinds: Collection[Kind] | None = None, limit: int = 50
    ) -> list[MemoryRecord]:
        sql = (
            f"SELECT {COLUMNS} FROM memory_records AS r WHERE r.tenant = $1 AND r.user_id = $2"
            " AND r.kind = ANY($3::text[]) ORDER BY r.updated_at DESC, r.id LIMIT $4"
        )
        kind_list = [Kind(x).value for x in (kinds or list(Kind))]
        async with self._conn() as conn:
            rows = await conn.fetch(sql, tenant, user_id, kind_list, limit)
        return [record_from_row(row) for row in rows]

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
