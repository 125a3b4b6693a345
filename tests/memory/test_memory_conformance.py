"""The MemoryStore contract, run against SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from diwaniya.errors import InvalidRequest
from memory import Kind, MemoryStore, NewRecord

T = Callable[[str], str]

# Real support-desk phrasing across dialects; each record says one thing.
KB = {
    "refund": "سياسة الاسترجاع: يمكن إرجاع المنتج خلال ١٤ يوماً من الاستلام مع الفاتورة الأصلية.",
    "delivery": "التوصيل داخل الرياض خلال يومين، وباقي المدن خلال ٥ أيام عمل.",
    "hours": "ساعات العمل من الأحد إلى الخميس، من ٩ الصبح لين ٥ العصر.",
    "warranty": "الضمان سنتين على الأجهزة الكهربائية، ويشمل الصيانة المجانية.",
}


def doc(tenant: str, key: str, text: str | None = None) -> NewRecord:
    return NewRecord(
        tenant=tenant, kind=Kind.DOCUMENT, id=f"kb:{key}#0", doc_id=f"kb:{key}",
        title=key, text=text or KB[key],
    )


def fact(tenant: str, user: str, text: str, *, thread: str | None = None, rid: str | None = None
         ) -> NewRecord:
    return NewRecord(tenant=tenant, kind=Kind.FACT, user_id=user, text=text, thread_id=thread,
                     id=rid)


async def test_put_keeps_the_original_text_exactly(store: MemoryStore, tenants: T) -> None:
    t = tenants("acme")
    original = "اسمي مُحَمَّد ـــ وأبغى تنادوني «ابو فهد» 😊"
    [stored] = await store.put([fact(t, "u1", original)])
    assert stored.text == original
    assert stored.tenant == t and stored.user_id == "u1" and stored.kind is Kind.FACT
    again = await store.get(t, stored.id)
    assert again is not None and again.text == original


async def test_search_finds_the_matching_document_with_highlight(
    store: MemoryStore, tenants: T
) -> None:
    t = tenants("acme")
    await store.put([doc(t, key) for key in KB])
    hits = await store.search(t, "الضمان على الأجهزة الكهربائية", k=3)
    assert hits and hits[0].record.doc_id == "kb:warranty"
    assert "[[الضمان]]" in hits[0].snippet
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # The snippet is cut from the original: removing markers gives a substring.
    plain = hits[0].snippet.replace("[[", "").replace("]]", "").strip("… ")
    assert plain in KB["warranty"]


async def test_rare_terms_outrank_common_ones(store: MemoryStore, tenants: T) -> None:
    # Every record mentions "الطلب"; only one mentions "الاسترجاع".  An IDF-aware
    # ranking must put that one first even though it mentions "الطلب" less.
    t = tenants("acme")
    common = [doc(t, f"c{i}", f"تم شحن الطلب رقم {i} الطلب في الطريق الطلب") for i in range(8)]
    await store.put([*common, doc(t, "rare", "الطلب قابل الاسترجاع خلال أسبوع")])
    hits = await store.search(t, "الطلب الاسترجاع", k=3)
    assert hits[0].record.doc_id == "kb:rare"


async def test_k_limits_results(store: MemoryStore, tenants: T) -> None:
    t = tenants("acme")
    await store.put([doc(t, f"d{i}", f"رسوم التوصيل {i} ريال") for i in range(7)])
    assert len(await store.search(t, "رسوم التوصيل", k=3)) == 3
    assert await store.search(t, "رسوم التوصيل", k=0) == []


async def test_upsert_by_id_updates_in_place(store: MemoryStore, tenants: T) -> None:
    t = tenants("acme")
    [first] = await store.put([fact(t, "u1", "اسمي خالد", rid="name")])
    await asyncio.sleep(0.01)
    [second] = await store.put([fact(t, "u1", "اسمي فهد", rid="name")])
    assert second.id == first.id == "name"
    assert second.text == "اسمي فهد"
    assert second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    assert await store.search(t, "خالد", user_id="u1") == []
    [hit] = await store.search(t, "فهد", user_id="u1")
    assert hit.record.text == "اسمي فهد"


async def test_statistics_follow_updates_and_erasure(store: MemoryStore, tenants: T) -> None:
    # A tenant with a history of updates and erasures must score exactly like a
    # tenant that only ever held the final rows: the corpus statistics are exact.
    churned, fresh = tenants("churned"), tenants("fresh")
    await store.put([doc(churned, key) for key in KB])
    await store.put([doc(churned, "refund", "الاسترجاع مجاني للأعضاء المميزين خلال شهر")])
    await store.put([fact(churned, "u9", "رقم طلبي ****1234 الاسترجاع", thread="th")])
    await store.erase_thread(churned, "th")
    await store.delete_document(churned, "kb:hours")
    final = {k: v for k, v in KB.items() if k != "hours"}
    final["refund"] = "الاسترجاع مجاني للأعضاء المميزين خلال شهر"
    await store.put([doc(fresh, key, text) for key, text in final.items()])
    query = "الاسترجاع خلال يومين للأجهزة"
    a = await store.search(churned, query, k=10)
    b = await store.search(fresh, query, k=10)
    assert [h.record.id for h in a] == [h.record.id for h in b]
    assert [round(h.score, 6) for h in a] == [round(h.score, 6) for h in b]


async def test_tenant_never_sees_another_tenants_rows(store: MemoryStore, tenants: T) -> None:
    a, b = tenants("a"), tenants("b")
    await store.put([doc(a, "refund"), fact(a, "u1", "اسمي سارة")])
    assert await store.search(b, "سياسة الاسترجاع") == []
    assert await store.search(b, "سارة", user_id="u1") == []
    assert await store.get(b, "kb:refund#0") is None
    assert await store.search(a, "سياسة الاسترجاع")


async def test_user_never_sees_another_users_facts(store: MemoryStore, tenants: T) -> None:
    t = tenants("acme")
    await store.put([
        fact(t, "u1", "اسمي سارة ورقم طلبي ****4821"),
        fact(t, "u2", "اسمي نورة ورقم طلبي ****7710"),
        doc(t, "refund"),
    ])
    mine = await store.search(t, "اسمي رقم طلبي", user_id="u1", k=10)
    assert {h.record.user_id for h in mine} == {"u1"}
    tenant_wide = await store.search(t, "اسمي سياسة الاسترجاع", k=10)
    assert {h.record.kind for h in tenant_wide} == {Kind.DOCUMENT}
    both = await store.search(t, "اسمي سياسة الاسترجاع", user_id="u2", k=10)
    assert {(h.record.kind, h.record.user_id) for h in both} == {
        (Kind.DOCUMENT, None), (Kind.FACT, "u2"),
    }


async def test_kinds_filter(store: MemoryStore, tenants: T) -> None:
    t = tenants("acme")
    await store.put([
        doc(t, "delivery"),
        NewRecord(tenant=t, kind=Kind.PREFERENCE, user_id="u1", text="افضل التوصيل المسائي"),
    ])
    prefs = await store.search(t, "التوصيل", user_id="u1", kinds={Kind.PREFERENCE})
    assert [h.record.kind for h in prefs] == [Kind.PREFERENCE]
    docs = await store.search(t, "التوصيل", user_id="u1", kinds=[Kind.DOCUMENT])
    assert [h.record.kind for h in docs] == [Kind.DOCUMENT]


async def test_erase_user_removes_only_that_user(store: MemoryStore, tenants: T) -> None:
    t, other = tenants("acme"), tenants("other")
    await store.put([
        fact(t, "u1", "اسمي سارة"), fact(t, "u1", "رقم حسابي ****5566"),
        fact(t, "u2", "اسمي سارة ايضا"), fact(other, "u1", "اسمي سارة"), doc(t, "refund"),
    ])
    assert await store.erase_user(t, "u1") == 2
    assert await store.search(t, "سارة", user_id="u1") == []
    assert len(await store.search(t, "سارة", user_id="u2")) == 1
    assert len(await store.search(other, "سارة", user_id="u1")) == 1
    assert await store.search(t, "سياسة الاسترجاع")
    assert await store.erase_user(t, "u1") == 0


async def test_erase_thread(store: MemoryStore, tenants: T) -> None:
    t = tenants("acme")
    await store.put([
        fact(t, "u1", "ناديني ابو فهد", thread="th-1"),
        fact(t, "u1", "افضل الواتساب", thread="th-2"),
    ])
    assert await store.erase_thread(t, "th-1") == 1
    assert await store.search(t, "فهد", user_id="u1") == []
    assert await store.search(t, "الواتساب", user_id="u1")


async def test_delete_document_keeps_listed_chunks(store: MemoryStore, tenants: T) -> None:
    t = tenants("acme")
    chunks = [
        NewRecord(tenant=t, kind=Kind.DOCUMENT, id=f"faq#{i}", doc_id="faq",
                  text=f"سؤال رقم {i} عن الشحن")
        for i in range(3)
    ]
    await store.put(chunks)
    assert await store.delete_document(t, "faq", keep={"faq#0"}) == 2
    hits = await store.search(t, "الشحن", k=10)
    assert [h.record.id for h in hits] == ["faq#0"]
    assert await store.delete_document(t, "faq") == 1
    assert await store.search(t, "الشحن") == []


async def test_scope_rules_are_enforced_on_put(store: MemoryStore, tenants: T) -> None:
    t = tenants("acme")
    with pytest.raises(InvalidRequest):
        await store.put([NewRecord(tenant=t, kind=Kind.DOCUMENT, user_id="u1", text="x")])
    with pytest.raises(InvalidRequest):
        await store.put([NewRecord(tenant=t, kind=Kind.FACT, text="اسمي سارة")])
    with pytest.raises(InvalidRequest):
        await store.put([NewRecord(tenant="", kind=Kind.DOCUMENT, text="نص")])


HOSTILE = [
    '"', "'", '""""', "'; DROP TABLE memory_records; --", "الاسترجاع' OR '1'='1",
    "& | ! : * ( )", "(((", "a & b | !c", "سياسة & | ! الاسترجاع", "<-> <2> :*A",
    "سياسة:* | الاسترجاع:A", "\\", "\\'", "؟؟؟!!!...،،،", "   ", "",
    "في من على الى عن", "the of and", "x" * 10_000, "سياسة " * 2_000,
    "شو سياسة el refund ya3ni 3ayez arga3 el order بليز", "NEAR(سياسة الاسترجاع)",
    "سياسة AND NOT الاسترجاع", "{*}", "\x00\x01", "%_%", "$1 $2",
]


