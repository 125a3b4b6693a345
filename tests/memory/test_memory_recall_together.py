"""recall() through PostgreSQL's facts_and_search: the user's facts and the ranked search
(its typo and Arabizi stages included) in one statement, with the very results the two
separate calls give (memory.recall), with documents and on a tenant without any."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from _memory_helpers import documents

from memory import Kind, MemoryStore, NewRecord, PostgresMemoryStore
from memory.recall import recall

_DOCS = {
    "refund": "سياسة الاسترجاع والاستبدال: يمكن إرجاع المنتج خلال ١٤ يوماً مع الفاتورة الأصلية.",
    "tax": "الأسعار تشمل الضريبة المضافة، وترسل الفاتورة الضريبية بالبريد.",
    "invoice": "ترسل الفاتورة الإلكترونية إلى بريدك بعد الدفع.",
    "pickup": "يحتفظ الفرع بالطلب خمسة أيام بعد وصوله، ثم يلغى.",
}
# Correct MSA, a typo (the typo stage), dialect (the bridge), Arabizi (its stage),
# words no document holds, and text without a single key.
QUESTIONS = ["سياسة الاسترجاع", "الظريبه المظافه", "وين وصل طلبي؟", "wein ba2dar ala2i el fatoora?",
             "السلام عليكم، عندي مشكلة", "؟؟"]


async def _fill(store: MemoryStore, tenant: str, user: str) -> None:
    await store.put(documents(tenant, _DOCS) + [
        NewRecord(tenant=tenant, kind=Kind.FACT, user_id=user, text=text)
        for text in ("ناديني ابو فهد", "ساكن في الرياض")
    ] + [NewRecord(tenant=tenant, kind=Kind.FACT, user_id="someone-else", text="اسمي سارة")])


def _shape(found: Any) -> tuple[list[str], list[tuple[str, float, str]]]:
    return ([f.id for f in found.user_facts],
            [(h.record.id, round(h.score, 9), h.snippet) for h in found.documents])


async def _apart(store: MemoryStore, tenant: str, user: str, question: str) -> Any:
    """recall() as it runs on a store without facts_and_search: two calls."""
    class Apart:
        user_records = store.user_records
        search = store.search
    return await recall(Apart(), tenant, user, question)  # type: ignore[arg-type]


# PostgreSQL only (SQLite's recall is the two calls: nothing to compare), chosen by
# parametrizing the fixture rather than skipping, so CI shows no skip.
@pytest.mark.parametrize("bridged_pair", ["postgres"], indirect=True)
@pytest.mark.parametrize("with_documents", [True, False])
async def test_one_statement_finds_what_two_calls_find(
        bridged_pair: tuple[MemoryStore, MemoryStore], tenants: Callable[[str], str],
        with_documents: bool) -> None:
    assert isinstance(bridged_pair[0], PostgresMemoryStore)
    for store in bridged_pair:
        tenant, user = tenants(f"together-{uuid.uuid4().hex[:4]}"), "u1"
        if with_documents:
            await _fill(store, tenant, user)
        else:
            await store.put([NewRecord(tenant=tenant, kind=Kind.FACT, user_id=user,
                                       text="ناديني ابو فهد")])
        for question in QUESTIONS:
            together = await recall(store, tenant, user, question)
            apart = await _apart(store, tenant, user, question)
            assert _shape(together) == _shape(apart), question
            assert len(together.user_facts) == (2 if with_documents else 1)
        if with_documents:
            found = await recall(store, tenant, user, "الظريبه المظافه")
            assert found.documents[0].record.doc_id == "tax"


class _Counting:
    """A pooled connection that counts the statements sent through it."""

    def __init__(self, conn: Any, sent: list[str]) -> None:
        self._conn, self._sent = conn, sent

    async def fetch(self, sql: str, *args: Any) -> Any:
        self._sent.append(sql)
        return await self._conn.fetch(sql, *args)

    def __getattr__(self, name: str) -> Any:
        self._sent.append(name)
        return getattr(self._conn, name)


@pytest.fixture
async def pg_store(pg_dsn: str, keys: Any) -> AsyncIterator[PostgresMemoryStore]:
    import nlp
    store = await PostgresMemoryStore.connect(pg_dsn, keys=keys, max_size=2,
                                              expand=nlp.dialect_to_msa)
    await store.setup()
    yield store
    await store.close()


@pytest.mark.parametrize(("question", "statements"), [
    ("سياسة الاسترجاع", 1),  # every key known
    ("السلام عليكم، عندي مشكلة", 1),  # unknown keys, no correction near them
    ("الظريبه المظافه", 2),  # corrected: the search runs again with the corrections
])
async def test_a_turns_recall_is_one_round_trip_unless_corrected(
        pg_store: PostgresMemoryStore, tenants: Callable[[str], str],
        question: str, statements: int) -> None:
    tenant = tenants("trips")
    await _fill(pg_store, tenant, "u1")
    sent: list[str] = []
    inner = pg_store._conn

    @asynccontextmanager
    async def counted() -> AsyncIterator[Any]:
        async with inner() as conn:
            yield _Counting(conn, sent)

    pg_store._conn = counted  # type: ignore[method-assign]
    found = await recall(pg_store, tenant, "u1", question)
    assert len(sent) == statements, sent
    assert len(found.user_facts) == 2
    # A tenant with no documents at all: facts, and no typo lookup of its own.
    sent.clear()
    found = await recall(pg_store, tenants("empty"), "u1", question)
    assert (len(sent), found.user_facts, found.documents) == (1, [], [])
