"""The Arabizi stage on both stores (memory.arabizi_stage): Arabizi questions whose
content words no lexicon entry knows find the MSA policy through the readings the
tenant's own vocabulary holds; Arabic questions and other tenants are untouched.
Documents and questions written for this test from knowledge of the dialects."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _memory_helpers import put_documents

from memory import Kind, MemoryStore
from memory.arabizi_stage import arabizi_readings, choose_readings
from memory.terms import KeyFunction

_DOCS = {
    "loyalty": "تنتهي صلاحية النقاط بعد اثني عشر شهرا من تاريخ اكتسابها.",
    "protection": "تغطي خطة الحماية الكسر العرضي لمدة سنتين، وللعميل مطالبتان في السنة.",
    "installation": "رسوم تركيب المكيف 150 ريالا، ويتم التركيب خلال ثلاثة أيام.",
    "pickup": "يحتفظ الفرع بالطلب خمسة أيام بعد وصوله، ثم يلغى.",
    "invoice": "ترسل الفاتورة الإلكترونية إلى بريدك بعد الدفع.",
}


@pytest.mark.parametrize(
    ("question", "doc"),
    [
        ("el noqat sal7a la emta?", "loyalty"),  # نقاط، صالحة: ق, ط, ص from q, t, s
        ("khetat el 7imaya btghatti el kasr?", "protection"),  # خطة: ‑at before a genitive
        ("el tarkeeb lal mukayyef bkam?", "installation"),  # تركيب، مكيف
        ("kam yom btdal el talabiya fel far3 ba3d el wusul?", "pickup"),  # وصول
        ("wein ba2dar ala2i el fatoora?", "invoice"),  # فاتورة
    ],
)
async def test_arabizi_content_words_find_the_document(
    bridged_pair: tuple[MemoryStore, MemoryStore], tenants: Callable[[str], str],
    question: str, doc: str,
) -> None:
    on, _off = bridged_pair
    tenant = tenants("arabizi")
    await put_documents(on, tenant, _DOCS)
    hits = await on.search(tenant, question, kinds=[Kind.DOCUMENT], k=3)
    assert hits and hits[0].record.doc_id == doc, [h.record.doc_id for h in hits]
    assert "[[" in hits[0].snippet  # the chosen Arabic reading is what matched


async def test_without_the_bridge_the_same_question_misses(
    bridged_pair: tuple[MemoryStore, MemoryStore], tenants: Callable[[str], str],
) -> None:
    on, off = bridged_pair
    tenant = tenants("arabizi-off")
    await put_documents(on, tenant, _DOCS)
    await put_documents(off, tenant, _DOCS)  # SQLite: its own file; PostgreSQL: the same rows again
    # The one transliteration gives «نوقت», «سلحا»: keys no policy holds.
    question = "el noqat sal7a la emta?"
    assert (await on.search(tenant, question, k=1))[0].record.doc_id == "loyalty"
    missed = await off.search(tenant, question, k=1)
    assert not missed or missed[0].record.doc_id != "loyalty"


async def test_arabic_questions_are_untouched_by_the_stage(
    bridged_pair: tuple[MemoryStore, MemoryStore], tenants: Callable[[str], str],
    keys: KeyFunction,
) -> None:
    on, _off = bridged_pair
    tenant = tenants("arabizi-msa")
    await put_documents(on, tenant, _DOCS)
    # An Arabic question quoting a Latin word is Arabic-dominant: no readings at all.
    for question in ("متى تنتهي صلاحية النقاط؟", "هل يمكن تحميل الفاتورة بصيغة PDF؟"):
        assert arabizi_readings(question, keys) == []
        hits = await on.search(tenant, question, k=1)
        assert hits and hits[0].record.doc_id in _DOCS


async def test_another_tenants_vocabulary_is_never_read(
    bridged_pair: tuple[MemoryStore, MemoryStore], tenants: Callable[[str], str],
) -> None:
    on, _off = bridged_pair
    mine, theirs = tenants("arabizi-a"), tenants("arabizi-b")
    await put_documents(on, theirs, _DOCS)
    await put_documents(on, mine, {"hours": "ساعات العمل من التاسعة صباحا حتى العاشرة مساء."})
    # «tarkeeb» reads as «تركيب» only in the other tenant: no hit of mine is about it,
    # and no hit is theirs.
    hits = await on.search(mine, "el tarkeeb lal mukayyef", k=3)
    assert all(h.record.tenant == mine for h in hits)
    assert not any("تركيب" in h.record.text for h in hits)
    assert (await on.search(theirs, "el tarkeeb lal mukayyef", k=1))[0].record.doc_id \
        == "installation"


def test_readings_are_chosen_by_the_vocabulary_first_reading_wins(keys: KeyFunction) -> None:
    readings = arabizi_readings("el noqat wusal?", keys)
    assert [w for w, _ in readings] == ["noqat", "wusal"]  # «el» is the article
    # The tenant holds «نقاط» and «وصول»; the cheaper «نقت», «وسل» are in no document.
    assert choose_readings(readings, {"نقاط", "وصول"}) == ["نقاط", "وصول"]
    # At most two readings per word, cheapest first: «نقط» before «نقاط», «وصل» before «وصول».
    assert choose_readings(readings, {"نقاط", "نقط", "نقطه", "وصل", "وصول"}) \
        == ["نقط", "نقاط", "وصل", "وصول"]
    assert choose_readings(readings, set()) == []


def test_english_and_function_words_get_no_readings(keys: KeyFunction) -> None:
    assert arabizi_readings("how do i track my order", keys) == []
    # «emta» and «fi» are the lexicon's; «kam» reads as a stopword: no guesses.
    assert arabizi_readings("emta fi kam", keys) == []