@pytest.mark.parametrize("query", HOSTILE, ids=lambda q: repr(q[:20]))
async def test_hostile_queries_never_raise(store: MemoryStore, tenants: T, query: str) -> None:
    t = tenants("acme")
    await store.put([doc(t, key) for key in KB])
    hits = await store.search(t, query, user_id="u1", k=5)
    assert isinstance(hits, list) and len(hits) <= 5
    assert all(h.record.tenant == t for h in hits)


async def test_hostile_query_still_finds_its_words(store: MemoryStore, tenants: T) -> None:
    t = tenants("acme")
    await store.put([doc(t, key) for key in KB])
    hits = await store.search(t, "'; DROP TABLE x; -- الضمان\" | ! :* (", k=1)
    assert hits and hits[0].record.doc_id == "kb:warranty"


async def test_setup_is_idempotent_and_concurrent(store: MemoryStore, tenants: T) -> None:
    await asyncio.gather(store.setup(), store.setup(), store.setup())
    t = tenants("acme")
    await store.put([doc(t, "refund")])
    assert await store.search(t, "الاسترجاع")


@pytest.mark.parametrize("words", [(2, 8), (60, 160)], ids=["short-items", "passages"])
async def test_shorter_record_wins_within_its_length_pool(
    store: MemoryStore, tenants: T, words: tuple[int, int]
) -> None:
    # BM25 length normalisation, inside one pool (memory.ranking): the same
    # single match in a shorter record is stronger evidence than in a longer
    # one of the same kind (two FAQ lines, or two passages).
    t = tenants("acme")
    few, many = (" ".join(f"كلمة{i}" for i in range(n)) for n in words)
    await store.put([
        doc(t, "long", f"الفاتورة الإلكترونية {many}"),
        doc(t, "short", f"الفاتورة الإلكترونية {few}"),
    ])
    hits = await store.search(t, "الفاتورة", k=2)
    assert [h.record.doc_id for h in hits] == ["kb:short", "kb:long"]
    assert hits[0].score > hits[1].score


