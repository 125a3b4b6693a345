"""Re-keying (memory.rekey) on both stores: rows keyed by an older key function
are found by today's queries after ``rekey()``, their statistics are those of a
fresh ingest, the fingerprint is recorded and a second run does nothing.

"Older" is the built-in key function with the counts pass switched off: what
stores held before counts became digits (nlp.KEYS_VERSION 1).  Each test has
a database (or file) of its own: the fingerprint is the whole store's.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import asyncpg
import pytest

import nlp.keys
from memory import Kind, MemoryStore, NewRecord, PostgresMemoryStore, SqliteMemoryStore
from memory.rekey import RekeyReport
from nlp import KEYS_VERSION, KeyFunction, keys_fingerprint
from tests.conftest import fresh_database

RUN = uuid.uuid4().hex[:8]
OLD, FRESH = f"old-{RUN}", f"fresh-{RUN}"
OLD_FINGERPRINT = f"builtin/{KEYS_VERSION - 1}"


def pre_count_keys(text: str) -> list[str]:
    """The built-in keys as they were before counts became digits."""
    with mock.patch.object(nlp.keys, "_counts_as_digits", lambda toks, arabizi: toks):
        return nlp.keys.stem_and_surface_keys(text)


def _records(tenant: str) -> list[NewRecord]:
    doc = {
        "refund": ("الاسترجاع", "يعاد المبلغ إلى البطاقة خلال ثلاثة أيام عمل من استلام المرتجع."),
        "visit": ("زيارة الفني", "يصل الفني إلى المنزل خلال ساعتين من تأكيد الموعد."),
        "delivery": ("التوصيل", "التوصيل إلى المدن خلال خمسة أيام والقرى خلال سبعة أيام."),
        "fee": ("الرسوم", "رسوم إصدار البطاقة البديلة 25 ريالاً."),
        "hours": ("", "ساعات العمل من الأحد إلى الخميس."),
    }
    return [NewRecord(tenant=tenant, kind=Kind.DOCUMENT, id=f"kb:{d}#0", doc_id=f"kb:{d}",
                      title=title, text=text) for d, (title, text) in doc.items()] + [
        NewRecord(tenant=tenant, kind=Kind.FACT, user_id="u1", id="n", text="عندي ثلاث بنات"),
    ]


QUERIES = ("الفلوس بترجع بعد 3 تيام؟", "الفني بيوصل بعد 2 ساعة؟", "التوصيل بياخد 7 ايام؟",
           "عندي 3 بنات", "ساعات الدوام")

Store = SqliteMemoryStore | PostgresMemoryStore
Opener = Callable[[KeyFunction, str | None], Awaitable[Store]]


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def pg_own() -> Iterator[str]:
    with fresh_database("diwaniya_rekey") as dsn:
        yield dsn


@pytest.fixture
async def opener(backend: str, tmp_path: Path,
                 request: pytest.FixtureRequest) -> AsyncIterator[Opener]:
    """Opens (and sets up) stores over one file or one database of this test's own."""
    opened: list[Store] = []
    dsn = str(request.getfixturevalue("pg_own")) if backend == "postgres" else ""

    async def open_one(keys: KeyFunction, fingerprint: str | None) -> Store:
        store: Store
        if backend == "sqlite":
            store = SqliteMemoryStore(tmp_path / "memory.sqlite3", keys=keys,
                                      fingerprint=fingerprint)
        else:
            store = await PostgresMemoryStore.connect(dsn, keys=keys, max_size=3,
                                                      fingerprint=fingerprint)
        await store.setup()
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        await store.close()


