"""Answer selection: the sentence answering the question type, negation kept, nothing leaked."""

from __future__ import annotations

import pytest

import nlp
from majlis.models import ChatMessage, ModelRequest, OfflineResponder, Recalled, ResponderContext
from majlis.models.answers import (
    QuestionType,
    display_text,
    display_topic,
    question_type,
    select_answer,
)
from memory.chunking import chunk_document

KEYS = nlp.search_keys
STOP = nlp.stop_keys_for(KEYS)

POLICY = Recalled(
    id="returns.md#0", kind="document", title="returns › سياسة الإرجاع",
    text=(
        "نقبل إرجاع المنتجات وفق الشروط التالية. "
        "يمكن إرجاع المنتج خلال 14 يوما من تاريخ الاستلام. "
        "لا يقبل إرجاع المنتجات المستعملة أو بطاقات الهدايا. "
        "لطلب الإرجاع افتح صفحة طلباتي في التطبيق ثم اختر إرجاع منتج. "
        "يسترد المبلغ في يوم الأحد التالي لاستلام المنتج."
    ),
    snippet="", score=5.0,
)
BRANCHES = Recalled(
    id="branches.md#0", kind="document", title="branches › الفروع",
    text="نرحب بكم في فروعنا. يقع فرعنا الرئيسي في الرياض بشارع العليا.",
    snippet="", score=3.0,
)


@pytest.mark.parametrize(
    ("question", "qtype"),
    [
        ("شكد يوم عندي أرجع الغرض؟", QuestionType.QUANTITY),  # iraqi
        ("قديش الرسوم؟", QuestionType.QUANTITY),  # levantine
        ("بكام التوصيل؟", QuestionType.QUANTITY),  # egyptian
        ("امتى ترجعولي المبلغ؟", QuestionType.TIME),  # egyptian
        ("وقتاش كتحلو؟", QuestionType.TIME),  # maghrebi
        ("فين الفرع؟", QuestionType.PLACE),  # egyptian / maghrebi
        ("هل يمكن إرجاع بطاقة الهدية؟", QuestionType.YES_NO),  # msa
        ("واش نقدر نرجع السلعة؟", QuestionType.YES_NO),  # maghrebi
        ("اكو توصيل للبصرة؟", QuestionType.YES_NO),  # iraqi, no question word
        ("شلون أرجع الطلب؟", QuestionType.PROCEDURE),  # gulf / iraqi
        ("ازاي أعمل طلب إرجاع؟", QuestionType.PROCEDURE),  # egyptian
        ("emta btraj3o el masari?", QuestionType.TIME),  # arabizi
        ("ابي ارجع الطلب", QuestionType.OTHER),
    ],
)
def test_question_type(question: str, qtype: QuestionType) -> None:
    assert question_type(question) is qtype


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("كم يوم عندي عشان ارجع المنتج؟", "خلال 14 يوما"),  # quantity → the number
        ("امتى يرجع المبلغ؟", "يوم الأحد"),  # time → the day
        ("كيف اطلب ارجاع المنتج؟", "افتح صفحة طلباتي"),  # procedure → the steps
        ("وين فرعكم الرئيسي؟", "في الرياض بشارع العليا"),  # place
    ],
)
def test_the_sentence_answering_the_type_is_chosen(question: str, expected: str) -> None:
    found = select_answer(question, [POLICY, BRANCHES], keys=KEYS, stop=STOP,
                          expand=nlp.dialect_to_msa)
    assert found is not None
    assert expected in found.text, found.text


def test_yes_no_answer_keeps_the_negation() -> None:
    found = select_answer("اقدر ارجع بطاقات الهدايا؟", [POLICY], keys=KEYS, stop=STOP,
                          expand=nlp.dialect_to_msa)
    assert found is not None and found.qtype is QuestionType.YES_NO
    assert found.text.startswith("لا يقبل إرجاع المنتجات المستعملة"), found.text


def test_a_dialect_word_matches_its_msa_equivalent_only_through_the_bridge() -> None:
    broken = Recalled("w#0", "document", "الضمان",
                      "يغطي الضمان الأجهزة المعطلة بسبب عيب مصنعي.", "", 1.0)
    without = select_answer("الجهاز خربان", [broken], keys=KEYS, stop=STOP)
    with_bridge = select_answer("الجهاز خربان", [broken], keys=KEYS, stop=STOP,
                                expand=nlp.dialect_to_msa, dialect_cue=nlp.has_dialect_words)
    assert without is not None and with_bridge is not None
    assert with_bridge.chunk_coverage > without.chunk_coverage
    assert with_bridge.dialect


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("## الفروع\nالفرع في الرياض.", "الفرع في الرياض."),
        ("الفرع في الرياض [branches.md].", "الفرع في الرياض ."),
        ("branches › الفروع: الفرع في الرياض", "الفروع: الفرع في الرياض"),
        ("**مهم:** لا يشمل الضمان الكسر.", "مهم: لا يشمل الضمان الكسر."),
    ],
)
def test_display_text_drops_headings_slugs_and_sources(raw: str, shown: str) -> None:
    assert display_text(raw) == shown


