"""The document methods of the MemoryStore contract (replace, list, get), on both stores."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from diwaniya.errors import InvalidRequest
from memory import Kind, MemoryStore, NewRecord

T = Callable[[str], str]


def chunks(tenant: str, doc_id: str, *texts: str) -> list[NewRecord]:
    return [NewRecord(tenant=tenant, kind=Kind.DOCUMENT, id=f"{doc_id}#{i}", doc_id=doc_id,
                      title=f"{doc_id} › {i}", text=text,
                      metadata={"ordinal": i, **({"document": {"title": doc_id}} if i == 0
                                                 else {})})
            for i, text in enumerate(texts)]


async def test_replace_drops_old_chunks_and_their_search_keys(
    store: MemoryStore, tenants: T
) -> None:
    t = tenants("acme")
    written = await store.replace_documents(t, {"refunds": chunks(
        t, "refunds", "يمكن إرجاع المنتج خلال أسبوعين", "الفاتورة الأصلية مطلوبة",
        "الشحن على العميل")})
    assert written == 3
    assert (await store.search(t, "الفاتورة"))[0].record.id == "refunds#1"
    await store.replace_documents(t, {"refunds": chunks(t, "refunds", "الدفع عند الاستلام")})
    assert await store.search(t, "الفاتورة") == []
    assert await store.search(t, "الشحن") == []
    info = await store.get_document(t, "refunds")
    assert info is not None and info.chunk_count == 1
    assert info.first.text == "الدفع عند الاستلام"
    assert info.first.metadata["document"] == {"title": "refunds"}


async def test_replace_is_all_or_nothing(store: MemoryStore, tenants: T) -> None:
    t = tenants("acme")
    await store.replace_documents(t, {"a": chunks(t, "a", "نص قديم عن الضمان")})
    blank = NewRecord(tenant=t, kind=Kind.DOCUMENT, id="b#1", doc_id="b", text="   ")
    bad = [*chunks(t, "b", "نص جديد"), blank]
    with pytest.raises(InvalidRequest):
        await store.replace_documents(t, {"a": chunks(t, "a", "نص بديل"), "b": bad})
    # Filed under the wrong document or tenant: refused too.
    with pytest.raises(InvalidRequest):
        await store.replace_documents(t, {"a": chunks(tenants("other"), "a", "نص")})
    assert [d.doc_id for d in await store.list_documents(t)] == ["a"]
    assert (await store.search(t, "الضمان"))[0].record.doc_id == "a"


async def test_list_pages_by_doc_id_within_one_tenant(store: MemoryStore, tenants: T) -> None:
    t, other = tenants("acme"), tenants("globex")
    await store.replace_documents(t, {d: chunks(t, d, f"نص {d}", "فقرة ثانية")
                                      for d in ["c", "a", "b", "d"]})
    await store.replace_documents(other, {"b2": chunks(other, "b2", "نص غريب")})
    # A user's fact is not a document.
    await store.put([NewRecord(tenant=t, kind=Kind.FACT, user_id="u1", text="اسمي محمد")])
    first = await store.list_documents(t, limit=2)
    assert [(d.doc_id, d.chunk_count) for d in first] == [("a", 2), ("b", 2)]
    rest = await store.list_documents(t, after="b", limit=10)
    assert [d.doc_id for d in rest] == ["c", "d"]
    assert all(d.first.id == f"{d.doc_id}#0" for d in first + rest)
    assert await store.get_document(t, "b2") is None
    assert await store.get_document(other, "a") is None
    assert (await store.get_document(other, "b2")) is not None


async def test_delete_document_then_get_is_none(store: MemoryStore, tenants: T) -> None:
    t = tenants("acme")
    await store.replace_documents(t, {"x": chunks(t, "x", "سياسة التوصيل", "رسوم الشحن")})
    assert await store.delete_document(t, "x") == 2
    assert await store.get_document(t, "x") is None
    assert await store.list_documents(t) == []
    assert await store.search(t, "الشحن") == []


async def test_postgres_statistics_follow_replaced_documents(pg_dsn: str, tenants: T) -> None:
    """BM25's per-tenant counts equal a recount of the rows after replace and delete."""
    import asyncpg

    from memory import PostgresMemoryStore
    from nlp import stem_and_surface_keys

    t = tenants("stats")
    store = await PostgresMemoryStore.connect(pg_dsn, keys=stem_and_surface_keys, max_size=2)
    try:
        await store.setup()
        await store.replace_documents(t, {"a": chunks(t, "a", "الضمان سنتين", "الشحن مجاني"),
                                          "b": chunks(t, "b", "الدفع عند الاستلام")})
        await store.replace_documents(t, {"a": chunks(t, "a", "الضمان سنة واحدة")})
        await store.delete_document(t, "b")
    finally:
        await store.close()
    conn = await asyncpg.connect(pg_dsn)
    try:
        stats = await conn.fetchrow(
            "SELECT n_docs, total_len FROM memory_stats WHERE tenant = $1", t)
        recount = await conn.fetchrow(
            "SELECT count(*), sum(doc_len) FROM memory_records WHERE tenant = $1", t)
        assert tuple(stats) == tuple(recount) == (1, recount[1])
        terms = dict(await conn.fetch(
            "SELECT lexeme, df FROM memory_terms WHERE tenant = $1 AND df > 0", t))
        actual = dict(await conn.fetch(
            "SELECT u.lexeme, count(*) FROM memory_records AS r, unnest(r.tsv) AS u"
            " WHERE r.tenant = $1 GROUP BY 1", t))
        assert terms == actual and actual
    finally:
        await conn.close()


async def test_search_hits_leave_the_uploaded_document_out(store: MemoryStore, tenants: T
                                                          ) -> None:
    t = tenants("acme")
    await store.replace_documents(t, {"x": chunks(t, "x", "سياسة التوصيل السريع")})
    [hit] = await store.search(t, "التوصيل")
    assert hit.record.metadata == {"ordinal": 0}  # no "document": it may be a megabyte
    info = await store.get_document(t, "x")
    assert info is not None and info.first.metadata["document"] == {"title": "x"}


async def test_listing_leaves_the_text_out_and_get_keeps_it(store: MemoryStore, tenants: T
                                                           ) -> None:
    t = tenants("acme")
    first = chunks(t, "x", "سياسة التوصيل السريع")[0]
    meta = {"ordinal": 0, "document": {"title": "x", "text": "سياسة التوصيل السريع"}}
    await store.replace_documents(t, {"x": [NewRecord(
        tenant=t, kind=Kind.DOCUMENT, id=first.id, doc_id="x", text=first.text, metadata=meta)]})
    [listed] = await store.list_documents(t)
    assert listed.first.metadata["document"] == {"title": "x"}
    got = await store.get_document(t, "x")
    assert got is not None and got.first.metadata == meta


async def test_files_ingested_in_process_can_be_got_whole(
    store: MemoryStore, tenants: T, tmp_path: Path
) -> None:
    from memory import kb

    t = tenants("acme")
    policy = "# الاسترجاع\n\nخلال أسبوعين.\n\n## الشحن\n\nمجاني.\n"
    path = tmp_path / "policy.md"
    path.write_text(policy, encoding="utf-8")
    await kb.ingest_files(store, t, [path])
    got = await kb.get_document(store, t, "policy.md")
    assert got.text == policy and got.title == "policy" and got.chunk_count == 2
    assert got.metadata == {"source": str(path)}