async def _statistics(store: MemoryStore, tenant: str) -> dict[str, Any]:
    """Everything ranking reads for ``tenant``, keyed so two tenants compare equal."""
    if isinstance(store, SqliteMemoryStore):
        db = sqlite3.connect(store._path)
        try:
            # External-content FTS5: the index must hold exactly the rows' keys.
            db.execute("INSERT INTO memory_fts (memory_fts) VALUES ('integrity-check')")
            return {
                "keys": dict(db.execute(
                    "SELECT id, keys FROM memory_records WHERE tenant = ?", (tenant,))),
                "terms": dict(db.execute(
                    "SELECT term, df FROM memory_terms WHERE tenant = ?", (tenant,))),
                "pools": sorted(db.execute(
                    "SELECT pool, n_docs, total_len FROM memory_pools WHERE tenant = ?",
                    (tenant,))),
            }
        finally:
            db.close()
    assert isinstance(store, PostgresMemoryStore)
    async with store._pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT id, tsv::text, doc_len FROM memory_records WHERE tenant = $1", tenant)
        terms = await conn.fetch("SELECT lexeme, df FROM memory_terms WHERE tenant = $1", tenant)
        stats = await conn.fetchrow(
            "SELECT n_docs, total_len, short_docs, short_len FROM memory_stats"
            " WHERE tenant = $1", tenant)
    return {"keys": {r[0]: (r[1], r[2]) for r in rows}, "terms": dict(map(tuple, terms)),
            "stats": tuple(stats) if stats else None}


async def _ranking(store: MemoryStore, tenant: str) -> list[list[tuple[str, float]]]:
    out = []
    for query in QUERIES:
        hits = await store.search(tenant, query, user_id="u1", k=3)
        out.append([(h.record.id, round(h.score, 9)) for h in hits])
    return out


@pytest.fixture
def old_keys() -> Iterator[KeyFunction]:
    assert pre_count_keys("ثلاثة أيام") != nlp.keys.stem_and_surface_keys("ثلاثة أيام")
    yield pre_count_keys


async def test_rows_keyed_before_counts_are_found_and_counted_as_a_fresh_ingest(
    opener: Opener, old_keys: KeyFunction
) -> None:
    old = await opener(old_keys, OLD_FINGERPRINT)
    await old.put(_records(OLD))
    assert await old.keys_fingerprint() == OLD_FINGERPRINT

    new = await opener(nlp.keys.stem_and_surface_keys, None)
    await new.put(_records(FRESH))  # the same records, keyed by today's function
    before = await new.search(OLD, QUERIES[0], kinds={Kind.DOCUMENT}, k=1)
    assert not before or before[0].record.id != "kb:refund#0"  # the count is not met yet
    assert await _statistics(new, OLD) != await _statistics(new, FRESH)

    seen: list[tuple[int, int]] = []
    report: RekeyReport = await new.rekey(
        progress=lambda done, total: seen.append((done, total)), batch=4)
    assert report.ran and report.before == OLD_FINGERPRINT
    now = f"builtin/{KEYS_VERSION}"
    assert report.after == keys_fingerprint(nlp.keys.stem_and_surface_keys) == now
    assert report.rows == 12 and seen == [(4, 12), (8, 12), (12, 12)]
    # The refund text (ثلاثة), the visit (ساعتين), delivery (خمسة، سبعة), the fact (ثلاث بنات).
    assert report.changed == 4

    hits = await new.search(OLD, QUERIES[0], kinds={Kind.DOCUMENT}, k=1)
    assert hits and hits[0].record.id == "kb:refund#0"
    assert hits[0].record.text.startswith("يعاد المبلغ إلى البطاقة خلال ثلاثة أيام")  # as written
    assert await new.keys_fingerprint() == f"builtin/{KEYS_VERSION}"
    # Every statistic, and so every id and score, is that of a fresh ingest.
    assert await _statistics(new, OLD) == await _statistics(new, FRESH)
    assert await _ranking(new, OLD) == await _ranking(new, FRESH)

    again: RekeyReport = await new.rekey()
    assert not again.ran and again.rows == 0 and again.before == f"builtin/{KEYS_VERSION}"


