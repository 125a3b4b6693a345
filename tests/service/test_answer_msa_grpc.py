"""MSA questions over gRPC, on both stores: a «كم مرة» question is a count, not a
customer who insists; a question without a question mark is still a question; a
«ما هي…» question gets the sentence that says what its subject is.

The policy is written for this test (a gym's membership), not taken from a bench set.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory import kb
from tests.service.conftest import collect

GYM = ("# العضوية\n\n"
       "تتوفر الباقة الذهبية في جميع فروع النادي.\n"
       "الباقة الذهبية (وتسمى أيضا العضوية الكاملة؛ Gold) هي اشتراك سنوي يشمل المسبح"
       " والصالة والحصص الجماعية.\n"
       "يمكن تجميد الاشتراك مرتين في السنة بحد أقصى 30 يوما في كل مرة.\n")


async def _ask(svc: Any, tmp_path: Path, text: str) -> tuple[str, bool, list[str]]:
    (tmp_path / "gym.md").write_text(GYM, encoding="utf-8")
    await kb.ingest_files(svc.app.store, "default", [tmp_path / "gym.md"])
    events = await collect(svc.client.send(text, user_id="u1", country="SA"))
    quoted = any(e.HasField("memory_cited") and e.memory_cited.quoted for e in events)
    tools = [e.tool_call.name for e in events if e.HasField("tool_call")]
    return str(events[-1].turn_completed.text), quoted, tools


async def test_how_many_times_is_a_question_not_insistence(run_service, tmp_path: Path) -> None:
    async with run_service() as svc:
        reply, quoted, tools = await _ask(svc, tmp_path, "كم مرة يمكن تجميد الاشتراك في السنة؟")
    assert "مرتين في السنة" in reply and quoted
    assert "handoff_to_human" not in tools


async def test_a_question_without_a_question_mark_is_answered(run_service,
                                                              tmp_path: Path) -> None:
    async with run_service() as svc:
        reply, quoted, _tools = await _ask(svc, tmp_path, "ما هي الباقة الذهبية")
    # The definition, whole: the ؛ inside its parenthesis does not end the sentence.
    assert "هي اشتراك سنوي يشمل المسبح" in reply and quoted
