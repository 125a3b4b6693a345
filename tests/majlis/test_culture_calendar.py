"""Seasonal windows (Umm al-Qura via hijridate), country offsets, national days, range."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from _culture_helpers import KUWAIT, tone
from hijridate import Gregorian

from diwaniya.errors import CalendarRangeError, ConfigurationError, InvalidRequest
from majlis.culture import FixedClock, SeasonCalendar, compose_opening, read_cues

CAL = SeasonCalendar()
HIJRI_KEYS = {"ramadan", "last_ten_nights", "eid_al_fitr", "arafah", "eid_al_adha",
              "hijri_new_year"}


def keys_on(day: date, *, cal: SeasonCalendar = CAL, country: str | None = None) -> set[str]:
    return {m.key for m in cal.modifiers_on(day, country=country)}


# Gregorian dates of the Umm al-Qura calendar as published (Ramadan 1447 began
# Wednesday 18 Feb 2026); each window is checked on its first and last day and
# on the days just outside it.
WINDOWS = [
    ("ramadan", date(2026, 2, 18), date(2026, 3, 19)),         # 1447, 30 days
    ("last_ten_nights", date(2026, 3, 10), date(2026, 3, 19)),
    ("eid_al_fitr", date(2026, 3, 20), date(2026, 3, 22)),
    ("arafah", date(2026, 5, 26), date(2026, 5, 26)),
    ("eid_al_adha", date(2026, 5, 27), date(2026, 5, 30)),
    ("hijri_new_year", date(2026, 6, 16), date(2026, 6, 16)),  # 1 Muharram 1448
    ("ramadan", date(2027, 2, 8), date(2027, 3, 8)),           # 1448, 29 days
    ("last_ten_nights", date(2027, 2, 28), date(2027, 3, 8)),
    ("eid_al_fitr", date(2027, 3, 9), date(2027, 3, 11)),
    ("arafah", date(2027, 5, 15), date(2027, 5, 15)),
    ("eid_al_adha", date(2027, 5, 16), date(2027, 5, 19)),
    ("hijri_new_year", date(2027, 6, 6), date(2027, 6, 6)),    # 1 Muharram 1449
]


@pytest.mark.parametrize(("key", "first", "last"), WINDOWS)
def test_seasonal_window(key: str, first: date, last: date) -> None:
    assert key not in keys_on(first - timedelta(days=1))
    day = first
    while day <= last:
        assert key in keys_on(day), day
        day += timedelta(days=1)
    assert key not in keys_on(last + timedelta(days=1))


def test_ramadan_starts_agree_with_hijridate() -> None:
    assert CAL.hijri_date(date(2026, 2, 18), country=None) == (1447, 9, 1)
    assert CAL.hijri_date(date(2027, 2, 8), country=None) == (1448, 9, 1)
    assert CAL.hijri_date(date(2027, 3, 8), country=None) == (1448, 9, 29)


def test_kuwait_national_day_in_ramadan_1448() -> None:
    moment = CAL.moment(datetime(2027, 2, 25, 6, tzinfo=UTC), tz=KUWAIT, country="KW")
    assert moment.hijri == (1448, 9, 18)
    assert [m.key for m in moment.modifiers] == ["ramadan", "national_day:KW"]
    opening = compose_opening(read_cues("السلام عليكم"), region="gulf", tone=tone("gulf"),
                              moment=moment, first_contact=True)
    assert opening.startswith("وعليكم السلام")
    assert "رمضان كريم" in opening
    assert "كل عام والكويت بخير بمناسبة العيد الوطني" in opening


def test_liberation_day_friday_in_local_time() -> None:
    # 22:00 UTC on Thursday 25 Feb is 01:00 Friday 26 Feb in Kuwait.
    moment = CAL.moment(datetime(2027, 2, 25, 22, tzinfo=UTC), tz=KUWAIT, country="kw")
    assert moment.local.date() == date(2027, 2, 26)
    assert [m.key for m in moment.modifiers] == ["ramadan", "national_day:KW", "friday"]
    assert "عيد التحرير" in moment.modifiers[1].greeting_ar
    assert moment.time_of_day == "night"
    # The same instant in New York is still Thursday evening: no Friday, no KW day.
    ny = CAL.moment(datetime(2027, 2, 25, 22, tzinfo=UTC), tz=ZoneInfo("America/New_York"),
                    country=None)
    assert [m.key for m in ny.modifiers] == ["ramadan"]
    assert ny.time_of_day == "evening"


def test_national_days_by_country() -> None:
    assert "national_day:SA" in keys_on(date(2026, 9, 23), country="SA")
    assert "national_day:SA" in keys_on(date(2027, 2, 22), country="SA")
    assert "national_day:AE" in keys_on(date(2026, 12, 2), country="AE")
    assert "national_day:QA" in keys_on(date(2026, 12, 18), country="QA")
    assert "national_day:BH" in keys_on(date(2026, 12, 16), country="BH")
    assert "national_day:OM" in keys_on(date(2026, 11, 20), country="OM")
    assert not any(k.startswith("national_day") for k in keys_on(date(2026, 9, 23), country="KW"))
    assert not any(k.startswith("national_day") for k in keys_on(date(2026, 9, 23)))


def test_tenant_national_days_replace_a_country() -> None:
    cal = SeasonCalendar(national_days={"KW": [(3, 1, "يوم الشركة")], "XX": [(1, 5, "يومنا")]})
    assert not any(k.startswith("national_day") for k in keys_on(date(2027, 2, 25), cal=cal,
                                                                 country="KW"))
    (modifier,) = [m for m in cal.modifiers_on(date(2027, 3, 1), country="KW")
                   if m.key == "national_day:KW"]
    assert modifier.greeting_ar == "كل عام والكويت بخير بمناسبة يوم الشركة"
    assert "national_day:XX" in keys_on(date(2027, 1, 5), cal=cal, country="XX")
    assert "national_day:SA" in keys_on(date(2026, 9, 23), cal=cal, country="SA")


def test_bad_tenant_data_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        SeasonCalendar(country_offsets={"MA": 3})
    with pytest.raises(ConfigurationError):
        SeasonCalendar(national_days={"KW": [(2, 30, "لا يوجد")]})


def _range(first: date, last: date) -> list[date]:
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


DAYS_2020_2040 = _range(date(2020, 1, 1), date(2040, 12, 31))


@pytest.mark.parametrize("offset", [1, -1, 2])
def test_country_offset_shifts_every_window_by_exactly_that_many_days(offset: int) -> None:
    shifted = SeasonCalendar(country_offsets={"MA": offset})
    for day in DAYS_2020_2040:
        moved = day + timedelta(days=offset)
        # What Umm al-Qura says on `day`, the country says on `day + offset` …
        assert shifted.hijri_date(moved, country="MA") == CAL.hijri_date(day, country=None)
        assert keys_on(moved, cal=shifted, country="MA") & HIJRI_KEYS == keys_on(day) & HIJRI_KEYS
    # … and countries without an offset are untouched.
    assert shifted.hijri_date(date(2027, 2, 8), country="KW") == (1448, 9, 1)


def test_offset_moves_window_starts() -> None:
    def starts(cal: SeasonCalendar, key: str) -> list[date]:
        days = [d for d in DAYS_2020_2040 if key in keys_on(d, cal=cal, country="MA")]
        inside = set(days)
        return [d for d in days if d - timedelta(days=1) not in inside]

    later = SeasonCalendar(country_offsets={"MA": 1})
    for key in sorted(HIJRI_KEYS):
        base = starts(CAL, key)
        assert len(base) >= 20, key  # ~21 Hijri years in 2020–2040
        moved = starts(later, key)
        # Same windows one day later (a window starting 1 Jan 2020 may gain/lose one at the edge).
        assert {d + timedelta(days=1) for d in base[1:-1]} <= set(moved), key


@pytest.mark.parametrize("at", [datetime(1900, 1, 1, tzinfo=UTC), datetime(2078, 1, 1, tzinfo=UTC),
                                datetime(2077, 11, 17, 12, tzinfo=UTC)])
def test_outside_calendar_range_is_a_clear_invalid_request(at: datetime) -> None:
    with pytest.raises(CalendarRangeError) as info:
        CAL.moment(at, tz=KUWAIT, country="KW")
    assert isinstance(info.value, InvalidRequest)
    assert "1924-08-01" in info.value.message and "2077-11-16" in info.value.message


def test_edge_of_range_with_timezone() -> None:
    # 16 Nov 2077 is the last supported day; 23:00 UTC is already 17 Nov in Kuwait.
    assert CAL.moment(datetime(2077, 11, 16, 12, tzinfo=UTC), tz=KUWAIT, country=None).hijri
    with pytest.raises(CalendarRangeError):
        CAL.moment(datetime(2077, 11, 16, 23, tzinfo=UTC), tz=KUWAIT, country=None)


def test_naive_time_is_refused() -> None:
    with pytest.raises(InvalidRequest):
        CAL.moment(datetime(2027, 2, 25, 6), tz=KUWAIT, country="KW")
    with pytest.raises(InvalidRequest):
        FixedClock(datetime(2027, 2, 25, 6))


@pytest.mark.parametrize(("hour_utc", "expected"), [(3, "morning"), (9, "afternoon"),
                                                    (15, "evening"), (19, "night"), (1, "night")])
def test_time_of_day_is_local(hour_utc: int, expected: str) -> None:
    # Kuwait is UTC+3 all year.
    moment = CAL.moment(datetime(2026, 11, 30, hour_utc, tzinfo=UTC), tz=KUWAIT, country=None)
    assert moment.time_of_day == expected


def test_fixed_clock_is_utc() -> None:
    clock = FixedClock(datetime(2027, 2, 25, 9, tzinfo=KUWAIT))
    assert clock.now() == datetime(2027, 2, 25, 6, tzinfo=UTC)
    assert clock.now().utcoffset() == timedelta(0)


def test_user_seasonal_greeting_replied_not_repeated() -> None:
    moment = CAL.moment(datetime(2027, 2, 25, 6, tzinfo=UTC), tz=KUWAIT, country="KW")
    opening = compose_opening(read_cues("رمضان كريم"), region="gulf", tone=tone("gulf"),
                              moment=moment, first_contact=False)
    assert opening.startswith("الله أكرم")
    assert "رمضان كريم" not in opening
    assert moment.modifiers[0].reply_ar == "الله أكرم"


def test_hijridate_is_the_source() -> None:
    # Independent spot check against the library over a year of days.
    for day in _range(date(2030, 1, 1), date(2030, 12, 31)):
        h = Gregorian(day.year, day.month, day.day).to_hijri()
        assert CAL.hijri_date(day, country=None) == (h.year, h.month, h.day)