async def test_rows_from_before_fingerprints_are_rekeyed_and_an_empty_store_just_records(
    opener: Opener, old_keys: KeyFunction
) -> None:
    first = await opener(nlp.keys.stem_and_surface_keys, None)
    # An empty store takes the fingerprint at setup: nothing to re-key.
    assert await first.keys_fingerprint() == f"builtin/{KEYS_VERSION}"
    noop: RekeyReport = await first.rekey()
    assert not noop.ran and noop.rows == 0
    # Forced, it reads every row (none here) and records again.
    forced: RekeyReport = await first.rekey(force=True)
    assert forced.ran and forced.rows == 0 and forced.changed == 0


async def test_a_store_written_before_fingerprints_is_rekeyed(
    opener: Opener, old_keys: KeyFunction
) -> None:
    # A key function nlp never named records nothing, as the releases before this one.
    old = await opener(old_keys, None)
    await old.put(_records(OLD))
    assert await old.keys_fingerprint() is None
    new = await opener(nlp.keys.stem_and_surface_keys, None)
    await new.put(_records(FRESH))
    assert await new.keys_fingerprint() is None  # rows, none recorded
    report: RekeyReport = await new.rekey()
    assert report.ran and report.before is None and report.changed == 4
    assert await _statistics(new, OLD) == await _statistics(new, FRESH)


async def test_postgres_rekey_beside_writers_and_a_second_replica(
    pg_own: str, old_keys: KeyFunction
) -> None:
    """Two replicas re-key at once (one runs, one waits and finds it done) while a
    third writes and deletes: the statistics equal a recount of the rows."""
    old = await PostgresMemoryStore.connect(pg_own, keys=old_keys, fingerprint=OLD_FINGERPRINT)
    await old.setup()
    tenants = [f"{OLD}-{i}" for i in range(6)]
    for t in tenants:
        await old.put(_records(t))
    await old.close()
    replicas = [await PostgresMemoryStore.connect(pg_own, keys=nlp.keys.stem_and_surface_keys,
                                                  max_size=3) for _ in range(3)]
    try:
        for r in replicas:
            await r.setup()

        async def write() -> None:
            for i, t in enumerate(tenants):
                await replicas[2].put([NewRecord(
                    tenant=t, kind=Kind.FACT, user_id="u1", id="n",
                    text=f"عندي {['ولد', 'ثلاث بنات'][i % 2]}")])
                await replicas[2].erase_user(t, "nobody")
                await replicas[2].delete_document(t, "kb:hours")
                await asyncio.sleep(0)

        one, two, _ = await asyncio.gather(
            replicas[0].rekey(batch=3), replicas[1].rekey(batch=3), write())
        assert sorted([one.ran, two.ran]) == [False, True]
        async with replicas[0]._pool.acquire() as conn:
            assert await _recount(conn) == await _stored(conn)
        for t in tenants:
            assert await replicas[0].search(t, "خلال 3 ايام", kinds={Kind.DOCUMENT}, k=1)
        hits = await replicas[0].search(tenants[1], "3 بنات", user_id="u1", k=1)
        assert hits and hits[0].record.text == "عندي ثلاث بنات"
    finally:
        for r in replicas:
            await r.close()


async def _recount(conn: asyncpg.Connection) -> tuple[Any, ...]:
    terms = await conn.fetch("SELECT r.tenant, u.lexeme, count(*) FROM memory_records AS r,"
                             " unnest(r.tsv) AS u GROUP BY 1, 2")
    stats = await conn.fetch("SELECT tenant, count(*), sum(doc_len) FROM memory_records"
                             " GROUP BY 1")
    return ({(r[0], r[1]): r[2] for r in terms}, {r[0]: (r[1], r[2]) for r in stats})


async def _stored(conn: asyncpg.Connection) -> tuple[Any, ...]:
    terms = await conn.fetch("SELECT tenant, lexeme, df FROM memory_terms WHERE df > 0")
    stats = await conn.fetch("SELECT tenant, n_docs, total_len FROM memory_stats"
                             " WHERE n_docs > 0")
    return ({(r[0], r[1]): r[2] for r in terms}, {r[0]: (r[1], r[2]) for r in stats})
