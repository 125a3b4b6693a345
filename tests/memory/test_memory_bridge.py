"""Query-side dialect expansion on both stores: dialect questions find MSA documents,
the customer's own words still outrank the lexicon's, and the index is unchanged."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _memory_helpers import put_documents

import nlp
from memory import Kind, MemoryStore
from memory.expansion import weighted_terms
from memory.terms import KeyFunction

_DOCS = {
    "warranty": "يشمل الضمان الأجهزة المعطلة بسبب عيب في التصنيع لمدة سنتين.",
    "delivery": "رسوم التوصيل داخل المدينة 15 ريالا، والتوصيل مجاني للطلبات فوق 200 ريال.",
    "password": "لتغيير كلمة المرور افتح الإعدادات ثم اختر الأمان.",
    "hours": "ساعات العمل من السبت إلى الخميس من التاسعة صباحا حتى العاشرة مساء.",
}


@pytest.mark.parametrize(
    ("question", "doc"),
    [
        ("الجهاز خربان، يشمله؟", "warranty"),  # gulf: خربان → معطل
        ("نسيت الباسورد", "password"),  # كلمة المرور
        ("الدوام يوم الجمعه؟", "hours"),  # ساعات العمل
        ("wesh el daman?", "warranty"),  # arabizi
    ],
)
async def test_dialect_question_finds_the_msa_document(
    bridged: MemoryStore, tenants: Callable[[str], str], question: str, doc: str
) -> None:
    tenant = tenants("bridge")
    await put_documents(bridged, tenant, _DOCS)
    hits = await bridged.search(tenant, question, kinds={Kind.DOCUMENT}, k=2)
    assert hits and hits[0].record.doc_id == doc, [h.record.doc_id for h in hits]


async def test_own_words_outrank_bridge_words(
    bridged: MemoryStore, tenants: Callable[[str], str]
) -> None:
    # «ببلاش» bridges to «مجانا/مجاني» (the delivery text); «كلمة المرور» is
    # the customer's own words and must win.
    tenant = tenants("weight")
    await put_documents(bridged, tenant, _DOCS)
    hits = await bridged.search(tenant, "تغيير كلمة المرور ببلاش؟", kinds={Kind.DOCUMENT}, k=2)
    assert hits[0].record.doc_id == "password"


async def test_without_the_bridge_the_dialect_word_is_not_found(
    store: MemoryStore, tenants: Callable[[str], str]
) -> None:
    # The plain store (no expander) is the baseline the bridge improves on.
    tenant = tenants("plain")
    await put_documents(store, tenant, _DOCS)
    hits = await store.search(tenant, "الباسورد", kinds={Kind.DOCUMENT}, k=2)
    assert hits == []


def test_weighted_terms_keep_own_terms_first_and_unchanged(keys: KeyFunction) -> None:
    plain = weighted_terms("نسيت الباسورد", keys, None)
    bridged = weighted_terms("نسيت الباسورد", keys, nlp.dialect_to_msa)
    assert bridged.own == plain.own
    assert plain.bridged == []
    assert set(keys("كلمة المرور")) <= set(bridged.bridged)
    assert not set(bridged.bridged) & set(bridged.own)
