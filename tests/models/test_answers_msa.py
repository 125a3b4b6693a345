"""MSA answer selection (issue #10's ARCD target), each fix shown on text written
for the test: a definition question, and sentences cut inside a parenthesis.
"""

from __future__ import annotations

import pytest

import nlp
from majlis.models import Recalled
from majlis.models.answers import QuestionType, question_type, select_answer
from majlis.models.extract import split_sentences
from majlis.models.qtypes import type_strength

KEYS = nlp.search_keys
STOP = nlp.stop_keys_for(KEYS)

SAFFRON = Recalled(
    "saffron#0", "document", "الزعفران",
    "يزرع الزعفران في إيران وإسبانيا والمغرب. "
    "الزعفران (بالإنجليزية: Saffron؛ وبالفارسية: زعفران) هو توابل تستخرج من مياسم"
    " زهرة الزعفران. "
    "يستخدم الزعفران في الطبخ وفي صناعة العطور.",
    "", 4.0,
)


@pytest.mark.parametrize(
    ("question", "qtype"),
    [
        ("ما هو الزعفران؟", QuestionType.DEFINITION),
        ("ماهي الباقة الذهبية", QuestionType.DEFINITION),
        ("من هو مؤسس الشركة؟", QuestionType.DEFINITION),
        ("شو هي الباقة الذهبية؟", QuestionType.DEFINITION),  # levantine
        ("ما معنى الدفع الآجل؟", QuestionType.DEFINITION),
        ("ما هي مدة الضمان؟", QuestionType.QUANTITY),  # a measure noun still decides
        ("ما هي الفروع التي تفتح يوم الجمعة؟", QuestionType.OTHER),  # an attribute asked
        ("ما هو اول فرع افتتحته الشركة في جدة؟", QuestionType.OTHER),  # too long a subject
    ],
)
def test_what_is_asks_a_definition(question: str, qtype: QuestionType) -> None:
    assert question_type(question) is qtype


def test_a_definition_question_gets_the_sentence_that_opens_with_its_subject() -> None:
    answer = select_answer("ما هو الزعفران؟", [SAFFRON], keys=KEYS, stop=STOP)
    assert answer is not None
    assert answer.text.startswith("الزعفران (بالإنجليزية") and "هو توابل" in answer.text


def test_a_copula_alone_is_weak_definition_evidence() -> None:
    # «وهو» stands in sentences about other things too; only the subject first is strong.
    assert type_strength("وهو ما يعادل ثلاثة أيام.", QuestionType.DEFINITION) == 0.5
    assert type_strength("يزرع في إيران.", QuestionType.DEFINITION) == 0.0


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("الباقة (أو العضوية؛ Gold) هي اشتراك سنوي. تتوفر في كل الفروع.",
         ["الباقة (أو العضوية؛ Gold) هي اشتراك سنوي.", "تتوفر في كل الفروع."]),
        ("السعر 30 ريالا (يشمل الضريبة. والتوصيل) لكل طلب.",
         ["السعر 30 ريالا (يشمل الضريبة. والتوصيل) لكل طلب."]),
        # An unclosed parenthesis is no bracket: the boundaries stand.
        ("يفتح الفرع الرئيسي (صباحا. ويغلق الفرع مساء. كل يوم من أيام الأسبوع",
         ["يفتح الفرع الرئيسي (صباحا.", "ويغلق الفرع مساء.", "كل يوم من أيام الأسبوع"]),
    ],
)
def test_a_sentence_does_not_end_inside_a_parenthesis(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences
