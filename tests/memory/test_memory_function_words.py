"""Dialect function words (ابي، لازم، بدي …) weigh as bridge words in search, not as the
customer's content words, on both stores; and new-domain dialect words (session 9)
find the MSA policy only through the bridge."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _memory_helpers import put_documents

from memory import Kind, MemoryStore

# «لازم» is in one document only (rare: high IDF); «الحساب» in two (lower IDF).  At full
# weight «لازم» would win the question below for "support"; at the bridge's weight the
# account documents, which hold what the customer asks about, come first.
_DOCS = {
    "close": "يمكن إغلاق الحساب من صفحة الإعدادات في أي وقت.",
    "statement": "يصدر كشف الحساب الشهري في اليوم الأول من الشهر.",
    "support": "نقدم الدعم اللازم لكل عميل عبر المحادثة المباشرة.",
    "hours": "تعمل الفروع من التاسعة صباحا حتى الخامسة مساء.",
}


@pytest.mark.parametrize("question", ["لازم الحساب؟", "ولازم الحساب؟"])
async def test_a_function_word_does_not_outweigh_the_content_word(
    bridged_pair: tuple[MemoryStore, MemoryStore], tenants: Callable[[str], str],
    question: str,
) -> None:
    on, off = bridged_pair
    tenant = tenants("fillers")
    for store in (on, off):
        await put_documents(store, tenant, _DOCS)
        hits = await store.search(tenant, question, kinds={Kind.DOCUMENT}, k=4)
        ranked = [h.record.doc_id for h in hits]
        assert ranked[0] in {"close", "statement"}, ranked
        # Still a search term, at a lower weight: the homograph's document is found.
        assert "support" in ranked, ranked


# New-domain policies (session 9 vocabulary); no question below shares a content word
# with its document.
_DOMAIN_DOCS = {
    "meter": "اطلب فحص العداد إذا شككت في دقته.",
    "leak": "عند ملاحظة تسرب في الأنابيب أغلق المحبس الرئيسي.",
    "uniform": "يباع الزي المدرسي في متجر المدرسة خلال أيام الدوام.",
    "nurse": "تتوفر ممرضة مؤهلة في العيادة طوال اليوم الدراسي.",
    "licence": "تجدد رخصة القيادة إلكترونيا قبل انتهائها بشهر.",
    "tow": "نرسل ساحبة مجانا إذا تعطلت المركبة على الطريق.",
}


@pytest.mark.parametrize(
    ("question", "doc"),
    [
        ("الكونتور ديالي خاسر", "meter"),  # maghrebi: compteur
        ("في فويت تحت الكوزينة", "leak"),  # maghrebi: fuite
        ("المريول من وين نشتريه؟", "uniform"),  # levantine
        ("واش كاينة فرملية؟", "nurse"),  # maghrebi: infirmière
        ("البيرمي ديالي قرب يسالي", "licence"),  # maghrebi: permis
        ("ابي سطحة ضروري", "tow"),  # gulf
    ],
)
async def test_a_new_domain_word_finds_the_policy_only_through_the_bridge(
    bridged_pair: tuple[MemoryStore, MemoryStore], tenants: Callable[[str], str],
    question: str, doc: str,
) -> None:
    on, off = bridged_pair
    tenant = tenants("domains")
    await put_documents(on, tenant, _DOMAIN_DOCS)
    await put_documents(off, tenant, _DOMAIN_DOCS)
    hits = await on.search(tenant, question, kinds={Kind.DOCUMENT}, k=1)
    assert hits and hits[0].record.doc_id == doc, [h.record.doc_id for h in hits]
    plain = await off.search(tenant, question, kinds={Kind.DOCUMENT}, k=1)
    assert not plain or plain[0].record.doc_id != doc


async def test_a_phone_question_does_not_find_the_damage_policy(
    store: MemoryStore, tenants: Callable[[str], str]
) -> None:
    # «تلفون» was keyed «تلف» (damage) before KEYS_VERSION 3 (nlp.lexicon.STEM_KEPT).
    tenant = tenants("phone")
    await put_documents(store, tenant, {
        "damage": "لا يشمل الضمان تلف الجهاز بسبب سوء الاستخدام.",
        "number": "يمكن تغيير رقم التلفون المسجل من صفحة الحساب.",
    })
    hits = await store.search(tenant, "التلفون", kinds={Kind.DOCUMENT}, k=5)
    assert [h.record.doc_id for h in hits] == ["number"]
