"""Openings and closings on real days: seasonal greetings, styles, first contact."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from _culture_helpers import CALENDAR, KUWAIT, plain_moment, tone

from majlis.culture import ToneDirective, compose_closing, compose_opening, read_cues

NATIONAL_DAY_IN_RAMADAN = CALENDAR.moment(datetime(2027, 2, 25, 6, tzinfo=UTC), tz=KUWAIT,
                                          country="KW")
LIBERATION_FRIDAY = CALENDAR.moment(datetime(2027, 2, 26, 6, tzinfo=UTC), tz=KUWAIT, country="KW")
EID_AL_FITR = CALENDAR.moment(datetime(2026, 3, 20, 6, tzinfo=UTC), tz=KUWAIT, country="KW")


def religious(directive: ToneDirective) -> ToneDirective:
    """A tenant that opted in to worship-specific wishes (جمعة مباركة، تقبّل الله صيامكم)."""
    return replace(directive, religious_greetings=True)


def brief(register: str) -> ToneDirective:
    return replace(tone(register), greeting_style="brief")


def test_greeting_and_complaint_get_the_greeting_back_and_both_occasions() -> None:
    cues = read_cues("هلا، عندي مشكلة في الحساب")
    opening = compose_opening(cues, region="gulf", tone=tone("gulf"),
                              moment=NATIONAL_DAY_IN_RAMADAN, first_contact=True)
    # Without the tenant's opt-in, the neutral «رمضان كريم» (no fasting wish).
    assert opening == "هلا بك. رمضان كريم. كل عام والكويت بخير بمناسبة العيد الوطني"
    devout = compose_opening(cues, region="gulf", tone=religious(tone("gulf")),
                             moment=NATIONAL_DAY_IN_RAMADAN, first_contact=True)
    assert devout == ("هلا بك. رمضان كريم، ومبارك عليكم الشهر. "
                      "كل عام والكويت بخير بمناسبة العيد الوطني")


def test_seasonal_greeting_only_on_first_contact_or_when_greeted() -> None:
    business = read_cues("ابي اغير الباقة")
    assert compose_opening(business, region="gulf", tone=tone("gulf"),
                           moment=NATIONAL_DAY_IN_RAMADAN, first_contact=False) == ""
    first = compose_opening(business, region="gulf", tone=tone("gulf"),
                            moment=NATIONAL_DAY_IN_RAMADAN, first_contact=True)
    assert first.startswith("رمضان كريم")
    assert compose_opening(business, region="gulf", tone=tone("gulf"), moment=plain_moment(),
                           first_contact=True) == ""


def test_at_most_two_seasonal_greetings_brief_style_only_the_main_one() -> None:
    # 26 Feb 2027 in Kuwait: Ramadan, Liberation Day and a Friday — three would bury
    # the answer; the two main occasions stay, Friday (the minor one) goes.
    cues = read_cues("السلام عليكم")
    warm = compose_opening(cues, region="gulf", tone=religious(tone("gulf")),
                           moment=LIBERATION_FRIDAY, first_contact=True)
    assert warm == ("وعليكم السلام. رمضان كريم، ومبارك عليكم الشهر. "
                    "كل عام والكويت بخير بمناسبة عيد التحرير")
    assert "جمعة مباركة" not in warm
    short = compose_opening(cues, region="gulf", tone=brief("gulf"), moment=LIBERATION_FRIDAY,
                            first_contact=True)
    assert short == "وعليكم السلام. كل عام والكويت بخير بمناسبة عيد التحرير"


def test_eid_greeting_answered_in_dialect_and_not_repeated() -> None:
    gulf = compose_opening(read_cues("عيدكم مبارك"), region="gulf", tone=tone("gulf"),
                           moment=EID_AL_FITR, first_contact=False)
    assert gulf.startswith("علينا وعليكم، عساكم من عواده")
    assert "عيد فطر مبارك" not in gulf
    assert "جمعة مباركة" not in gulf  # 20 March 2026 is a Friday: opt-in only
    devout = compose_opening(read_cues("عيدكم مبارك"), region="gulf",
                             tone=religious(tone("gulf")), moment=EID_AL_FITR,
                             first_contact=False)
    assert "جمعة مباركة" in devout
    egyptian = compose_opening(read_cues("كل سنة وانت طيب"), region="egyptian",
                               tone=tone("egyptian"), moment=EID_AL_FITR, first_contact=False)
    assert egyptian.startswith("وانتم طيبين")


def test_closing_in_formal_msa_and_maghrebi() -> None:
    assert compose_closing(read_cues("شكرا جزيلا"), region="msa",
                           tone=tone("msa", "formal")) == "لا شكر على واجب"
    assert compose_closing(read_cues("شكرا، بسلامة"), region="maghrebi",
                           tone=tone("maghrebi")) == "بلا جميل، الله يسلمك، في أمان الله"
    assert compose_closing(read_cues("تصبحي على خير"), region="levantine",
                           tone=tone("levantine", gender="f")) == "وانتي من أهله"
