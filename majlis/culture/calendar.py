"""The season calendar: Hijri date, seasonal modifiers and time of day for a turn.

Hijri dates come from ``hijridate`` (Umm al-Qura, the Saudi civil calendar).
Moon-sighting differs by country, so each country has a day offset: with
offset +1 a country's Hijri date on day *d* is Umm al-Qura's date on *d − 1*,
which moves every seasonal window (Ramadan, the Eids, Arafah, the new year)
exactly one day later. Gregorian modifiers (Friday, national days) do not move.

Convention (documented because it is a choice): a modifier belongs to the
user's local *civil* day. The Islamic day starts at sunset, so the evening of
20 Ramadan is already "the 21st night"; we still count the last ten nights
from the civil day of 21 Ramadan, and the evening before Eid is still Ramadan.

    >>> from datetime import UTC
    >>> cal = SeasonCalendar()
    >>> at = datetime(2027, 2, 25, 6, tzinfo=UTC)
    >>> m = cal.moment(at, tz=ZoneInfo("Asia/Kuwait"), country="KW")
    >>> m.hijri, [x.key for x in m.modifiers], m.time_of_day
    ((1448, 9, 18), ['ramadan', 'national_day:KW'], 'morning')
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from functools import lru_cache
from importlib import resources
from typing import Any, Literal
from zoneinfo import ZoneInfo

from hijridate import Gregorian, ummalqura

from diwaniya.errors import CalendarRangeError, ConfigurationError
from majlis.culture.clock import require_aware
from majlis.culture.greetings import GreetingTable, load_greetings

__all__ = ["MAX_OFFSET", "Modifier", "Moment", "SeasonCalendar", "TimeOfDay", "time_of_day"]

TimeOfDay = Literal["morning", "afternoon", "evening", "night"]
MAX_OFFSET = 2  # moon-sighting never differs from Umm al-Qura by more than two days

_FIRST = date(*ummalqura.GREGORIAN_RANGE[0])
_LAST = date(*ummalqura.GREGORIAN_RANGE[1])
_RANGE_TEXT = (
    f"{_FIRST.isoformat()} to {_LAST.isoformat()} "
    f"({ummalqura.HIJRI_RANGE[0][0]}–{ummalqura.HIJRI_RANGE[1][0]} AH, Umm al-Qura)"
)


@dataclass(frozen=True, slots=True)
class Modifier:
    """A seasonal fact about the day, with what to say about it.

    ``greeting_ar`` is what the service says ("رمضان كريم، ومبارك عليكم الشهر");
    ``reply_ar`` is the answer when the *user* says it first (رمضان كريم → الله أكرم).
    """

    key: str
    greeting_ar: str
    reply_ar: str | None
    user_openers: tuple[str, ...] = ()  # greeting-table keys a user says for it


@dataclass(frozen=True, slots=True)
class Moment:
    """Everything culture needs to know about *when* a turn happens."""

    utc: datetime
    local: datetime
    country: str | None
    hijri: tuple[int, int, int]
    modifiers: tuple[Modifier, ...]
    time_of_day: TimeOfDay

    def has(self, key: str) -> bool:
        return any(m.key == key for m in self.modifiers)


def time_of_day(local: datetime) -> TimeOfDay:
    """صباح 05–11, afternoon 12–16, مساء 17–20, night 21–04 (local hours)."""
    hour = local.hour
    if 5 <= hour < 12:
        return "morning"
    if 12 <= hour < 17:
        return "afternoon"
    if 17 <= hour < 21:
        return "evening"
    return "night"


@lru_cache(maxsize=65536)
def _umm_al_qura(ordinal: int) -> tuple[int, int, int]:
    """Umm al-Qura date of a Gregorian day ordinal (cached: the table is a bisect)."""
    day = date.fromordinal(ordinal)
    if not _FIRST <= day <= _LAST:
        raise CalendarRangeError(
            f"date {day.isoformat()} is outside the supported calendar range {_RANGE_TEXT}",
            field="client_time",
        )
    hijri = Gregorian(day.year, day.month, day.day).to_hijri()
    return (hijri.year, hijri.month, hijri.day)


# Hijri-calendar windows, in the order their greetings are said.
def _hijri_keys(month: int, day: int) -> list[str]:
    keys = []
    if month == 9:
        keys.append("ramadan")
        if day >= 21:
            keys.append("last_ten_nights")
    if month == 10 and day <= 3:
        keys.append("eid_al_fitr")
    if month == 12 and day == 9:
        keys.append("arafah")
    if month == 12 and 10 <= day <= 13:
        keys.append("eid_al_adha")
    if month == 1 and day == 1:
        keys.append("hijri_new_year")
    return keys


@dataclass(frozen=True, slots=True)
class _Country:
    name_ar: str | None
    hijri_offset: int
    national_days: tuple[tuple[int, int, str], ...]


def _checked_offset(country: str, offset: Any) -> int:
    if not isinstance(offset, int) or isinstance(offset, bool) or abs(offset) > MAX_OFFSET:
        raise ConfigurationError(
            f"Hijri offset for {country} must be an integer in -{MAX_OFFSET}..{MAX_OFFSET}, "
            f"got {offset!r}"
        )
    return offset


def _checked_days(country: str, days: Sequence[Sequence[Any]]) -> tuple[tuple[int, int, str], ...]:
    checked = []
    for entry in days:
        try:
            month, day, name = entry
            date(2024, int(month), int(day))  # a leap year, so 29 Feb is allowed
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(
                f"national day {entry!r} for {country} must be (month, day, name): {exc}"
            ) from exc
        checked.append((int(month), int(day), str(name)))
    return tuple(checked)


@lru_cache(maxsize=1)
def _packaged() -> tuple[dict[str, Any], dict[str, Any]]:
    root = resources.files("majlis.culture").joinpath("data")
    countries = json.loads(root.joinpath("countries.json").read_text("utf-8"))["countries"]
    seasons = json.loads(root.joinpath("seasons.json").read_text("utf-8"))["modifiers"]
    return countries, seasons


class SeasonCalendar:
    """Moments for turns, from packaged country data merged with tenant overrides.

    ``country_offsets`` maps ISO country codes to a Hijri day offset (−2..2).
    ``national_days`` maps a country to its full list of (month, day, name):
    an override *replaces* that country's packaged list (an empty list turns
    its national days off); other countries keep the packaged data.
    """

    def __init__(
        self,
        *,
        country_offsets: Mapping[str, int] | None = None,
        national_days: Mapping[str, Sequence[tuple[int, int, str]]] | None = None,
        greetings: GreetingTable | None = None,
    ) -> None:
        countries, seasons = _packaged()
        self._countries: dict[str, _Country] = {
            code: _Country(
                name_ar=raw["name_ar"],
                hijri_offset=_checked_offset(code, raw["hijri_offset"]),
                national_days=_checked_days(code, raw["national_days"]),
            )
            for code, raw in countries.items()
        }
        for code, days in (national_days or {}).items():
            base = self._countries.get(code.upper(), _Country(None, 0, ()))
            self._countries[code.upper()] = _Country(
                base.name_ar, base.hijri_offset, _checked_days(code, days)
            )
        for code, offset in (country_offsets or {}).items():
            base = self._countries.get(code.upper(), _Country(None, 0, ()))
            self._countries[code.upper()] = _Country(
                base.name_ar, _checked_offset(code, offset), base.national_days
            )
        table = greetings or load_greetings()
        self._seasons: dict[str, tuple[str, str | None, tuple[str, ...]]] = {}
        for key, raw in seasons.items():
            openers = tuple(raw["user_openers"])
            reply = (
                table.entry(openers[0]).reply(region="default", register="neutral", gender=None)
                if openers
                else None
            )
            self._seasons[key] = (raw["greeting_ar"], reply, openers)

    def offset_for(self, country: str | None) -> int:
        info = self._countries.get(country.upper()) if country else None
        return info.hijri_offset if info else 0

    def hijri_date(self, day: date, *, country: str | None) -> tuple[int, int, int]:
        """The country's Hijri date of a local civil day (Umm al-Qura shifted by its offset).

        Raises CalendarRangeError outside the supported range.
        """
        return _umm_al_qura(day.toordinal() - self.offset_for(country))

    def _modifier(self, key: str, **fields: str) -> Modifier:
        greeting, reply, openers = self._seasons[key.split(":")[0]]
        return Modifier(key, greeting.format(**fields), reply, openers)

    def modifiers_on(self, day: date, *, country: str | None) -> tuple[Modifier, ...]:
        """All modifiers of one local civil day, Hijri ones first, then national days, Friday."""
        _, month, hday = self.hijri_date(day, country=country)
        found = [self._modifier(key) for key in _hijri_keys(month, hday)]
        code = country.upper() if country else None
        info = self._countries.get(code) if code else None
        if info is not None:
            for nd_month, nd_day, name in info.national_days:
                if (day.month, day.day) == (nd_month, nd_day):
                    found.append(
                        self._modifier(
                            f"national_day:{code}", country=info.name_ar or "وطنكم", day=name
                        )
                    )
        if day.weekday() == 4:  # Monday is 0: Friday is 4
            found.append(self._modifier("friday"))
        return tuple(found)

    def moment(self, at: datetime, *, tz: ZoneInfo, country: str | None) -> Moment:
        """The turn's moment in the user's timezone and country.

        Raises CalendarRangeError (an InvalidRequest naming the supported range)
        when the local day is outside Umm al-Qura's table, never a wrong greeting.
        """
        utc = require_aware(at)
        try:
            local = utc.astimezone(tz)
        except OverflowError:
            # 9999-12-31 in UTC is already year 10000 in Asia/Kuwait (and year 1
            # west of UTC is year 0): far outside the table, so the same answer.
            raise CalendarRangeError(
                f"date {utc.date().isoformat()} is outside the supported calendar range "
                f"{_RANGE_TEXT}", field="client_time") from None
        code = country.upper() if country else None
        return Moment(
            utc=utc,
            local=local,
            country=code,
            hijri=self.hijri_date(local.date(), country=code),
            modifiers=self.modifiers_on(local.date(), country=code),
            time_of_day=time_of_day(local),
        )

