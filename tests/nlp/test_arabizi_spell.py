"""Arabizi readings (nlp.arabizi_spell) and the bridge's use of them: real Arabizi
support words, written from knowledge of how customers type, not from the bench sets."""

from __future__ import annotations

import pytest

import nlp
from nlp.arabizi_spell import MAX_SPELLINGS, spellings, split_article
from nlp.bridge import lexicon_latin_word, load_bridge
from nlp.normalize import fold


@pytest.mark.parametrize(
    ("word", "arabic"),
    [
        ("tawseel", "توصيل"),  # s → ص, ee → ي
        ("mablagh", "مبلغ"),  # gh → غ, short a unwritten
        ("fatoora", "فاتورة"),  # a → ا before a consonant cluster, final a → ة
        ("3arboon", "عربون"),  # 3 → ع, oo → و
        ("ma7al", "محل"),  # 7 → ح
        ("7isabi", "حسابي"),  # final i → ي (my)
        ("mawa3eed", "مواعيد"),
        ("taqseet", "تقسيط"),  # final t → ط
        ("ra2m", "رقم"),  # Cairo/Beirut 2 for ق
        ("khedmet", "خدمة"),  # ‑et before a genitive is ة
        ("3omala", "عملاء"),  # ‑a is ‑اء in the plural فعلاء
        ("wusul", "وصول"),
        ("jihaz", "جهاز"),
        ("6alab", "طلب"),  # 6 → ط
        ("9andoo8", "صندوق"),  # 9 → ص (Gulf), 8 → ق
    ],
)
def test_the_arabic_word_is_among_the_readings(word: str, arabic: str) -> None:
    assert fold(arabic) in {fold(r) for r in spellings(word)}


def test_readings_are_bounded_deterministic_and_cheapest_first() -> None:
    long = spellings("mostakhdimeen")
    assert 0 < len(long) <= MAX_SPELLINGS
    assert spellings.__wrapped__("mostakhdimeen") == long  # same order without the cache
    # The usual reading (unwritten short vowels, ت not ط) comes before a rarer one.
    readings = spellings("kitab")
    assert readings.index("كتب") < readings.index("قطب")


@pytest.mark.parametrize(
    ("word", "bare"),
    [("l7anout", "7anout"), ("elfatoora", "fatoora"), ("laban", "laban"), ("lmablagh", "mablagh"),
     ("el", "el")],
)
def test_a_glued_article_is_split(word: str, bare: str) -> None:
    assert split_article(word) == bare


def test_an_arabizi_word_meets_the_lexicon_through_a_reading() -> None:
    # «twaslon» is «توصلون» (the ~وصل verb), though the one transliteration says «توسلون».
    assert lexicon_latin_word("twaslon")
    assert set(nlp.dialect_to_msa("twaslon")) & {"توصيل", "يصل", "وصول"}
    assert not lexicon_latin_word("tintehi")  # a content word: the vocabulary decides


def test_an_unknown_arabizi_word_is_given_as_several_readings() -> None:
    out = nlp.dialect_to_msa("el tarkeeb bkam?")
    assert "تركيب" in out  # the reading a policy holds is among them
    assert len([w for w in out if w.startswith(("تر", "تا", "طر", "طا"))]) <= 6


def test_a_latin_message_without_english_reads_as_arabizi() -> None:
    # No digit and no lexicon word in «marra» or «motalaba», yet no English either.
    out = {fold(w) for w in nlp.dialect_to_msa("kam marra agdar asawi motalaba")}
    assert fold("مرة") in out
    # Its cheapest readings stand for «motalaba»; the store's Arabizi stage finds
    # «مطالبة» among all of them (tests/memory/test_memory_arabizi.py).
    assert fold("متلبة") in out


def test_an_english_message_is_not_read_as_arabizi() -> None:
    out = load_bridge().expand("how can i reset my password")
    assert out == ["كلمة", "المرور"] or set(out) <= {"كلمة", "المرور", "إعادة", "تعيين"}


@pytest.mark.parametrize(
    ("text", "msa"),
    [
        ("واش كاين شي بروموسيون؟", "العروض"),
        ("فين نشوف البوانات ديالي؟", "نقاط"),
        ("عندي فاوتشر ما اشتغل", "قسيمة"),
        ("بدي احذف الاكاونت", "حساب"),
        ("wach kayn promo?", "خصم"),
        ("fin nchouf les points?", "نقاط"),
        ("el delivery free?", "مجاني"),
    ],
)
def test_support_loanwords_reach_the_policy_word(text: str, msa: str) -> None:
    assert msa in nlp.dialect_to_msa(text)


@pytest.mark.parametrize(
    ("text", "msa"),
    [("شنو الگيمة المطلوبة؟", "القيمة"), ("وگت الاستلام", "وقت"), ("الڤاتورة وين؟", "فاتورة"),
     ("اگبل الطلب", "اقبل")],
)
def test_a_word_written_with_a_borrowed_letter_is_given_in_its_msa_spelling(
    text: str, msa: str
) -> None:
    # The index keeps گ/چ/ڤ/پ as written; the bridge adds the ق/ك/ف/ب spelling
    # an MSA policy has, even for a word the lexicon does not list.
    assert fold(msa) in {fold(w) for w in nlp.dialect_to_msa(text)}
