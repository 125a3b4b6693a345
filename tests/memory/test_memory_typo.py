"""The typo stage (memory.typo), the same in both stores, and its migrations.

Real Arabic typing errors on a small support-desk knowledge base: a hamza
left out, ة typed as ه, ى as ي, ض for ظ, letters swapped or repeated.  The
stage must find the intended record, must leave a correctly spelled query's
results exactly as they were, and must be switchable off.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from memory import Kind, MemoryStore, NewRecord, PostgresMemoryStore, SqliteMemoryStore
from memory.terms import KeyFunction

KB = {
    "refund": "سياسة الاسترجاع والاستبدال: يمكن إرجاع المنتج خلال ١٤ يوماً مع الفاتورة الأصلية.",
    "tax": "الأسعار تشمل الضريبة المضافة، وترسل الفاتورة الضريبية بالبريد.",
    "nursery": "الحضانة مفتوحة للأطفال من عمر سنة، والمسؤول عنها المشرفة سارة.",
    "hospital": "أقرب مستشفى للفرع على بعد خمس دقائق، والإسعاف متاح على مدار الساعة.",
    "warranty": "الضمان سنتين على الأجهزة الكهربائية، ويشمل الصيانة المجانية.",
    "delivery": "التوصيل داخل الرياض خلال يومين، وباقي المدن خلال ٥ أيام عمل.",
}

# Misspelled question → the record that answers it.
TYPOS = {
    "الاستجراع": "refund",  # two letters swapped (رج → جر)
    "الاستبادل": "refund",  # swapped (دا → اد)
    "الظريبه المظافه": "tax",  # ض → ظ twice, ة → ه
    "مين المسوول عن الحظانه": "nursery",  # ؤ → و, ض → ظ, ة → ه
    "اقرب مستشفي": "hospital",  # hamza left out, ى → ي
    "الكهربيائية": "warranty",  # a letter added
}
# Correctly spelled questions: every key is in the vocabulary.
CORRECT = ["الضريبة المضافة", "الضمان على الأجهزة الكهربائية", "التوصيل داخل الرياض",
           "سياسة الاسترجاع", "الحضانة"]


def docs(tenant: str) -> list[NewRecord]:
    return [NewRecord(tenant=tenant, kind=Kind.DOCUMENT, id=f"kb:{key}#0", doc_id=key,
                      title="", text=text) for key, text in KB.items()]


@pytest.fixture(params=["sqlite", "postgres"])
async def pair(request: pytest.FixtureRequest, tmp_path: Path,
               keys: KeyFunction) -> AsyncIterator[tuple[MemoryStore, MemoryStore]]:
    """The same database through two stores: typo stage on, and off."""
    made: list[MemoryStore] = []
    for typo in (True, False):
        if request.param == "sqlite":
            made.append(SqliteMemoryStore(tmp_path / "m.sqlite3", keys=keys, typo=typo))
        else:
            dsn = request.getfixturevalue("pg_dsn")
            made.append(await PostgresMemoryStore.connect(dsn, keys=keys, max_size=2, typo=typo))
        await made[-1].setup()
    yield made[0], made[1]
    for store in made:
        await store.close()


def tenant() -> str:
    return f"typo-{uuid.uuid4().hex[:8]}"


async def test_misspelled_questions_find_their_record(
        pair: tuple[MemoryStore, MemoryStore]) -> None:
    on, off = pair
    t = tenant()
    await on.put(docs(t))
    for query, want in TYPOS.items():
        hits = await on.search(t, query, k=3)
        assert hits and hits[0].record.doc_id == want, (query, [h.record.doc_id for h in hits])
    # Without the stage, the errors that folding does not undo find nothing.
    for query in ("الاستجراع", "الاستبادل", "الكهربيائية"):
        assert await off.search(t, query, k=3) == [], query


async def test_documents_uploaded_through_the_api_are_corrected_toward(
        pair: tuple[MemoryStore, MemoryStore]) -> None:
    # UpsertDocuments writes through replace_documents, not put: its words
    # must join the tenant's vocabulary all the same.
    on, _ = pair
    t = tenant()
    await on.replace_documents(t, {key: [record] for key, record in
                                   zip(KB, docs(t), strict=True)})
    hits = await on.search(t, "الاستجراع", k=3)
    assert hits and hits[0].record.doc_id == "refund"


async def test_the_corrected_word_is_highlighted_in_the_original(
        pair: tuple[MemoryStore, MemoryStore]) -> None:
    on, _ = pair
    t = tenant()
    await on.put(docs(t))
    [hit] = await on.search(t, "الاستجراع", k=1)
    assert "[[الاسترجاع]]" in hit.snippet


async def test_correctly_spelled_queries_are_unchanged_by_the_stage(
        pair: tuple[MemoryStore, MemoryStore]) -> None:
    on, off = pair
    t = tenant()
    await on.put(docs(t))
    for query in CORRECT:
        with_stage = [(h.record.id, round(h.score, 9)) for h in await on.search(t, query)]
        without = [(h.record.id, round(h.score, 9)) for h in await off.search(t, query)]
        assert with_stage and with_stage == without, query


async def test_corrections_come_from_the_asking_tenants_vocabulary_only(
        pair: tuple[MemoryStore, MemoryStore]) -> None:
    on, _ = pair
    mine, other = tenant(), tenant()
    await on.put(docs(other))
    await on.put([NewRecord(tenant=mine, kind=Kind.DOCUMENT, id="x", doc_id="x",
                            text="مواعيد الدوام الصيفي")])
    # الاسترجاع is only in the other tenant's vocabulary: nothing to correct to.
    assert await on.search(mine, "الاستجراع") == []
    assert [h.record.id for h in await on.search(mine, "الدوام الصيفي")] == ["x"]


async def test_sqlite_file_from_before_the_stage_gets_its_vocabulary(
        tmp_path: Path, keys: KeyFunction) -> None:
    path = tmp_path / "old.sqlite3"
    t = tenant()
    first = SqliteMemoryStore(path, keys=keys)
    await first.setup()
    await first.put(docs(t))
    await first.close()
    # Back to the previous release's file: no vocabulary tables, no mark.
    db = sqlite3.connect(path)
    db.executescript("DROP TRIGGER memory_words_ai; DROP TABLE memory_words_trgm;"
                     " DROP TABLE memory_words; DELETE FROM memory_meta WHERE key = 'typo_v1';")
    db.close()
    replicas = [SqliteMemoryStore(path, keys=keys) for _ in range(3)]
    await asyncio.gather(*(r.setup() for r in replicas))
    try:
        hits = await replicas[0].search(t, "الاستجراع")
        assert hits and hits[0].record.doc_id == "refund"
        db = sqlite3.connect(path)
        words = db.execute("SELECT count(*), count(DISTINCT term) FROM memory_words").fetchone()
        db.close()
        assert words[0] == words[1] > len(KB)  # backfilled once, no duplicates
    finally:
        for r in replicas:
            await r.close()


async def test_postgres_database_from_before_the_stage_gets_its_trigram_index(
        own_database: str, keys: KeyFunction) -> None:
    t = tenant()
    old = await PostgresMemoryStore.connect(own_database, keys=keys, max_size=1, typo=False)
    await old.setup()  # as before the stage: no pg_trgm, no index
    await old.put(docs(t))
    await old.close()
    conn = await asyncpg.connect(own_database)
    assert not await conn.fetchval("SELECT count(*) FROM pg_extension WHERE extname='pg_trgm'")
    replicas = [await PostgresMemoryStore.connect(own_database, keys=keys, max_size=1)
                for _ in range(3)]
    await asyncio.gather(*(r.setup() for r in replicas))
    try:
        assert await conn.fetchval(
            "SELECT count(*) FROM pg_indexes WHERE indexname = 'memory_terms_trgm'") == 1
        hits = await replicas[0].search(t, "الاستجراع")
        assert hits and hits[0].record.doc_id == "refund"
    finally:
        for r in replicas:
            await r.close()
        await conn.close()


async def test_postgres_typo_threshold_holds_whatever_the_database_default(
        own_database: str, keys: KeyFunction) -> None:
    """The stage's threshold is the store's, not the server's: a store that opened
    its pool sets it at connect (one statement per lookup), a store on the
    caller's pool with SET LOCAL; both correct the same typos on a database
    whose default threshold (0.95) would find no correction at all."""
    t = tenant()
    owned = await PostgresMemoryStore.connect(own_database, keys=keys, max_size=1)
    await owned.setup()  # creates pg_trgm, so the database setting is validated
    await owned.put(docs(t))
    await owned.close()
    name = own_database.rsplit("/", 1)[1]
    raw = await asyncpg.connect(own_database)
    await raw.execute(f'ALTER DATABASE "{name}" SET pg_trgm.similarity_threshold = 0.95')
    await raw.close()
    raw = await asyncpg.connect(own_database)  # a new session reads the new default
    assert await raw.fetchval("SHOW pg_trgm.similarity_threshold") == "0.95"
    await raw.close()
    pool = await asyncpg.create_pool(own_database, min_size=1, max_size=1)
    stores = [await PostgresMemoryStore.connect(own_database, keys=keys, max_size=1),
              PostgresMemoryStore(pool, keys=keys)]
    try:
        for store in stores:
            for query, want in TYPOS.items():
                hits = await store.search(t, query, k=3)
                assert hits and hits[0].record.doc_id == want, (
                    type(store).__name__, query, [h.record.doc_id for h in hits])
    finally:
        await stores[0].close()
        await pool.close()
