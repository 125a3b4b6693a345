"""Cues read from whole words in real dialect text, every region and Arabizi."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from majlis.culture import read_cues


def test_greeting_with_request_keeps_both() -> None:
    cues = read_cues("هلا، عندي مشكلة في الحساب")
    assert cues.openers == ("hala",)
    assert cues.request and cues.complaint
    assert not cues.farewell


@pytest.mark.parametrize("text", [
    "عندي مشكلة في تطبيق الموبايل",        # باي inside الموبايل
    "الموبايل ما يشتغل",
    "ابي ارجع جهاز البايكو",                # "باي" inside another word
    "سلامتك من كل شر، وين طلبي؟",          # سلام inside سلامتك
    "Mobile app fih moshkela",
    "ابي اعرف بأي وقت تفتحون",              # بأي ('with which') folds to باي
    "تقدر تحولي الفلوس بأي طريقة؟",
])
def test_substrings_never_make_a_farewell(text: str) -> None:
    cues = read_cues(text)
    assert not cues.farewell
    assert cues.business


@pytest.mark.parametrize(("text", "opener"), [
    ("السلام عليكم، ابي اغير الباقة", "salam"),               # Gulf
    ("ازيك، عايز اعرف الفاتورة بكام", "izzayak"),             # Egyptian
    ("مرحبا، بدي غير كلمة السر", "marhaba"),                  # Levantine
    ("سلام، بغيت نبدل الكارطة", "salam_short"),               # Maghrebi
    ("هلو، اريد اعرف شلون اسدد", "hala"),                      # Iraqi
    ("السلام عليكم، أود الاستفسار عن رصيدي", "salam"),         # MSA
    ("salam, 3ayez a3raf el fatoora", "salam_short"),         # Arabizi
])
def test_greeting_plus_request_in_every_region(text: str, opener: str) -> None:
    cues = read_cues(text)
    assert opener in cues.openers
    assert cues.business


@pytest.mark.parametrize("text", [
    "شكرا", "مشكور ما قصرت", "متشكر جدا", "تسلم ايدك", "يعطيك العافية", "بارك الله فيك",
    "جزاك الله خير", "thanks a lot", "thx", "merci", "shukran", "tislam",
])
def test_thanks(text: str) -> None:
    cues = read_cues(text)
    assert cues.thanks and not cues.business


@pytest.mark.parametrize("text", [
    "مع السلامة", "يلا باي", "في أمان الله", "الله معاك", "تصبح على خير",
    "bye", "yalla bye", "ma3a salama", "bslama", "شكرا، سلام",
])
def test_farewell(text: str) -> None:
    cues = read_cues(text)
    assert cues.farewell and not cues.business


@pytest.mark.parametrize(("text", "wellbeing"), [
    ("شلونك", True), ("شخبارك طال عمرك", True), ("كيفك", True), ("ازيك يا باشا", True),
    ("واش راك خويا", True), ("لاباس عليك", True), ("shlonak", True), ("kifak", True),
    ("صباح الخير", False), ("مرحبا", False),
])
def test_wellbeing(text: str, wellbeing: bool) -> None:
    cues = read_cues(text)
    assert cues.openers
    assert cues.wellbeing is wellbeing
    assert not cues.question  # كيف in كيف حالك is a greeting, not a business question


@pytest.mark.parametrize("text", [
    "متى يوصل الطلب؟", "ليش الفاتورة عالية", "فين الشحنة", "قديش سعر الباقة",
    "علاش تحبس الكونط", "wein el order?", "كم رسوم التحويل؟",
    "ما هي الباقة الذهبية", "من هو المسؤول عن الفرع", "في أي فرع يتوفر المنتج",  # no «؟»
])
def test_questions(text: str) -> None:
    assert read_cues(text).question


@pytest.mark.parametrize("text", [
    "كم مرة يمكن تجميد الاشتراك؟", "كم مرة فيني قدم مطالبة؟", "كم مرة يمديني اغير الموعد",
])
def test_how_many_times_asks_a_count_not_for_a_person(text: str) -> None:
    cues = read_cues(text)
    assert cues.question and not cues.insistence


def test_a_greeting_with_a_question_mark_is_not_a_business_question() -> None:
    assert not read_cues("شلونك؟").question
    assert read_cues("شلونك؟ وين طلبي؟").question


@pytest.mark.parametrize("text", [
    "ابي اكلم موظف", "حولني على موظف حقيقي", "بدي احكي مع موظف", "عايز اكلم حد من خدمة العملاء",
    "I want a human agent", "قلت لك الرقم غلط", "كم مرة اتصلت عليكم والمشكلة نفسها",
])
def test_insistence(text: str) -> None:
    cues = read_cues(text)
    assert cues.insistence and cues.request


@pytest.mark.parametrize(("text", "frustrated"), [
    ("زهقت من هالخدمة", True), ("للمرة الثالثة اكلمكم!!", True), ("مفيش فايدة", True),
    ("وين الطلب!!!", True), ("ما في فايدة معكم", True), ("شكرا", False), ("عندي سؤال", False),
])
def test_frustration(text: str, frustrated: bool) -> None:
    assert read_cues(text).frustration is frustrated


@pytest.mark.parametrize(("text", "gender"), [
    ("انا تعبانة من هالمشكلة", "f"),
    ("أنا تعبان من هالمشكلة", "m"),
    ("انا مش متأكدة من الرقم", "f"),
    ("عايزة اغير الباقة", "f"),
    ("عايز اغير الباقة", "m"),
    ("ana ta3bana", "f"),
    ("انا فاطمة وعندي مشكلة", None),    # a name is never a gender cue
    ("انا محمد", None),
    ("هي تعبانة", None),                 # about someone else
    ("زوجتي مريضة، ابي موعد", None),
])
def test_self_gender_only_from_own_words(text: str, gender: str | None) -> None:
    assert read_cues(text).self_gender == gender


@pytest.mark.parametrize(("text", "formality"), [
    ("السلام عليكم ورحمة الله وبركاته، أرجو إفادتي", "formal"),
    ("لو تكرمت حضرتك", "formal"),
    ("هلا حبيبي", "casual"),
    ("ههههه تمام", "casual"),
    ("yalla 7abibi", "casual"),
    ("عندي سؤال عن الفاتورة", "neutral"),
])
def test_formality(text: str, formality: str) -> None:
    assert read_cues(text).formality == formality



@pytest.mark.parametrize(("text", "opener"), [
    ("بس هلا الفاتورة صارت اعلى", None),        # Levantine هلأ 'now', mid-sentence
    ("فيه السلام و الأمان", None),             # السلام 'peace', mid-sentence
    ("السلامة المرورية اولا", None),           # السلامة 'safety' is not بسلامة at the start
    ("باي باي مصر", None),
    ("هلا، وين طلبي؟", "hala"),
    ("سلام، عندي سؤال", "salam_short"),
])
def test_ambiguous_greeting_words_count_only_at_the_edges(text: str, opener: str | None) -> None:
    assert read_cues(text).openers == ((opener,) if opener else ())


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("سلامعيكمباهشكرو بيlsamhbye?!؟،3 7")), max_size=60))
def test_any_text_reads_without_error_and_business_implies_a_cue(text: str) -> None:
    cues = read_cues(text)
    assert cues.business == (cues.request or cues.question or cues.complaint or cues.insistence)
    if cues.wellbeing:
        assert cues.openers


@pytest.mark.parametrize("text", ["", "   ", "😀😀", "12345", "؟"])
def test_empty_or_contentless_text_has_no_cues(text: str) -> None:
    cues = read_cues(text)
    assert not cues.openers and not cues.closers and not cues.business


@pytest.mark.parametrize("text", [
    "وش رقم خدمة العملاء؟", "ما البريد الإلكتروني لخدمة العملاء؟", "شو رقم واتساب خدمة العملاء",
    "امتى دوام خدمة العملاء؟", "what is the customer service email?",
])
def test_asking_about_customer_service_is_a_question_not_a_handoff(text: str) -> None:
    cues = read_cues(text)
    assert cues.question and not cues.insistence


@pytest.mark.parametrize("text", [
    "خدمة العملاء", "ابي خدمة العملاء", "ممكن اكلم خدمة العملاء؟", "حولني على خدمة العملاء",
])
def test_wanting_customer_service_still_asks_for_a_person(text: str) -> None:
    assert read_cues(text).insistence
