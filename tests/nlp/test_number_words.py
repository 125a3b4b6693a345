"""Counts as digits in search keys: real dialect and MSA phrasing, both directions."""

from __future__ import annotations

import pytest

import nlp
from nlp.normalize import clean, fold
from nlp.number_words import number_words_to_digits


def _digits(text: str) -> list[str]:
    return number_words_to_digits(fold(clean(text)).split())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("يرجع المبلغ خلال ثلاثة أيام عمل", ["3", "ايام"]),  # msa
        ("الاسترجاع بياخد تلات تيام", ["3", "ايام"]),  # levantine تيام after a count
        ("الفلوس بترجع بعد تلاته ايام", ["3", "ايام"]),  # egyptian
        ("كاتخلص من بعد جوج ايام", ["2", "ايام"]),  # maghrebi جوج
        ("بعد عشر دقايق", ["10", "دقائق"]),  # dialect plural spelling
        ("التوصيل يبيله يومين", ["2", "يوم"]),  # gulf dual
        ("الطلب يوصل بعد أسبوعين", ["2", "اسبوع"]),  # dual of a week
        ("الفني يتأخر ساعتين", ["2", "ساعه"]),  # feminine dual ‑تين
        ("الضمان سنتين", ["2", "سنه"]),
        ("انطر نص ساعة بس", ["30", "دقيقه"]),  # levantine نص ساعة
        ("التفعيل يأخذ نصف ساعة", ["30", "دقيقه"]),  # msa
        ("خلال ساعة ونص", ["90", "دقيقه"]),
        ("الرسوم خمسة وعشرين ريال", ["25", "ريال"]),  # compound with و
        ("الحد الاعلى الف وخمسمية درهم", ["1500", "درهم"]),
        ("الحد ثلاثة آلاف ريال", ["3000", "ريال"]),
        ("الرسوم ميتين جنيه", ["200", "جنيه"]),
        ("خلال خمسة عشر يوماً", ["15", "يوما"]),  # msa teen (the stemmer drops the ا)
        ("عندك اربعتاشر يوم", ["14", "يوم"]),  # egyptian teen
        ("الحد ١٠٬٠٠٠ ريال", ["10000", "ريال"]),  # Arabic thousands separator U+066C
        ("تدفع بخمسين ريال", ["50", "ريال"]),  # proclitic ب
    ],
)
def test_counts_become_digits(text: str, expected: list[str]) -> None:
    got = _digits(text)
    start = next(i for i, w in enumerate(got) if w == expected[0])
    assert got[start : start + len(expected)] == expected


@pytest.mark.parametrize(
    "text",
    [
        "دخلت ميه في الموبايل",  # egyptian ميه = water
        "نفتح يوم الاثنين",  # Monday, with the article
        "نفتح يوم اثنين",  # Monday, without it
        "تمنه كام؟",  # تمن = price
        "ثمن المنتج",
        "الست اللي ردت عليا",  # ست = madam
        "كلمت واحد موظف",  # واحد = someone
        "ربع المبلغ",  # a quarter, not an hour
        "اليومين دول الخدمة بطيئة",  # "these days"
        "يوم الثلاثاء",
    ],
)
def test_words_that_are_not_counts_stay(text: str) -> None:
    words = fold(clean(text)).split()
    assert number_words_to_digits(words) == words


@pytest.mark.parametrize(
    ("document", "question"),
    [
        ("يعاد المبلغ خلال 3 أيام عمل", "الفلوس بترجع بعد تلات تيام؟"),
        ("يعاد المبلغ خلال ثلاثة أيام عمل", "ترجع الفلوس خلال ٣ ايام؟"),
        ("يصل الفني خلال ساعتين", "الفني يجي بعد 2 ساعة؟"),
        ("يتم التفعيل خلال 30 دقيقة", "التفعيل ياخذ نص ساعة؟"),
        ("رسوم الخدمة 25 ريالاً", "الرسوم خمسة وعشرين ريال؟"),
        ("التوصيل خلال يومين", "el tawsil ya5od jouj ayam?"),  # arabizi
    ],
)
def test_document_and_question_share_the_count_key(document: str, question: str) -> None:
    doc_keys = set(nlp.stem_and_surface_keys(document))
    query_keys = nlp.stem_and_surface_keys(question)
    shared = doc_keys.intersection(query_keys)
    assert any(k.isdigit() for k in shared), (sorted(doc_keys), query_keys)


def test_english_numbers_are_left_alone() -> None:
    assert nlp.search_keys("two days") == ["two", "day"]