def test_display_topic_is_the_arabic_heading_never_the_slug() -> None:
    assert display_topic("branches › الفروع وأوقات العمل") == "الفروع وأوقات العمل"
    assert display_topic("refund-policy") == ""


def test_chunks_keep_the_heading_in_the_title_not_in_the_text() -> None:
    chunks = chunk_document("branches.md", "# الفروع\nفرعنا في الرياض.\n\n## الجمعة\n",
                            title="branches")
    assert chunks[0].title == "branches › الفروع"
    assert chunks[0].text == "فرعنا في الرياض."
    assert chunks[1].text == "الجمعة"  # a heading with no body stays findable


async def test_reply_shows_no_slug_when_it_asks_which_topic() -> None:
    # A partial match asks about the topic by its Arabic heading, never «branches › …».
    ctx = ResponderContext(user_text="بتوصلوا يوم الجمعة للفرع؟", region="egyptian",
                           is_request=True, recalled=(BRANCHES,))
    request = ModelRequest(messages=(ChatMessage("user", ctx.user_text),), tools=(), context=ctx)
    text, _ = OfflineResponder(keys=KEYS, expand=nlp.dialect_to_msa).compose(request)
    assert "branches" not in text and "›" not in text


REFUNDS = Recalled(
    id="refunds.md#0", kind="document", title="refunds › الاسترداد",
    text=(
        "نحرص على رضا عملائنا في كل طلب. "
        "يسترد المبلغ إلى البطاقة خلال 5 أيام عمل من وصول المنتج المرتجع. "
        "تتوفر بطاقات الهدايا بقيم مختلفة."
    ),
    snippet="", score=2.0,
)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        # المنتوج / المنتج and مرتجع / استرجاع meet only by their root.
        ("المنتوج الجديد بيوصل امتى؟", "خلال 5 أيام"),  # maghrebi/egyptian «المنتوج»
        ("المرتجع بيوصل امتى؟", "خلال 4 أيام"),  # levantine
    ],
)
def test_derived_forms_of_one_root_meet(question: str, expected: str) -> None:
    chunk = Recalled("d#0", "document", "التوصيل",
                     "الطلب الجديد يصل خلال 9 أيام. المنتج الجديد يصل خلال 5 أيام. "
                     "طلب الاسترجاع يصل خلال 4 أيام.", "", 1.0)
    found = select_answer(question, [chunk], keys=KEYS, stop=STOP,
                          expand=nlp.dialect_to_msa, dialect_cue=nlp.has_dialect_words)
    assert found is not None and found.dialect and expected in found.text, found


def test_question_frame_words_are_not_required_of_a_dialect_answer() -> None:
    # «يقع» frames «وين»: the branch chunk must not lose grounding for lacking it.
    branch = Recalled("b#0", "document", "الفروع",
                      "فرعنا الرئيسي في جدة بحي الروضة. نرحب بزيارتكم.", "", 1.0)
    found = select_answer("وين يقع الفرع الرئيسي؟", [branch], keys=KEYS, stop=STOP,
                          expand=nlp.dialect_to_msa, dialect_cue=nlp.has_dialect_words)
    assert found is not None and "بحي الروضة" in found.text
    assert found.chunk_coverage == 1.0
    # MSA keeps the ARCD-calibrated matching: every word counts.
    msa = select_answer("أين يقع الفرع الرئيسي؟", [branch], keys=KEYS, stop=STOP)
    assert msa is not None and msa.chunk_coverage < 1.0


def test_arabizi_function_words_are_not_asked_of_the_answer() -> None:
    # «3indi», «3shan» say nothing a policy must contain, like «عندي», «عشان».
    found = select_answer("kam yom 3indi 3shan arja3 el montaj?", [POLICY], keys=KEYS,
                          stop=STOP, expand=nlp.dialect_to_msa, dialect_cue=nlp.has_dialect_words)
    arabic = select_answer("كم يوم عندي عشان ارجع المنتج؟", [POLICY], keys=KEYS, stop=STOP,
                           expand=nlp.dialect_to_msa, dialect_cue=nlp.has_dialect_words)
    assert found is not None and arabic is not None
    assert "خلال 14 يوما" in found.text
    assert found.chunk_coverage == arabic.chunk_coverage
