"""Majlis culture: the phase machine, tone, reciprocal greetings and the season calendar.

The graph calls these per turn, in order: read the message, move the phase,
find the moment, compute the tone, compose the opening/closing lines.

    >>> from datetime import UTC, datetime
    >>> from zoneinfo import ZoneInfo
    >>> cues = read_cues("هلا، عندي مشكلة في الحساب")
    >>> next_phase(None, cues, since_last=None).current
    <Phase.TRANSACTION: 'transaction'>
    >>> at = FixedClock(datetime(2026, 11, 30, 6, tzinfo=UTC)).now()  # a Monday
    >>> moment = SeasonCalendar().moment(at, tz=ZoneInfo("Asia/Kuwait"), country="KW")
    >>> tone = compute_tone(ToneProfile(), region="gulf", cues=cues, turn_index=0,
    ...                     known_gender=None, moment=moment, prior_formality=None)
    >>> compose_opening(cues, region="gulf", tone=tone, moment=moment, first_contact=True)
    'هلا بك'
"""

from majlis.culture.calendar import Modifier, Moment, SeasonCalendar, TimeOfDay
from majlis.culture.clock import Clock, FixedClock, SystemClock
from majlis.culture.compose import compose_closing, compose_opening
from majlis.culture.cues import CueReader, Cues, Formality, read_cues
from majlis.culture.greetings import GreetingTable, load_greetings
from majlis.culture.phases import DEFAULT_LONG_GAP, Phase, PhaseStep, next_phase
from majlis.culture.tone import (
    MIRROR_THRESHOLD,
    ReplyRegister,
    ToneDirective,
    ToneProfile,
    choose_register,
    compute_tone,
)

__all__ = [
    "DEFAULT_LONG_GAP",
    "MIRROR_THRESHOLD",
    "Clock",
    "CueReader",
    "Cues",
    "FixedClock",
    "Formality",
    "GreetingTable",
    "Modifier",
    "Moment",
    "Phase",
    "PhaseStep",
    "ReplyRegister",
    "SeasonCalendar",
    "SystemClock",
    "TimeOfDay",
    "ToneDirective",
    "ToneProfile",
    "choose_register",
    "compose_closing",
    "compose_opening",
    "compute_tone",
    "load_greetings",
    "next_phase",
    "read_cues",
]