# A policy passage (well over SHORT_TERMS index terms) and short items that
# each share one or two of the question's words, as a tenant's FAQ lines,
# product names and saved facts do.
POLICY = (
    "سياسة الاسترجاع والاستبدال في المتجر: يحق للعميل استرجاع المنتج خلال أربعة عشر يوماً من "
    "تاريخ الاستلام بشرط أن يكون المنتج في حالته الأصلية مع الفاتورة الأصلية والتغليف الكامل. "
    "يسترد العميل المبلغ كاملاً إلى وسيلة الدفع نفسها خلال سبعة أيام عمل من وصول المنتج إلى "
    "المستودع وفحصه، ولا تسترد رسوم الشحن إلا إذا كان المنتج معيباً أو مختلفاً عن الطلب. "
    "المنتجات المخفضة والبطاقات الرقمية لا يمكن استرجاعها، ويمكن استبدالها بمنتج آخر."
)
SHORT_ITEMS = [
    "المنتج وصل اليوم الحمدلله",
    "كم سعر المنتج الجديد؟",
    "الفاتورة تصلك على الإيميل",
    "رقم الفاتورة في أعلى الصفحة",
    "المبلغ يخصم عند الطلب",
    "عندي سؤال عن المنتج",
    "تم استلام المبلغ",
    "أبغى أغير عنوان الاستلام",
    "المنتج ممتاز والتغليف حلو",
    "وين الفاتورة حقتي",
]


