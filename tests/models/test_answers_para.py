"""Session-7 (para) question typing and subject checks, on dialect text of their own.

The questions are written for these tests (opticians, courier lockers, car
washes), not taken from the bench/data/support sets.
"""

from __future__ import annotations

import pytest

import nlp
from majlis.models import ChatMessage, ModelRequest, OfflineResponder, Recalled, ResponderContext
from majlis.models.answers import QuestionType, question_type, select_answer
from nlp import stop_keys_for

KEYS = nlp.search_keys
STOP = stop_keys_for(KEYS)


def _doc(doc_id: str, title: str, text: str, score: float = 1.0) -> Recalled:
    return Recalled(f"{doc_id}#0", "document", title, text, "", score)


def _compose(question: str, region: str, *docs: Recalled) -> str:
    responder = OfflineResponder(keys=KEYS, expand=nlp.dialect_to_msa,
                                 dialect_cue=nlp.has_dialect_words)
    ctx = ResponderContext(user_text=question, region=region, is_request=True,
                           recalled=tuple(docs))
    request = ModelRequest(messages=(ChatMessage("user", question),), tools=(), context=ctx)
    text, _extras = responder.compose(request)
    return text


@pytest.mark.parametrize(
    ("question", "qtype"),
    [
        ("2addeh se3r el nadara?", QuestionType.QUANTITY),  # levantine arabizi
        ("shgad y5ali el ghasil?", QuestionType.QUANTITY),  # iraqi arabizi
        ("chhal kayt5ales l'lavage?", QuestionType.QUANTITY),  # maghrebi arabizi
        ("wa9tach kat7el l'boutique?", QuestionType.TIME),
        ("mnin nakhod el colis?", QuestionType.PLACE),
        ("kifeh bghayyer el mow3ed?", QuestionType.PROCEDURE),
        ("النظارة قديه حقها؟", QuestionType.QUANTITY),  # levantine قديه
        ("اللافاج قداه؟", QuestionType.QUANTITY),  # maghrebi قداه
        ("اشوكت يفتح المغسل؟", QuestionType.TIME),  # iraqi اشوكت
        ("انهي يوم الفرع بيقفل؟", QuestionType.TIME),  # egyptian «which day»
        ("ina nhar katsadu?", QuestionType.TIME),  # maghrebi «which day»
    ],
)
def test_dialect_and_arabizi_question_words(question: str, qtype: QuestionType) -> None:
    assert question_type(question) is qtype


def test_a_missing_definite_bridged_noun_is_a_missing_subject() -> None:
    # «الكوسيون» (deposit) is a dialect word the bridge reads as «تأمين»; the chunk
    # about washing fees holds no such word, so the subject is missing (plain_missing)
    # and the fee sentence is not quoted for it …
    wash = _doc("wash", "غسيل السيارات", "رسوم غسيل السيارة 30 درهما. يتوفر الغسيل يوميا.")
    found = select_answer("شحال الكوسيون ديال الغسيل؟", [wash], keys=KEYS, stop=STOP,
                          expand=nlp.dialect_to_msa, dialect_cue=nlp.has_dialect_words)
    assert found is not None and found.plain_missing >= 1
    assert "30 درهما" not in _compose("شحال الكوسيون ديال الغسيل؟", "maghrebi", wash)
    # … while the chunk that does hold it answers.
    deposit = _doc("deposit", "التأمين", "يدفع العميل تأمينا قدره 200 درهم عند الاستلام.")
    assert "200 درهم" in _compose("شحال الكوسيون اللي خاصني نخلص؟", "maghrebi", deposit)


def test_two_unmatched_plain_words_need_a_closer_chunk() -> None:
    # The services chunk holds fees, washing, cars, daily and branches, not «الشامبو
    # المعطر»: two plain subjects missing (grounding 0.71) are another product…
    wash = _doc("wash", "الخدمات", "رسوم غسيل السيارة 30 درهما. يتوفر الغسيل يوميا في كل الفروع.",
                score=2.0)
    hours = _doc("hours", "ساعات العمل", "تفتح الفروع من 8 صباحا إلى 10 مساء.")
    two = "شحال رسوم غسيل السيارة يوميا في الفروع بالشامبو المعطر؟"
    found = select_answer(two, [wash, hours], keys=KEYS, stop=STOP,
                          expand=nlp.dialect_to_msa, dialect_cue=nlp.has_dialect_words)
    assert found is not None and found.plain_missing == 2
    assert "30 درهما" not in _compose(two, "maghrebi", wash, hours)
    # … while one missing word («بالشامبو») keeps the ordinary dialect bar.
    one = "شحال رسوم غسيل السيارة يوميا في الفروع بالشامبو؟"
    assert "30 درهما" in _compose(one, "maghrebi", wash, hours)


def test_a_price_question_takes_the_sentence_with_a_currency() -> None:
    # Both sentences name the plan and carry a number; only one says what it costs.
    plan = _doc("plan", "باقة العناية", "تغطي باقة العناية الغسيل لمدة سنتين. "
                "تبلغ رسوم باقة العناية 40 درهما في الشهر.")
    found = select_answer("باقة العناية بكام؟", [plan], keys=KEYS, stop=STOP,
                          expand=nlp.dialect_to_msa, dialect_cue=nlp.has_dialect_words)
    assert found is not None and "40 درهما" in found.text
