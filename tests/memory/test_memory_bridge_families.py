"""Support-domain synonym families and everyday support words on both stores: a
question worded with one word finds the policy worded with another, only through the
bridge (nlp/data/bridge.tsv)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from _memory_helpers import put_documents

from memory import Kind, MemoryStore

# One fact each; none shares its key verb with the questions below.
_FAMILY_DOCS = {
    "fees": "تفرض الشركة رسوما إدارية على خطط التقسيط الطويلة.",
    "refund": "يعاد المبلغ إلى وسيلة الدفع الأصلية بعد فحص المرتجع.",
    "block": "عند فقدان البطاقة يتم إيقاف البطاقة فورا من التطبيق.",
    "limit": "الحد الأقصى للتحويل اليومي عشرون ألف ريال.",
    "activate": "تفعيل الشريحة الإلكترونية يتم من صفحة الخدمات.",
}


# Everyday support words (session 8 families): no question below shares a content
# word with its document.
_EVERYDAY_DOCS = {
    "porting": "يمكن نقل الرقم من أي مشغل آخر خلال يوم عمل.",
    "visit": "يزورك الفني في المنزل خلال يومين من البلاغ.",
    "hours": "تعمل المعارض من التاسعة صباحا حتى العاشرة مساء.",
    "advance": "إذا نفد رصيدك يمكنك طلب سلفة بقيمة عشرة ريالات.",
    "lost": "عند فقدان الجوال اتصل بنا لإيقاف الخط مؤقتا.",
    "compensation": "يضاف تعويض إلى حسابك إذا تأخر الإصلاح.",
}


@pytest.mark.parametrize(
    ("docs", "question", "doc"),
    [
        (_FAMILY_DOCS, "هل تحتسبون شي اذا قسطت؟", "fees"),  # msa verb تحتسب → تفرض رسوم
        (_FAMILY_DOCS, "شكد يكصون اذا قسطت؟", "fees"),  # iraqi كص (deduct)
        (_FAMILY_DOCS, "امتى ترجع الفلوس؟", "refund"),  # ترجع الفلوس → يعاد / استرداد
        (_FAMILY_DOCS, "الكرت انسرق، ابي ابلوكه", "block"),  # gulf: بلوك → حظر إيقاف
        # maghrebi: ماكسيمم → الحد الأقصى
        (_FAMILY_DOCS, "شحال الماكسيمم لي نقدر نصيفط فالنهار؟", "limit"),
        (_FAMILY_DOCS, "كيف اشغل الesim؟", "activate"),  # اشغل → تشغيل تفعيل
        (_EVERYDAY_DOCS, "اقدر اجي لكم من شركة ثانية؟", "porting"),  # gulf: شركة ثانية → مشغل آخر
        (_EVERYDAY_DOCS, "الدار ديالي بعيدة، كتجيو؟", "visit"),  # maghrebi: الدار → المنزل
        (_EVERYDAY_DOCS, "لحد امتى فاتحين؟", "hours"),  # egyptian: فاتحين → تعمل, لحد امتى → حتى
        (_EVERYDAY_DOCS, "خلص عندي، تسلفوني؟", "advance"),  # levantine: خلص → نفد, تسلفوني → سلفة
        (_EVERYDAY_DOCS, "موبايلي انباك", "lost"),  # iraqi: انباك → فقدان
        (_EVERYDAY_DOCS, "واش كتعوضو إلا طول؟", "compensation"),  # maghrebi: ~عوض → تعويض
    ],
)
async def test_a_synonym_finds_the_policy_only_through_the_bridge(
    bridged_pair: tuple[MemoryStore, MemoryStore], tenants: Callable[[str], str],
    docs: dict[str, str], question: str, doc: str,
) -> None:
    on, off = bridged_pair
    tenant = tenants("families")
    await put_documents(on, tenant, docs)
    await put_documents(off, tenant, docs)
    hits = await on.search(tenant, question, kinds={Kind.DOCUMENT}, k=1)
    assert hits and hits[0].record.doc_id == doc, [h.record.doc_id for h in hits]
    plain = await off.search(tenant, question, kinds={Kind.DOCUMENT}, k=1)
    assert not plain or plain[0].record.doc_id != doc
