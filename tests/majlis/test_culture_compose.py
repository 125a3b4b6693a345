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


def brief(register: str) -> ToneDirective:
    return replace(tone(register), greeting_style="brief")


def test_greeting_and_complaint_get_the_greeting_back_and_both_occasions() -> None:
    cues = read_cues("هلا، عندي مشكلة في الحساب")
    opening = compose_opening(cues, region="gulf", tone=tone("gulf"),
                              moment=NATIONAL_DAY_IN_RAMADAN, first_contact=True)
    assert opening == ("هلا بك. رمضان كريم، ومبارك عليكم الشهر. "
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


def test_warm_style_says_every_occasion_brief_style_only_the_main_one() -> None:
    cues = read_cues("السلام عليكم")
    warm = compose_opening(cues, region="gulf", tone=tone("gulf"), moment=LIBERATION_FRIDAY,
                           first_contact=True)
    assert "عيد التحرير" in warm and "جمعة مباركة" in warm and "رمضان كريم" in warm
    short = compose_opening(cues, region="gulf", tone=brief("gulf"), moment=LIBERATION_FRIDAY,
                            first_contact=True)
    assert short == "وعليكم السلام. رمضان كريم، ومبارك عليكم الشهر"


def test_eid_greeting_answered_in_dialect_and_not_repeated() -> None:
    gulf = compose_opening(read_cues("عيدكم مبارك"), region="gulf", tone=tone("gulf"),
                           moment=EID_AL_FITR, first_contact=False)
    assert gulf.startswith("علينا وعليكم، عساكم من عواده")
    assert "عيد فطر مبارك" not in gulf
    assert "جمعة مباركة" in gulf  # 20 March 2026 is also a Friday
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
