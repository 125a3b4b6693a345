"""The reply register: MSA when asked, the thread's dialect only when sure, else neutral."""

from __future__ import annotations

import pytest
from _culture_helpers import plain_moment

from majlis.culture import (
    MIRROR_THRESHOLD,
    ToneProfile,
    choose_register,
    compose_opening,
    compute_tone,
    read_cues,
)
from majlis.models import PhraseBook
from majlis.prompt import compose_system_prompt

MOMENT = plain_moment()
DIALECT_WORDS = ("الخليج", "المصري", "الشامي", "المغارب", "العراق", "لهجة", "dialect",
                 "Gulf", "Egyptian", "Levantine", "Maghrebi", "Iraqi")


@pytest.mark.parametrize(("requested", "policy", "region", "confidence", "expected"), [
    ("", "mirror", "gulf", MIRROR_THRESHOLD, ("dialect", "gulf")),
    ("", "mirror", "gulf", MIRROR_THRESHOLD - 0.01, ("neutral", "neutral")),
    ("", "mirror", "msa", 0.0, ("neutral", "neutral")),
    ("", "msa", "egyptian", 0.99, ("msa", "msa")),
    ("msa", "mirror", "egyptian", 0.99, ("msa", "msa")),
    ("dialect", "mirror", "levantine", 0.3, ("dialect", "levantine")),
    ("dialect", "msa", "iraqi", 0.3, ("dialect", "iraqi")),   # the caller's choice wins
    ("dialect", "mirror", "msa", 0.0, ("neutral", "neutral")),  # no dialect yet: neutral
])
def test_choose_register(requested: str, policy: str, region: str, confidence: float,
                         expected: tuple[str, str]) -> None:
    assert choose_register(requested=requested, policy=policy, region=region,
                           confidence=confidence) == expected


def _tone(voice: str, text: str = "مرحبا") -> tuple[str, str]:
    cues = read_cues(text)
    tone = compute_tone(ToneProfile(), region="maghrebi", cues=cues, turn_index=0,
                        known_gender=None, moment=MOMENT, prior_formality=None, voice=voice)
    return tone.register, compose_opening(cues, region=tone.register, tone=tone,
                                          moment=MOMENT, first_contact=True)


def test_neutral_voice_greets_without_a_regional_reply() -> None:
    register, opening = _tone("neutral")
    assert register == "neutral"
    assert opening.startswith("أهلا وسهلا")  # not the Maghrebi «مرحبا بيك»
    assert "بيك" not in opening


def test_msa_voice_greets_in_msa() -> None:
    register, opening = _tone("msa", "ازيك")
    assert register == "msa"
    assert "ازيك" not in opening and "بخير" in opening


@pytest.mark.parametrize("voice", ["msa", "neutral"])
def test_prompt_without_a_dialect_names_no_dialect(voice: str) -> None:
    cues = read_cues("ازيك، عايز اعرف فين طلبي")
    tone = compute_tone(ToneProfile(), region="egyptian", cues=cues, turn_index=0,
                        known_gender=None, moment=MOMENT, prior_formality=None, voice=voice)
    prompt = compose_system_prompt(
        persona="ديوانية", tone_block=tone.to_prompt(), region=voice, recalled=[], facts=[],
        now_gregorian="2026-11-30 09:00", now_hijri="20 جمادى الآخرة 1448")
    assert not [w for w in DIALECT_WORDS if w in prompt], prompt
    if voice == "msa":
        assert "Modern Standard Arabic" in prompt and "بسيطة" not in prompt
    else:
        assert "بسيطة" in prompt and "Modern Standard Arabic" not in prompt


def test_prompt_with_a_dialect_names_it_once_and_nothing_else() -> None:
    tone = compute_tone(ToneProfile(), region="gulf", cues=read_cues("ابي اعرف وين طلبي"),
                        turn_index=0, known_gender=None, moment=MOMENT, prior_formality=None,
                        voice="gulf")
    prompt = compose_system_prompt(persona="ديوانية", tone_block=tone.to_prompt(),
                                   region="gulf", recalled=[], facts=[], now_gregorian="",
                                   now_hijri="")
    assert "لهجة المستخدم: الخليجية. أجب بها." in prompt
    assert "Gulf Arabic" in prompt
    others = ("المصرية", "الشامية", "المغاربية", "العراقية", "الفصحى", "Standard", "Egyptian")
    assert not [w for w in others if w in prompt]


def test_every_phrase_has_msa_and_neutral_texts() -> None:
    book = PhraseBook.load()
    for phrase_id in ("dont_know", "how_can_i_help", "complaint_details", "handoff_offer"):
        msa = book.say(phrase_id, "msa")
        neutral = book.say(phrase_id, "neutral")
        assert msa and neutral and neutral != book.say(phrase_id, "maghrebi")


def test_prompt_docstring_examples_run() -> None:
    import doctest

    import majlis.prompt

    result = doctest.testmod(majlis.prompt)
    assert result.attempted > 0 and result.failed == 0
