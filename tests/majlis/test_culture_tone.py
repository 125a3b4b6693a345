"""Tone directive: register, formality relaxing, honorifics, gender, stance, brevity."""

from __future__ import annotations

from datetime import UTC, datetime

from _culture_helpers import CALENDAR, KUWAIT, plain_moment

from majlis.culture import ToneDirective, ToneProfile, compute_tone, read_cues

MOMENT = plain_moment()


def tone_for(text: str, *, region: str = "gulf", turn: int = 0, prior: str | None = None,
             profile: ToneProfile | None = None, known: str | None = None) -> ToneDirective:
    return compute_tone(profile or ToneProfile(), region=region, cues=read_cues(text),
                        turn_index=turn, known_gender=known,  # type: ignore[arg-type]
                        moment=MOMENT, prior_formality=prior)


def test_first_contact_is_formal_with_regional_honorific() -> None:
    assert tone_for("هلا").formality == "formal"
    assert tone_for("هلا").honorific == "طال عمرك"
    assert tone_for("ازيك", region="egyptian").honorific == "حضرتك"


def test_formality_relaxes_one_step_per_turn_as_the_user_does() -> None:
    profile = ToneProfile(formality_floor="casual")
    second = tone_for("هلا حبيبي", turn=1, prior="formal", profile=profile)
    third = tone_for("هلا حبيبي", turn=2, prior=second.formality, profile=profile)
    assert (second.formality, third.formality) == ("neutral", "casual")
    assert third.honorific is None
    back = tone_for("لو تكرمت حضرتك", turn=3, prior="casual", profile=profile)
    assert back.formality == "formal"


def test_formality_floor_holds() -> None:
    assert tone_for("هلا حبيبي", turn=5, prior="neutral").formality == "neutral"
    formal_floor = ToneProfile(formality_floor="formal")
    assert tone_for("هلا حبيبي", turn=5, prior="formal", profile=formal_floor).formality == "formal"


def test_register_mirrors_or_follows_msa_policy() -> None:
    assert tone_for("ازيك", region="egyptian").register == "egyptian"
    assert tone_for("ازيك", region="egyptian",
                    profile=ToneProfile(register_policy="msa")).register == "msa"
    assert tone_for("hello", region="klingon").register == "msa"


def test_gender_from_own_words_or_stored_preference_only() -> None:
    assert tone_for("انا تعبانة، الطلب ما وصل").addressee_gender == "f"
    assert tone_for("انا فاطمة").addressee_gender is None
    assert tone_for("انا فاطمة", known="f").addressee_gender == "f"
    lev = tone_for("مرحبا، انا متأكدة", region="levantine")
    assert lev.honorific == "أستاذة"
    assert "feminine" in lev.to_prompt()


def test_stance_and_brevity() -> None:
    angry = tone_for("للمرة الثالثة اكلمكم والطلب ما وصل!!")
    assert angry.stance == "apologetic" and angry.brevity
    complaint = tone_for("عندي مشكلة في الحساب")
    assert complaint.stance == "empathetic" and complaint.brevity
    social = tone_for("السلام عليكم، شلونك؟")
    assert social.stance == "neutral" and not social.brevity


def test_prompt_carries_time_and_occasions() -> None:
    moment = CALENDAR.moment(datetime(2027, 2, 25, 18, tzinfo=UTC), tz=KUWAIT, country="KW")
    directive = compute_tone(ToneProfile(persona_name="سند"), region="gulf",
                             cues=read_cues("هلا"), turn_index=0, known_gender=None,
                             moment=moment, prior_formality=None)
    prompt = directive.to_prompt()
    assert directive.modifiers == ("ramadan", "national_day:KW")
    assert "سند" in prompt and "night" in prompt and "national_day:KW" in prompt
    assert "طال عمرك" in prompt
