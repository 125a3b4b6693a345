"""Everyday support words (session 8 families of nlp/data/bridge.tsv) on both stores:
a customer's word finds the policy that uses the MSA one, only through the bridge."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memory import Kind, MemoryStore, NewRecord

# One fact each; no question below shares a content word with its document.
_DOCS = {
    "porting": "يمكن نقل الرقم من أي مشغل آخر خلال يوم عمل.",
    "visit": "يزورك الفني في المنزل خلال يومين من البلاغ.",
    "hours": "تعمل المعارض من التاسعة صباحا حتى العاشرة مساء.",
    "advance": "إذا نفد رصيدك يمكنك طلب سلفة بقيمة عشرة ريالات.",
    "lost": "عند فقدان الجوال اتصل بنا لإيقاف الخط مؤقتا.",
    "compensation": "يضاف تعويض إلى حسابك إذا تأخر الإصلاح.",
}


async def _ingest(store: MemoryStore, tenant: str) -> None:
    await store.put([
        NewRecord(tenant=tenant, kind=Kind.DOCUMENT, id=f"{d}#0", doc_id=d, title="", text=t)
        for d, t in _DOCS.items()
    ])


@pytest.mark.parametrize(
    ("question", "doc"),
    [
        ("اقدر اجي لكم من شركة ثانية؟", "porting"),  # gulf: شركة ثانية → مشغل آخر
        ("الدار ديالي بعيدة، كتجيو؟", "visit"),  # maghrebi: الدار → المنزل
        ("لحد امتى فاتحين؟", "hours"),  # egyptian: فاتحين → تعمل, لحد امتى → حتى
        ("خلص عندي، تسلفوني؟", "advance"),  # levantine: خلص → نفد, تسلفوني → سلفة
        ("موبايلي انباك", "lost"),  # iraqi: انباك → فقدان
        ("واش كتعوضو إلا طول؟", "compensation"),  # maghrebi: ~عوض → تعويض
    ],
)
async def test_an_everyday_word_finds_the_policy_only_through_the_bridge(
    bridged_pair: tuple[MemoryStore, MemoryStore], tenants: Callable[[str], str], question: str,
    doc: str,
) -> None:
    on, off = bridged_pair
    tenant = tenants("vocabulary")
    await _ingest(on, tenant)
    await _ingest(off, tenant)
    hits = await on.search(tenant, question, kinds={Kind.DOCUMENT}, k=1)
    assert hits and hits[0].record.doc_id == doc, [h.record.doc_id for h in hits]
    plain = await off.search(tenant, question, kinds={Kind.DOCUMENT}, k=1)
    assert not plain or plain[0].record.doc_id != doc
