"""Every greeting pair in every region, read back from the data file entry by entry."""

from __future__ import annotations

import pytest
from _culture_helpers import plain_moment, tone

from majlis.culture import compose_closing, compose_opening, load_greetings, read_cues
from majlis.culture.tone import REGIONS

TABLE = load_greetings()
MOMENT = plain_moment()


def _cases() -> list[tuple[str, str, str]]:
    cases = []
    for entry in TABLE.entries.values():
        for region in REGIONS:
            for phrase in entry.phrases_for(region):
                cases.append((entry.key, region, phrase))
    return cases


CASES = _cases()


def _compose(key: str, text: str, region: str, formality: str) -> str:
    cues = read_cues(text)
    directive = tone(region, formality)
    if TABLE.entry(key).kind == "opener":
        assert key in cues.openers, f"{text!r} not read as opener {key}: {cues}"
        return compose_opening(
            cues, region=region, tone=directive, moment=MOMENT, first_contact=False
        )
    assert key in cues.closers, f"{text!r} not read as closer {key}: {cues}"
    return compose_closing(cues, region=region, tone=directive)


def test_every_entry_has_phrases_and_is_covered() -> None:
    covered = {key for key, _, _ in CASES}
    assert covered == set(TABLE.entries)
    assert len(CASES) > 300


@pytest.mark.parametrize(("key", "region", "phrase"), CASES)
@pytest.mark.parametrize("formality", ["neutral", "formal"])
def test_table_pair(key: str, region: str, phrase: str, formality: str) -> None:
    expected = TABLE.entry(key).reply(region=region, register=formality, gender=None)
    assert _compose(key, phrase, region, formality) == expected


@pytest.mark.parametrize(("key", "region", "phrase"), CASES)
def test_table_phrase_inside_a_sentence_still_matches(key: str, region: str, phrase: str) -> None:
    # Clitics and punctuation around the phrase must not hide it.
    cues = read_cues(f"{phrase}!")
    assert key in cues.openers + cues.closers


# Written by hand from the issue, independent of the data file.
CANONICAL = [
    ("السلام عليكم", "gulf", "neutral", "وعليكم السلام"),
    ("السلام عليكم", "gulf", "formal", "وعليكم السلام ورحمة الله وبركاته"),
    ("السلام عليكم ورحمة الله وبركاته", "msa", "formal", "وعليكم السلام ورحمة الله وبركاته"),
    ("صباح الخير", "levantine", "neutral", "صباح النور"),
    ("صباح الخير", "egyptian", "casual", "صباح الفل"),
    ("مساء الخير", "iraqi", "neutral", "مساء النور"),
    ("شلونك", "gulf", "neutral", "الحمد لله بخير، وانتوا شلونكم؟"),
    ("شلونك؟", "iraqi", "neutral", "الحمد لله بخير، وانتوا شلونكم؟"),
    ("ازيك", "egyptian", "neutral", "الحمد لله تمام، وحضرتك ازيك؟"),
    ("كيفك", "levantine", "neutral", "تمام الحمد لله، وكيفك؟"),
    ("لاباس", "maghrebi", "neutral", "لاباس الحمد لله، ولاباس عليك؟"),
    ("رمضان كريم", "gulf", "neutral", "الله أكرم"),
    ("رمضان كريم", "egyptian", "formal", "الله أكرم"),
    ("salam alaikum", "gulf", "neutral", "وعليكم السلام"),
    ("shlonak", "gulf", "neutral", "الحمد لله بخير، وانتوا شلونكم؟"),
    ("ezayak", "egyptian", "neutral", "الحمد لله تمام، وحضرتك ازيك؟"),
    ("ramadan kareem", "levantine", "neutral", "الله أكرم"),
    ("السلام عليكم، صباح الخير، شلونك؟", "gulf", "neutral",
     "وعليكم السلام، صباح النور، الحمد لله بخير، وانتوا شلونكم؟"),
]


@pytest.mark.parametrize(("text", "region", "formality", "expected"), CANONICAL)
def test_canonical_openings(text: str, region: str, formality: str, expected: str) -> None:
    opening = compose_opening(
        read_cues(text),
        region=region,
        tone=tone(region, formality),
        moment=MOMENT,
        first_contact=False,
    )
    assert opening == expected


CANONICAL_CLOSINGS = [
    ("شكرا", "msa", "العفو"),
    ("مشكور", "gulf", "العفو"),
    ("تسلم", "levantine", "الله يسلمك"),
    ("تسلم ايدك", "egyptian", "الله يسلمك"),
    ("مع السلامة", "gulf", "في أمان الله"),
    ("يعطيك العافية", "levantine", "الله يعافيك"),
    ("thx", "gulf", "العفو"),
    ("merci", "levantine", "العفو"),
    ("yalla bye", "levantine", "مع السلامة"),
    ("مشكور، مع السلامة", "gulf", "العفو، في أمان الله"),
    ("شكرا، سلام", "levantine", "العفو، في أمان الله"),
    ("تصبحين على خير", "gulf", ""),  # not in the table: nothing, rather than a wrong answer
]


@pytest.mark.parametrize(("text", "region", "expected"), CANONICAL_CLOSINGS)
def test_canonical_closings(text: str, region: str, expected: str) -> None:
    assert compose_closing(read_cues(text), region=region, tone=tone(region)) == expected


def test_feminine_reply_only_when_gender_known() -> None:
    cues = read_cues("شلونك")
    unknown = compose_opening(cues, region="gulf", tone=tone("gulf"), moment=MOMENT,
                              first_contact=False)
    female = compose_opening(cues, region="gulf", tone=tone("gulf", gender="f"), moment=MOMENT,
                             first_contact=False)
    # Unknown gender: the polite plural, never the masculine «وانت شلونك؟».
    assert unknown.endswith("وانتوا شلونكم؟")
    assert female.endswith("وانتي شلونج؟")


def test_msa_register_policy_answers_in_msa() -> None:
    cues = read_cues("كيف حالك")
    opening = compose_opening(cues, region="levantine", tone=tone("msa"), moment=MOMENT,
                              first_contact=False)
    assert opening == "بخير والحمد لله، وكيف حالك أنت؟"


def test_nothing_to_return_is_empty() -> None:
    cues = read_cues("ابي اغير رقم جوالي")
    assert compose_opening(cues, region="gulf", tone=tone("gulf"), moment=MOMENT,
                           first_contact=False) == ""
    assert compose_closing(cues, region="gulf", tone=tone("gulf")) == ""
