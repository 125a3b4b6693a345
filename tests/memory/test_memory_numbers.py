"""Counts written as words or digits meet in both stores (keys: nlp.number_words)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory import Kind, MemoryStore, NewRecord

T = Callable[[str], str]

# Each policy states one duration or amount; two use digits, two use words.
KB = {
    "refund": "يعاد المبلغ إلى البطاقة خلال ثلاثة أيام عمل من استلام المرتجع.",
    "visit": "يصل الفني إلى المنزل خلال ساعتين من تأكيد الموعد.",
    "activation": "يتم تفعيل الشريحة خلال 30 دقيقة من الدفع.",
    "fee": "رسوم إصدار البطاقة البديلة 25 ريالاً.",
}


def _doc(tenant: str, key: str) -> NewRecord:
    return NewRecord(tenant=tenant, kind=Kind.DOCUMENT, id=f"kb:{key}#0", doc_id=f"kb:{key}",
                     title=key, text=KB[key])


@pytest.mark.parametrize(
    ("question", "doc"),
    [
        ("الفلوس بترجع بعد 3 تيام؟", "refund"),  # digits against «ثلاثة أيام»
        ("الفني بيوصل بعد 2 ساعة؟", "visit"),  # digits against the dual «ساعتين»
        ("الشريحة تشتغل بعد نص ساعة؟", "activation"),  # «نص ساعة» against «30 دقيقة»
        ("ادفع خمسة وعشرين ريال؟", "fee"),  # words against «25 ريالاً»
    ],
)
async def test_a_count_in_words_finds_the_count_in_digits(
    store: MemoryStore, tenants: T, question: str, doc: str
) -> None:
    t = tenants("numbers")
    await store.put([_doc(t, key) for key in KB])
    hits = await store.search(t, question, kinds={Kind.DOCUMENT}, k=1)
    assert hits and hits[0].record.doc_id == f"kb:{doc}"
    # The record is stored and shown as written: the digits exist only in the keys.
    assert hits[0].record.text == KB[doc]


async def test_the_count_alone_decides_between_two_durations(
    store: MemoryStore, tenants: T
) -> None:
    t = tenants("numbers")
    # Same words but the count: without digits on both sides the two tie.
    await store.put([
        NewRecord(tenant=t, kind=Kind.DOCUMENT, id="kb:a#0", doc_id="kb:a", title="a",
                  text="التوصيل إلى المدن خلال خمسة أيام."),
        NewRecord(tenant=t, kind=Kind.DOCUMENT, id="kb:b#0", doc_id="kb:b", title="b",
                  text="التوصيل إلى القرى خلال سبعة أيام."),
    ])
    for question, expected in (("التوصيل بياخد 5 ايام؟", "kb:a"),
                               ("التوصيل بياخد 7 ايام؟", "kb:b")):
        hits = await store.search(t, question, kinds={Kind.DOCUMENT}, k=1)
        assert hits and hits[0].record.doc_id == expected, question
