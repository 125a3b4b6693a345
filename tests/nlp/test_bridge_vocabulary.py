"""Bridge lookup rules of session 8: explicit entries before proclitic-stripped keys,
the ما…ش negation on verbs, Arabizi article clusters, and the everyday families."""

from __future__ import annotations

import pytest
from _bridge_cases import assert_expands_to

import nlp
from nlp.bridge import parse_bridge


def test_an_entry_written_so_wins_over_another_entry_without_its_proclitic() -> None:
    # «بشحال» (for how much) asks a price; «شحال» alone (how many days…) does not.
    bridge = parse_bridge("شحال\tكم\tmaghrebi\nبشحال\tكم سعر\tmaghrebi\n")
    assert bridge.expand("شحال من نهار؟") == ["كم"]
    assert bridge.expand("بشحال؟") == ["كم", "سعر"]


def test_a_stripped_key_of_two_letters_is_another_word() -> None:
    # «لبس» without its «ل» would be «بس» (only), «بكم» without «ب» «كم» (how many).
    bridge = parse_bridge("لبس\tملابس\tall\nبكم\tكم سعر\tall\n")
    assert bridge.expand("بس ابي اعرف كم يوم") == []
    assert bridge.expand("لبس الاطفال بكم؟") == ["ملابس", "كم", "سعر"]


def test_a_stripped_key_still_serves_where_nothing_is_written_so() -> None:
    assert parse_bridge("بالمجان\tمجانا\tall\n").expand("التوصيل مجان؟") == ["مجانا"]


@pytest.mark.parametrize("form", ["ما تصلحاتش", "ماتصلحش", "ماتصلحتش"])
def test_the_negation_circumfix_reaches_the_verb_stem(form: str) -> None:
    assert parse_bridge("~صلح\tإصلاح\tmaghrebi\n").expand(form) == ["إصلاح"], form


def test_an_arabizi_article_cluster_is_no_english_loanword() -> None:
    # «bel lel» is «بالليل»; its reading «بيل» must not bring in «فاتورة» (bill).
    words = nlp.dialect_to_msa("fi 7ada byrod 3al telefon bel lel?")
    assert "فاتورة" not in words
    assert {"مساء", "ليلا"} <= set(words)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("ابي انقل رقمي من شركة ثانية", {"مشغل", "أخرى", "نقل"}),  # gulf
        ("الرصيد خلص، ممكن تسلفوني؟", {"نفد", "سلفة"}),  # levantine / egyptian
        ("لإيمتى بتضلوا فاتحين؟", {"حتى", "تعمل", "تستمر"}),  # levantine
        ("واش كاينة شي وكالة محلولة الليل كامل؟", {"مدار", "تعمل"}),  # maghrebi
        ("الشكاية ديالي طولات، واش كتعوضو؟", {"شكوى", "تعويض"}),  # maghrebi
        ("موبايلي انباك", {"فقدان"}),  # iraqi
        ("نصب الفايبر بفلوس؟", {"تركيب", "ألياف"}),  # iraqi
        ("عليه ديون بالشركة القديمة", {"مستحقة", "مشغل"}),  # all
        ("خدمة الزبائن بترد بالليل؟", {"العملاء", "متاح"}),  # levantine / egyptian
        ("الباقة بتقعد معايا كام يوم؟", {"تستمر", "صلاحية"}),  # egyptian
        ("ابي اطلب اي سيم", {"الشريحة", "الإلكترونية"}),  # gulf
    ],
)
def test_everyday_words_meet_the_policy_words(question: str, expected: set[str]) -> None:
    assert_expands_to(question, expected)
