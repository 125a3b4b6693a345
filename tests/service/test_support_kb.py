"""Dialect questions over short MSA policy documents, through the whole service, on both stores.

The documents are Markdown files named by slug (``warranty.md``) with headings;
the customer asks in Gulf, Egyptian, Levantine, Maghrebi, Iraqi and Arabizi.
The reply must hold the fact, keep a negation, cite the document in
``memory_cited`` only, and never show the file name, slug or heading.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from diwaniya.client import AsyncClient
from memory import kb
from tests.service.conftest import collect

DOCS = {
    "warranty.md": (
        "# الضمان\n\n"
        "تشمل الأجهزة الإلكترونية ضمانا لمدة سنتين من تاريخ الشراء.\n"
        "لا يشمل الضمان الكسر أو الضرر الناتج عن السوائل.\n"
        "لتفعيل الضمان أحضر الجهاز مع الفاتورة إلى أقرب مركز صيانة معتمد.\n"
    ),
    "delivery.md": (
        "# التوصيل\n\n"
        "رسوم التوصيل 25 ريالا، والتوصيل مجاني للطلبات التي تزيد على 200 ريال.\n"
        "لا يتم التوصيل يوم الجمعة.\n"
    ),
    "branches.md": (
        "# الفروع وأوقات العمل\n\n"
        "فرعنا الرئيسي في الرياض في شارع التحلية.\n"
        "تفتح الفروع من السبت إلى الخميس من الساعة 10 صباحا حتى 11 مساء.\n"
    ),
    "account.md": (
        "# الحساب\n\n"
        "لإعادة تعيين كلمة المرور اضغط على نسيت كلمة المرور في صفحة الدخول.\n"
    ),
}
# What must never be shown: a file name, a slug path, a Markdown heading, a [source].
LEAK = re.compile(r"\.md\b|›|(^|\s)#|\[|\b(?:warranty|delivery|branches|account)\b")


@pytest.fixture
def docs(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "kb"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return sorted(folder.iterdir())


async def _ask(client: AsyncClient, text: str) -> tuple[str, list[str]]:
    events = await collect(client.send(text, user_id=f"c-{uuid.uuid4().hex[:6]}"))
    quoted = [e.memory_cited.memory_id for e in events
              if e.HasField("memory_cited") and e.memory_cited.quoted]
    return events[-1].turn_completed.text, quoted


@pytest.mark.parametrize(
    ("question", "fact", "doc"),
    [
        ("الجوال طاح وانكسر، يشمله الضمان؟", "لا يشمل الضمان الكسر", "warranty.md"),  # gulf
        ("الضمان بيغطي كام سنة؟", "سنتين", "warranty.md"),  # egyptian
        ("قديش رسوم التوصيل؟", "25 ريالا", "delivery.md"),  # levantine
        ("واش كتوصلو نهار الجمعة؟", "لا يتم التوصيل يوم الجمعة", "delivery.md"),  # maghrebi
        ("وين فرعكم الرئيسي؟", "شارع التحلية", "branches.md"),  # gulf / iraqi
        ("nseet el password, shlon asawi?", "نسيت كلمة المرور", "account.md"),  # arabizi
    ],
)
async def test_dialect_question_gets_the_fact_from_the_msa_document(
    run_service, docs: list[Path], question: str, fact: str, doc: str
) -> None:
    tenant = f"kb-{uuid.uuid4().hex[:8]}"
    async with run_service(api_keys={"key": tenant}) as svc:
        await kb.ingest_files(svc.app.store, tenant, docs)
        async with AsyncClient(svc.target, api_key="key") as client:
            reply, quoted = await _ask(client, question)
    assert fact in reply, reply
    assert quoted and all(q.startswith(doc) for q in quoted), quoted
    assert not LEAK.search(reply), reply


async def test_unanswerable_question_is_not_answered_and_nothing_leaks(
    run_service, docs: list[Path]
) -> None:
    tenant = f"kb-{uuid.uuid4().hex[:8]}"
    async with run_service(api_keys={"key": tenant}) as svc:
        await kb.ingest_files(svc.app.store, tenant, docs)
        async with AsyncClient(svc.target, api_key="key") as client:
            replies = [await _ask(client, q) for q in (
                "عندكم برنامج نقاط ولاء؟", "بتبيعوا قطع غيار للسيارات؟", "شنو اسم مدير الشركة؟")]
    for reply, quoted in replies:
        assert quoted == [], reply
        assert not LEAK.search(reply), reply


CONTACT = (
    "# التواصل\n\n"
    "خدمة العملاء متاحة على الرقم 8001234567 يوميا من 9 صباحا حتى 10 مساء.\n"
    "البريد الإلكتروني لخدمة العملاء care@example.sa ونرد خلال يوم عمل.\n"
)


@pytest.mark.parametrize(
    ("question", "fact"),
    [
        ("وش رقم خدمة العملاء؟", "8001234567"),  # gulf
        ("ما البريد الإلكتروني لخدمة العملاء؟", "care@example.sa"),  # msa
    ],
)
async def test_asking_about_customer_service_is_answered_not_handed_off(
    run_service, tmp_path: Path, question: str, fact: str
) -> None:
    tenant = f"kb-{uuid.uuid4().hex[:8]}"
    (tmp_path / "contact.md").write_text(CONTACT, encoding="utf-8")
    user = f"cs-{uuid.uuid4().hex[:6]}"
    async with run_service(api_keys={"key": tenant}) as svc:
        await kb.ingest_files(svc.app.store, tenant, [tmp_path / "contact.md"])
        async with AsyncClient(svc.target, api_key="key") as client:
            events = await collect(client.send(question, user_id=user))
            thread = await client.get_thread(events[-1].thread_id, user_id=user)
    kinds = {e.WhichOneof("event") for e in events}
    assert fact in events[-1].turn_completed.text, events[-1].turn_completed.text
    assert not {"tool_call", "handoff"} & kinds
    assert not thread.handed_off


async def test_a_request_for_customer_service_still_hands_off(
    run_service, tmp_path: Path
) -> None:
    tenant = f"kb-{uuid.uuid4().hex[:8]}"
    (tmp_path / "contact.md").write_text(CONTACT, encoding="utf-8")
    user = f"cs-{uuid.uuid4().hex[:6]}"
    async with run_service(api_keys={"key": tenant}) as svc:
        await kb.ingest_files(svc.app.store, tenant, [tmp_path / "contact.md"])
        async with AsyncClient(svc.target, api_key="key") as client:
            events = await collect(client.send("ابي اكلم خدمة العملاء", user_id=user))
            thread = await client.get_thread(events[-1].thread_id, user_id=user)
    assert thread.handed_off
