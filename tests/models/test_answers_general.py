"""General answer-selection fixes (lane s5-support), each shown on dialect text of its own.

Not copies of bench questions: the sentences and questions here are written for
these tests, about other products (bookings, pharmacies, gyms, appliances).
"""

from __future__ import annotations

import pytest

import nlp
from majlis.models import ChatMessage, ModelRequest, OfflineResponder, Recalled, ResponderContext
from majlis.models.answers import QuestionType, question_type, select_answer
from majlis.models.qtypes import type_strength
from nlp import stop_keys_for

KEYS = nlp.search_keys
STOP = stop_keys_for(KEYS)


def _doc(doc_id: str, title: str, text: str, score: float = 1.0) -> Recalled:
    return Recalled(f"{doc_id}#0", "document", title, text, "", score)


def _select(question: str, *docs: Recalled):  # type: ignore[no-untyped-def]
    return select_answer(question, list(docs), keys=KEYS, stop=STOP,
                         expand=nlp.dialect_to_msa, dialect_cue=nlp.has_dialect_words)


@pytest.mark.parametrize(
    ("question", "qtype"),
    [
        ("ما مدة صلاحية القسيمة؟", QuestionType.QUANTITY),  # what + a measure noun
        ("شو مواعيد الصيدلية بالعيد؟", QuestionType.TIME),
        ("لأي ساعة فاتحين اليوم؟", QuestionType.TIME),  # which hour
        ("الاشتراك بالنادي قد ايه في الشهر؟", QuestionType.QUANTITY),  # Egyptian قد ايه
        ("حتى لشحال كيبقى العرض؟", QuestionType.QUANTITY),  # ل + شحال
        ("هل يمكن لكم تركيب الستائر؟", QuestionType.YES_NO),  # «لكم» is not «كم»
    ],
)
def test_question_types_beyond_the_wh_word(question: str, qtype: QuestionType) -> None:
    assert question_type(question) is qtype


def test_weak_type_evidence_counts_half() -> None:
    # «قبل» alone is weak evidence of a time; «خلال 3 أيام» is strong.
    assert type_strength("يمكنك تغيير موعد التوصيل قبل الشحن.", QuestionType.TIME) == 0.5
    assert type_strength("يصل المكيف خلال 3 أيام عمل.", QuestionType.TIME) == 1.0
    found = _select("امتى بيوصل المكيف؟", _doc(
        "ac", "توصيل المكيفات",
        "يمكنك تغيير عنوان توصيل المكيف قبل الشحن. يتم توصيل المكيف خلال 3 أيام عمل."))
    assert found is not None and "خلال 3 أيام عمل" in found.text, found


def test_a_procedure_question_gets_the_steps_not_a_sentence_with_khilal() -> None:
    found = _select("كيف بلغي الحجز من التطبيق؟", _doc(
        "book", "الحجوزات",
        "يمكن إلغاء الحجز مجانا خلال يوم من تقديمه. لإلغاء الحجز افتح حجوزاتي ثم اضغط إلغاء."))
    assert found is not None and "اضغط إلغاء" in found.text, found


def test_a_bridged_phrase_does_not_swallow_the_words_beside_it() -> None:
    # «كاش» bridges to «نقدا … الدفع عند الاستلام»; «استلم» written beside it stays a
    # concept of its own, so the sentence naming cash *and* delivery wins.
    found = _select("ينفع ادفع كاش لما استلم الغسالة؟", _doc(
        "pay", "الدفع",
        "نقبل الدفع بالبطاقات البنكية. "
        "لا يتوفر الدفع نقدا عند الاستلام للغسالات والثلاجات."))
    assert found is not None and "لا يتوفر الدفع نقدا عند الاستلام" in found.text, found


def test_dialect_sentence_choice_prefers_the_chunk_about_the_question() -> None:
    # «إلغاء العضوية في أي وقت» shares «إلغاء» and «وقت» by chance; the booking
    # chunk holds the booking the customer is asking about.
    membership = _doc("gym", "العضوية", "يمكنك إلغاء العضوية في أي وقت من التطبيق.", 2.0)
    booking = _doc("book", "الحجوزات",
                   "يمكن إلغاء الحجز مجانا قبل 24 ساعة من الموعد. نرسل تأكيد الحجز برسالة.")
    found = _select("بدي الغي الحجز، قديش معي وقت؟", membership, booking)
    assert found is not None and "قبل 24 ساعة" in found.text, found


def _compose(question: str, region: str, *docs: Recalled) -> str:
    ctx = ResponderContext(user_text=question, region=region, is_request=True,
                           recalled=docs)
    request = ModelRequest(messages=(ChatMessage("user", question),), tools=(), context=ctx)
    responder = OfflineResponder(keys=KEYS, expand=nlp.dialect_to_msa,
                                 dialect_cue=nlp.has_dialect_words)
    text, _extras = responder.compose(request)
    return text


def test_an_unmatched_plain_msa_word_raises_the_dialect_bar() -> None:
    # «الذهب» is no dialect word the bridge failed to read: the fee sentence shares
    # «سعر» and «اليوم» only, so the reply must not quote it.
    fees = _doc("fees", "الرسوم", "سعر التوصيل اليوم 20 ريالا لكل طلب.")
    found = _select("شنو سعر الذهب اليوم عدكم؟", fees)
    assert found is not None and found.plain_missing >= 1
    assert "20 ريالا" not in _compose("شنو سعر الذهب اليوم عدكم؟", "iraqi", fees)
    # The same chunk answers the question it does hold.
    assert "20 ريالا" in _compose("شكد سعر التوصيل اليوم؟", "iraqi", fees)


def test_a_how_long_question_takes_the_sentence_with_a_time_unit() -> None:
    # Both sentences carry a number; only one says how long («24 شهرا», the unit
    # written with tanwin).  A price answers «بكم»; it does not answer «شكد مدة».
    leasing = _doc("leasing", "التأجير", "يبدأ التأجير من 900 ريال للجهاز الواحد. "
                   "تستمر عقود التأجير 24 شهرا قابلة للتجديد.")
    found = _select("شكد مدة التأجير؟", leasing)
    assert found is not None and "24 شهرا" in found.text and "900 ريال" not in found.text
    priced = _select("بكم التأجير للجهاز؟", leasing)
    assert priced is not None and "900 ريال" in priced.text
