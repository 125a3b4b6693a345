"""Choosing across recalled chunks: what a chunk says about the question, and every chunk.

Written for these tests about a sports club and a public library (no bench
wording): a dialect question's sentence score adds its chunk's title and
retrieval score (answers._chunk_priors), the responder reads every chunk recalled
before the first three alone (OfflineResponder.choose), and a dual time unit
(«ساعتين», «سنتين») is a time unit, and «يصل» meets «بيوصل» (word_forms.assimilated_root).
"""

from __future__ import annotations

import pytest

import nlp
from majlis.models.answers import Answer, QuestionType, question_type, select_answer
from majlis.models.offline import OfflineResponder
from majlis.models.qtypes import type_strength
from majlis.models.types import Recalled
from nlp import stop_keys_for

KEYS = nlp.search_keys
STOP = stop_keys_for(KEYS)


def _chunk(chunk_id: str, title: str, text: str, score: float) -> Recalled:
    return Recalled(chunk_id, "document", title, text, "", score)


def _select(question: str, recalled: list[Recalled]) -> Answer | None:
    return select_answer(question, recalled, keys=KEYS, stop=STOP, expand=nlp.dialect_to_msa,
                         dialect_cue=nlp.has_dialect_words)


def _responder() -> OfflineResponder:
    return OfflineResponder(keys=KEYS, expand=nlp.dialect_to_msa,
                            dialect_cue=nlp.has_dialect_words)


GYM = _chunk("gym.md#0", "gym › الصالة الرياضية",
             "تفتح الصالة الرياضية بجانب المسبح يوميا من 9 صباحا.", 1.0)
POOL = _chunk("pool.md#0", "pool › المسبح", "يفتح المسبح بعد انتهاء أعمال الصيانة.", 1.5)


@pytest.mark.parametrize("recalled", [[GYM, POOL], [POOL, GYM]], ids=["gym-first", "pool-first"])
def test_the_chunk_titled_with_the_subject_beats_a_chance_match(recalled: list[Recalled]) -> None:
    # Both sentences hold «يفتح» and «المسبح»; the gym's carries a clock time, which
    # alone used to win.  The question is about the pool, whose chunk is titled so
    # and ranked higher by retrieval: its sentence answers, whatever the order.
    found = _select("امتى بيفتح المسبح؟", recalled)
    assert found is not None and found.dialect
    assert found.source.id == "pool.md#0"
    assert found.text == "يفتح المسبح بعد انتهاء أعمال الصيانة."


def test_msa_questions_keep_the_score_without_chunk_priors() -> None:
    # ARCD calibrated the MSA path on coverage and type alone: the gym's clock time
    # still wins an MSA question (the priors are for dialect questions only).
    found = _select("متى يفتح المسبح؟", [GYM, POOL])
    assert found is not None and not found.dialect
    assert found.source.id == "gym.md#0"


LIBRARY = [
    _chunk("account.md#0", "account › الحساب",
           "لإعادة تعيين كلمة المرور أدخل رقم بطاقتك في صفحة الدخول.", 2.8),
    _chunk("returns.md#1", "returns › الإرجاع › طريقة الإرجاع",
           "لإرجاع الكتاب ضعه في صندوق الإرجاع عند باب المكتبة. "
           "يمكن تمديد الاستعارة مرة واحدة خلال 30 يوما.", 1.6),
    _chunk("fines.md#0", "fines › الغرامات", "غرامة التأخير ريال واحد عن كل يوم.", 1.5),
    _chunk("returns.md#0", "returns › الإرجاع",
           "يمكن إرجاع الكتاب خلال 14 يوما من تاريخ الاستعارة.", 1.5),
]


def test_a_dialect_question_is_answered_from_every_chunk_recalled() -> None:
    # The first three chunks alone give a grounded answer about *how* to return
    # (and «30 يوما» of an extension); the fourth says how long one has.  The
    # responder reads all five (here four) first, the top three only as a fallback.
    responder = _responder()
    question = "كم يوم عندي عشان ارجع الكتاب؟"
    top = _select(question, LIBRARY[:3])
    assert top is not None and responder._grounded(top)
    assert "14 يوما" not in top.text
    found = responder.choose(question, LIBRARY)
    assert found is not None and responder._grounded(found)
    assert found.text == "يمكن إرجاع الكتاب خلال 14 يوما من تاريخ الاستعارة."


