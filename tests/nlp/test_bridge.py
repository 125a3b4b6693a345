"""The dialect → MSA search bridge: real dialect questions in, the MSA words a policy uses out."""

from __future__ import annotations

import pytest
from _bridge_cases import assert_expands_to

import nlp
from nlp.bridge import load_bridge, parse_bridge


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("الجهاز خربان، يشمله الضمان؟", {"معطل", "يشمل"}),  # gulf
        ("الموبايل بايظ، أعمل ايه؟", {"معطل", "هاتف", "ماذا"}),  # egyptian
        ("قديش رسوم التوصيل لبيروت؟", {"كم"}),  # levantine
        ("بدي رجّع الغرض، شو لازم أعمل؟", {"أريد", "ماذا", "المنتج"}),  # levantine
        ("واش كاين التوصيل فابور؟", {"هل", "يوجد", "مجانا"}),  # maghrebi
        ("التيليفون خاسر، علاش؟", {"هاتف", "معطل", "لماذا"}),  # maghrebi
        ("شكد تاخذ الحوالة؟ هسه حولت", {"كم", "تحويل", "الآن"}),  # iraqi
        ("اكو فرع بالكرادة؟", {"يوجد"}),  # iraqi
        ("نسيت الباسورد تبع الاكونت", {"كلمة", "المرور", "حساب"}),
        ("ادفع كاش ولا بالكرت؟", {"نقدا", "بطاقة"}),
        ("الدوام يوم الجمعه؟", {"ساعات", "العمل", "الجمعة"}),
        ("فلوسي امتى ترجعولي؟", {"مال", "متى", "استرداد"}),
        ("emta btefta7o yom el jom3a?", {"متى", "مفتوح", "الجمعة"}),  # arabizi
        ("3ayez a3mel refund", {"أريد", "استرداد"}),  # arabizi
        ("wen a2rab far3?", {"أين", "فرع"}),  # arabizi
        ("المنتوج وصلني مكسور، نقدر نرجعو؟", {"المنتج"}),  # maghrebi
        ("التركيب بفلوس ولا ببلاش؟", {"رسوم", "مجانا"}),  # egyptian
        ("في مكان صف سيارات قدام المحل؟", {"مواقف", "السيارات"}),  # levantine
        ("رقم الخط مالتكم؟", {"لديكم"}),  # iraqi
        ("momken adfa3 3and el estelam?", {"الاستلام", "يمكن"}),  # arabizi
        ("مسحت التطبيق بالغلط", {"حذف"}),  # gulf / levantine
        ("كيف اعرف وين الطرد؟", {"تتبع"}),  # gulf
        ("3indi so2al 3shan el talab", {"لدي", "لأن"}),  # arabizi function words
    ],
)
def test_dialect_questions_get_msa_words(question: str, expected: set[str]) -> None:
    assert_expands_to(question, expected)


@pytest.mark.parametrize(
    "question",
    [
        "في أي عام ولد الشاعر أحمد شوقي؟",
        "ما عاصمة المملكة العربية السعودية؟",
        "متى تأسست جامعة القاهرة؟",
    ],
)
def test_plain_msa_questions_are_left_alone(question: str) -> None:
    # MSA queries must not change: ARCD retrieval depends on it.
    assert nlp.dialect_to_msa(question) == []


def test_proclitics_and_enclitics_are_tolerated() -> None:
    assert "الآن" in nlp.dialect_to_msa("والحين وش صار؟")
    assert "ساعات" in nlp.dialect_to_msa("دوامكم كيف؟")
    assert "كيف" in nlp.dialect_to_msa("شلونك")


def test_phrases_match_consecutive_words_only() -> None:
    assert {"لا", "يعمل", "معطل"} <= set(nlp.dialect_to_msa("الجهاز ما يشتغل"))
    bridge = parse_bridge("ما يشتغل\tمعطل\n")
    assert bridge.expand("ما عندي شي يشتغل") == []


def test_every_shipped_entry_maps_to_words() -> None:
    bridge = load_bridge()
    assert len(bridge.entries) > 500
    assert all(msa and all(w.strip() for w in msa) for msa in bridge.entries.values())


def test_bad_lines_name_the_line() -> None:
    with pytest.raises(ValueError, match=r"bridge\.tsv:2"):
        parse_bridge("خربان\tمعطل\nبس كلمة\n")


@pytest.mark.parametrize(
    ("text", "dialect"),
    [
        ("الجهاز خربان", True),  # gulf
        ("الضمان بيغطي الكسر؟", True),  # egyptian بـ imperfect of a known verb
        ("واش كاين التوصيل؟", True),  # maghrebi
        ("wesh el daman?", True),  # arabizi
        ("هل يشمل الضمان الكسر؟", False),  # MSA, though «يشمل» is in the lexicon
        ("متى ولد الشاعر في بيروت؟", False),  # MSA: «بيروت» is no dialect verb
    ],
)
def test_dialect_words_are_told_from_msa_ones(text: str, dialect: bool) -> None:
    assert nlp.has_dialect_words(text) is dialect
