"""Bridge morphology (lane s5-support): verb stems, borrowed letters, own form first."""

from __future__ import annotations

import pytest
from _bridge_cases import assert_expands_to

import nlp
from nlp.bridge import parse_bridge
from nlp.bridge_forms import verb_stems

LEXICON = "~صيفط\tأرسل\tmaghrebi\n~رجع\tإرجاع\tall\nفين\tأين\tegyptian\nفيني\tيمكنني\tlevantine\n"


@pytest.mark.parametrize("form", ["صيفطولي", "نصيفط", "كيصيفطو", "تصيفطات"])
def test_a_regional_verb_stem_matches_every_person(form: str) -> None:
    bridge = parse_bridge(LEXICON)
    assert bridge.expand(form) == ["أرسل"], form
    assert bridge.has_dialect_words(form)


def test_a_stem_shared_with_msa_matches_only_dialect_forms() -> None:
    bridge = parse_bridge(LEXICON)
    # «يرجع تاريخ القلعة» is MSA: no expansion; «ترجعولي»، «بيرجعو» are not MSA forms.
    assert bridge.expand("يرجع تاريخ القلعة إلى القرن العاشر") == []
    assert bridge.expand("امتى ترجعولي المبلغ") == ["إرجاع"]
    assert bridge.expand("بيرجعو الطرد") == ["إرجاع"]
    assert not bridge.has_dialect_words("ترجعولي")  # tagged all: expansion, not evidence


def test_defective_and_doubled_verbs_reach_their_stem() -> None:
    assert "لغي" in verb_stems("نلغيوها")
    assert "عطي" in verb_stems("بتعطون")
    assert "سدد" in verb_stems("كتسدو")


def test_the_word_as_written_wins_over_a_peeled_enclitic() -> None:
    # Levantine «فيني» (can I) is not Egyptian «فين» (where) + ي.
    assert parse_bridge(LEXICON).expand("فيني ادفع بالبطاقة؟") == ["يمكنني"]


def test_borrowed_letters_are_read_as_the_arabic_letter_they_stand_for() -> None:
    # Iraqi «اگدر» (= أقدر) and «چم» (= كم) with U+06AF / U+0686.
    assert "يمكن" in nlp.dialect_to_msa("اگدر ابدل الموعد؟")
    assert nlp.has_dialect_words("چم سعر الكيلو؟")
    assert not nlp.has_dialect_words("كم سعر الكيلو؟")


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("الفاتورة تبعي ما وصلت، فيني اطلبها؟", {"يمكنني"}),  # levantine
        ("المكيف اتقفل لوحده", {"إغلاق"}),  # egyptian اتفعل
        ("الكرطونة تصيفطات ولا مازال؟", {"أرسل"}),  # maghrebi passive ‑ات
        ("اريد اخابركم بخصوص الفاتورة", {"اتصال"}),  # iraqi
        ("ba3atto el shahn?", set()),  # unknown Arabizi spelling: nothing invented
    ],
)
def test_shipped_lexicon_reads_dialect_verbs(question: str, expected: set[str]) -> None:
    assert_expands_to(question, expected)
