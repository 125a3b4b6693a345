"""Builders shared by the culture tests (not a conftest: the lead owns test_graph*)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from majlis.culture import Moment, SeasonCalendar, ToneDirective
from majlis.culture.cues import Formality

KUWAIT = ZoneInfo("Asia/Kuwait")
CALENDAR = SeasonCalendar()


def plain_moment() -> Moment:
    """A Monday morning in Kuwait with no seasonal modifier (20 Jumada al-Akhirah 1448)."""
    moment = CALENDAR.moment(datetime(2026, 11, 30, 6, tzinfo=UTC), tz=KUWAIT, country="KW")
    assert moment.modifiers == ()
    return moment


def tone(
    register: str, formality: Formality = "neutral", *, gender: str | None = None
) -> ToneDirective:
    return ToneDirective(
        register=register,
        formality=formality,
        honorific=None,
        addressee_gender=gender,  # type: ignore[arg-type]
        stance="neutral",
        brevity=False,
        time_of_day="morning",
        modifiers=(),
    )