async def test_a_passage_is_not_crowded_out_by_many_short_items(
    store: MemoryStore, tenants: T
) -> None:
    # With one average length for all rows, 200 short items make the policy
    # look ten times too long and they fill the top 5; scored among passages
    # the policy that answers the question comes first.
    t = tenants("acme")
    noise = [doc(t, f"faq{i}", f"{SHORT_ITEMS[i % len(SHORT_ITEMS)]} {i}") for i in range(200)]
    await store.put([*noise, doc(t, "policy", POLICY)])
    hits = await store.search(t, "كيف استرجع المبلغ اذا المنتج معه الفاتورة", k=5)
    assert hits[0].record.doc_id == "kb:policy"
    assert "[[" in hits[0].snippet


async def test_user_records_lists_only_that_users_rows_newest_first(
    store: MemoryStore, tenants: T
) -> None:
    t, other = tenants("acme"), tenants("other")
    await store.put([fact(t, "u1", "اسمي سارة", rid="n")])
    await asyncio.sleep(0.01)
    await store.put([
        fact(t, "u1", "ناديني ام خالد", rid="a"), fact(t, "u2", "اسمي نورة"),
        fact(other, "u1", "اسمي ريم"), doc(t, "refund"),
    ])
    rows = await store.user_records(t, "u1")
    assert [r.id for r in rows] == ["a", "n"]
    assert await store.user_records(t, "u1", limit=1) == rows[:1]
    assert await store.user_records(t, "u1", kinds={Kind.PREFERENCE}) == []