def test_the_top_chunks_answer_when_every_chunk_gives_nothing_grounded() -> None:
    # Nothing recalled answers «الدولار»: choose still returns the top chunks'
    # best (ungrounded) answer, whose topic a clarifying question may name.
    responder = _responder()
    found = responder.choose("شنو سعر الدولار اليوم؟", LIBRARY)
    assert found is None or not responder._grounded(found)
    if found is not None:
        assert found.source in LIBRARY[:3]


@pytest.mark.parametrize("sentence", [
    "يمكن إلغاء الحجز خلال ساعتين من تقديمه.",
    "تبقى البطاقة صالحة سنتين.",
    "يصل رمز التحقق خلال دقيقتين.",
])
def test_a_dual_time_unit_is_strong_time_evidence(sentence: str) -> None:
    # «ساعتين» is two hours: as much a duration as «3 ساعات» (it used to count
    # only as the weak «خلال»).
    assert type_strength(sentence, QuestionType.TIME) == 1.0


def test_an_imperfect_that_lost_its_waw_meets_the_verb_asked() -> None:
    # «يصل» is وصل with its و fallen (as «يضع», «يجد»): «بيوصل» meets it by the
    # root ^وصل, so the sentence saying when the parcel arrives beats the one that
    # only shares «التوصيل» with the question.
    parcels = _chunk("parcels.md#0", "parcels › الطرود",
                     "يمكنك تغيير عنوان التوصيل قبل خروج الطرد من المستودع. "
                     "يصل الطرد العادي خلال يومين إلى أربعة أيام عمل.", 1.0)
    found = _select("الطرد بيوصل امتى؟", [parcels])
    assert found is not None
    assert found.text == "يصل الطرد العادي خلال يومين إلى أربعة أيام عمل."


@pytest.mark.parametrize(("question", "qtype"), [
    ("المكتبة بتفتح الساعة كام الصبح؟", QuestionType.TIME),
    ("لحد الساعة كم تستقبلون الكتب؟", QuestionType.TIME),
    ("كم ساعة تاخذ الصيانة؟", QuestionType.QUANTITY),
    ("الموقف قديش الساعة؟", QuestionType.QUANTITY),
])
def test_the_hour_before_a_quantity_word_asks_a_clock_time(question: str,
                                                           qtype: QuestionType) -> None:
    assert question_type(question) is qtype


def test_opening_hours_written_in_words_answer_the_hour_asked() -> None:
    # «من التاسعة صباحا» carries no digit: read as a quantity question, «الساعة كام»
    # preferred any sentence with a number.
    library = _chunk("hours.md#0", "hours › أوقات العمل",
                     "تفتح المكتبة من التاسعة صباحا حتى الثامنة مساء. "
                     "يمكن استعارة 5 كتب في المرة الواحدة من المكتبة.", 1.0)
    found = _select("المكتبة بتفتح الساعة كام؟", [library])
    assert found is not None and found.qtype is QuestionType.TIME
    assert found.text == "تفتح المكتبة من التاسعة صباحا حتى الثامنة مساء."


def test_how_will_i_know_is_answered_by_how_one_is_told() -> None:
    # «كيف اعرف…؟» asks how the customer learns of something: the sentence saying a
    # message is sent answers, not a step that shares «الكتاب» and «وصل».
    holds = _chunk("holds.md#0", "holds › حجز الكتب",
                   "يمكن حجز الكتاب من صفحة الكتاب ثم اضغط زر حجز حتى وصول النسخة. "
                   "نرسل لك رسالة نصية فور وصول الكتاب المحجوز إلى الفرع.", 1.0)
    found = _select("شلون اعرف ان الكتاب وصل؟", [holds])
    assert found is not None and found.qtype is QuestionType.PROCEDURE
    assert "نرسل لك رسالة نصية" in found.text
