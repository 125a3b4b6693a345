"""Answer choice over gRPC, on both stores: a clearly recalled document answers a
paraphrased question, and a policy question about a card is not an order matter.

The documents are short MSA policies; the questions are worded unlike them («الساعة
كم» for «من 10 صباحا», «الكارط» for «البطاقة»), as customers write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from majlis.models import PhraseBook
from memory import kb
from tests.service.conftest import collect

SAY = PhraseBook.load().say
GENDERS = (None, "m", "f")
DOCS = {
    "instalments.md": "# خطة التقسيط\n\nيمكن تقسيط المشتريات التي تزيد قيمتها على 1500 ريال.\n"
                      "تتوفر خطة التقسيط على 4 أو 8 أشهر.\n"
                      "يسحب القسط من البطاقة في اليوم الخامس من كل شهر.\n",
    "branches.md": "# الفروع\n\nفرعنا الرئيسي في حي العليا بالرياض.\n"
                   "تفتح الفروع من السبت إلى الخميس من 10 صباحا حتى 10 مساء.\n",
    "cards.md": "# البطاقات\n\nيمكن إيقاف البطاقة مؤقتا من صفحة بطاقاتي في التطبيق.\n"
                "يمكن إعادة تفعيل البطاقة الموقوفة من صفحة بطاقاتي.\n"
                "تصدر البطاقة البديلة برسوم 30 ريالا.\n",
}


async def _ingest(svc: Any, tmp_path: Path) -> None:
    paths = []
    for name, text in DOCS.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        paths.append(tmp_path / name)
    await kb.ingest_files(svc.app.store, "default", paths)


async def _ask(svc: Any, text: str, country: str) -> tuple[str, bool]:
    events = await collect(svc.client.send(text, user_id="u1", country=country))
    quoted = any(e.HasField("memory_cited") and e.memory_cited.quoted for e in events)
    return str(events[-1].turn_completed.text), quoted


async def test_a_clear_document_answers_a_question_worded_unlike_it(
    run_service, tmp_path: Path
) -> None:
    async with run_service() as svc:
        await _ingest(svc, tmp_path)
        # «الساعة» is how the customer asks for a time, not a subject the policy lacks.
        reply, quoted = await _ask(svc, "الفرع يفتح الساعة كم؟", "SA")
    assert "من 10 صباحا حتى 10 مساء" in reply and quoted


async def test_a_subject_the_documents_lack_is_still_not_answered(
    run_service, tmp_path: Path
) -> None:
    async with run_service() as svc:
        await _ingest(svc, tmp_path)
        # The instalment document leads the recall, but «الذهب» is in none of it.
        reply, quoted = await _ask(svc, "كم سعر الذهب في التقسيط؟", "SA")
    assert not quoted and "ريال" not in reply


async def test_a_policy_question_about_a_card_does_not_ask_for_an_order_number(
    run_service, tmp_path: Path
) -> None:
    async with run_service() as svc:
        await _ingest(svc, tmp_path)
        reply, _quoted = await _ask(svc, "لقيت الكارط ديالي، واش نقدر نرجعها تخدم؟", "MA")
    assert not any(SAY("ask_order_number", region, gender=g) in reply
                   for region in ("maghrebi", "neutral", "msa") for g in GENDERS)