# Questions for the ranking-isolation test: a passage against short items,
# plain lookups, a typo (memory.typo corrects it from the tenant's own
# vocabulary), and a user's own fact.
ISOLATION_QUERIES = [
    ("كيف استرجع المبلغ اذا المنتج معه الفاتورة", None),
    ("الضمان على الأجهزة الكهربائية", None),
    ("التوصيل داخل الرياض كم يوم", None),
    ("ساعات العمل يوم الخميس", None),
    ("الاستجراع خلال كم يوم", None),  # الاسترجاع with two letters swapped
    ("وين الفاتورة حقتي", "u1"),
]


async def _ranking(store: MemoryStore, tenant: str) -> list[list[tuple[str, float, str]]]:
    return [
        [(h.record.id, h.score, h.snippet)
         for h in await store.search(tenant, query, user_id=user, k=10)]
        for query, user in ISOLATION_QUERIES
    ]


async def test_ranking_ignores_other_tenants_rows(store: MemoryStore, tenants: T) -> None:
    # Ranking statistics are per tenant in both stores: 2,000 rows of another
    # tenant in the same store, written in the same words (which would move
    # any shared document frequency or average length), change neither the
    # ids nor the scores of this tenant's results, exactly.
    a, b = tenants("a"), tenants("b")
    await store.put([
        *(doc(a, key) for key in KB), doc(a, "policy", POLICY),
        *(doc(a, f"faq{i}", item) for i, item in enumerate(SHORT_ITEMS)),
        fact(a, "u1", "الفاتورة حقتي رقمها ٤٨٢١"),
    ])
    alone = await _ranking(store, a)
    assert all(alone), alone  # every question finds something to compare
    texts = [*KB.values(), *SHORT_ITEMS, POLICY]
    noise = [doc(b, f"n{i}", f"{texts[i % len(texts)]} {SHORT_ITEMS[i % 7]} {i}")
             for i in range(2_000)]
    for start in range(0, len(noise), 500):
        await store.put(noise[start:start + 500])
    assert await store.search(b, "الاسترجاع", k=1)  # B's rows are really there
    after = await _ranking(store, a)
    # Ids, order and snippets exactly; scores to 1e-9 relative. Once B's rows are
    # analysed PostgreSQL may pick another plan and sum a score's terms in another
    # order, which moves only its last bits; a shared statistic would move it by
    # percents. (A session-7 CI rehearsal failed the exact comparison once on
    # 10.290772046508382 vs 10.290772046508383; it never failed alone, in 11 runs.)
    assert [[(i, snip) for i, _s, snip in q] for q in after] == \
        [[(i, snip) for i, _s, snip in q] for q in alone]
    for q_after, q_alone in zip(after, alone, strict=True):
        assert [s for _i, s, _snip in q_after] == \
            pytest.approx([s for _i, s, _snip in q_alone], rel=1e-9)


async def test_a_question_of_common_words_only_still_ranks(store: MemoryStore, tenants: T) -> None:
    # Every word of the question is in more rows than the candidate budget
    # (memory.candidates): the rarest is AND-ed with the next, and when that
    # leaves fewer than k rows, rows holding the rarest alone fill the rest.
    t = tenants("acme")
    orders = [doc(t, f"o{i}", f"الطلب رقم {i} قيد التجهيز") for i in range(300)]
    shipping = [doc(t, f"s{i}", f"الشحن إلى المدينة {i}") for i in range(260)]
    both = [doc(t, f"b{i}", f"الطلب {i} خرج مع الشحن") for i in range(2)]
    for start in range(0, 562, 200):
        await store.put([*orders, *shipping, *both][start:start + 200])
    hits = await store.search(t, "الطلب الشحن", k=5)
    assert len(hits) == 5
    assert {h.record.doc_id for h in hits[:2]} == {"kb:b0", "kb:b1"}
    assert {h.record.doc_id[:4] for h in hits[2:]} == {"kb:s"}
