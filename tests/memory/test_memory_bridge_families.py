"""Support-domain synonym families on both stores: a question worded with one verb
finds the policy worded with another, only through the bridge (nlp/data/bridge.tsv)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory import Kind, MemoryStore, NewRecord

# One fact each; none shares its key verb with the questions below.
_DOCS = {
    "fees": "تفرض الشركة رسوما إدارية على خطط التقسيط الطويلة.",
    "refund": "يعاد المبلغ إلى وسيلة الدفع الأصلية بعد فحص المرتجع.",
    "block": "عند فقدان البطاقة يتم إيقاف البطاقة فورا من التطبيق.",
    "limit": "الحد الأقصى للتحويل اليومي عشرون ألف ريال.",
    "activate": "تفعيل الشريحة الإلكترونية يتم من صفحة الخدمات.",
}


async def _ingest(store: MemoryStore, tenant: str) -> None:
    await store.put([
        NewRecord(tenant=tenant, kind=Kind.DOCUMENT, id=f"{d}#0", doc_id=d, title="", text=t)
        for d, t in _DOCS.items()
    ])


@pytest.mark.parametrize(
    ("question", "doc"),
    [
        ("هل تحتسبون شي اذا قسطت؟", "fees"),  # msa verb تحتسب → تفرض رسوم
        ("شكد يكصون اذا قسطت؟", "fees"),  # iraqi كص (deduct)
        ("امتى ترجع الفلوس؟", "refund"),  # ترجع الفلوس → يعاد / استرداد
        ("الكرت انسرق، ابي ابلوكه", "block"),  # gulf: بلوك → حظر إيقاف
        ("شحال الماكسيمم لي نقدر نصيفط فالنهار؟", "limit"),  # maghrebi: ماكسيمم → الحد الأقصى
        ("كيف اشغل الesim؟", "activate"),  # اشغل → تشغيل تفعيل
    ],
)
async def test_a_synonym_finds_the_policy_only_through_the_bridge(
    bridged_pair: tuple[MemoryStore, MemoryStore], tenants: Callable[[str], str], question: str,
    doc: str,
) -> None:
    on, off = bridged_pair
    tenant = tenants("families")
    await _ingest(on, tenant)
    await _ingest(off, tenant)
    hits = await on.search(tenant, question, kinds={Kind.DOCUMENT}, k=1)
    assert hits and hits[0].record.doc_id == doc, [h.record.doc_id for h in hits]
    plain = await off.search(tenant, question, kinds={Kind.DOCUMENT}, k=1)
    assert not plain or plain[0].record.doc_id != doc
