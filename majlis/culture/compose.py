"""Composing the customary opening and closing lines of a reply.

The opening returns every greeting the user gave, in the user's dialect and
the turn's register, then the day's seasonal greetings (on first contact or
when the user greeted), in the region's words, worship-specific ones only for a
tenant that opted in, and never more than two greetings before the answer
(:mod:`majlis.culture.seasonal`). The model layer writes the business part after it.

    >>> from datetime import UTC, datetime
    >>> from zoneinfo import ZoneInfo
    >>> from majlis.culture import SeasonCalendar, ToneProfile, compute_tone, read_cues
    >>> at = datetime(2027, 2, 25, 6, tzinfo=UTC)  # 18 Ramadan 1448, Kuwait National Day
    >>> moment = SeasonCalendar().moment(at, tz=ZoneInfo("Asia/Kuwait"), country="KW")
    >>> cues = read_cues("السلام عليكم، شلونك؟")
    >>> tone = compute_tone(ToneProfile(), region="gulf", cues=cues, turn_index=0,
    ...                     known_gender=None, moment=moment, prior_formality=None)
    >>> opening = compose_opening(cues, region="gulf", tone=tone, moment=moment,
    ...                           first_contact=True)
    >>> for line in opening.split("؟ "):
    ...     print(line)
    وعليكم السلام ورحمة الله وبركاته، الحمد لله بخير، وانتوا شلونكم
    رمضان كريم. كل عام والكويت بخير بمناسبة العيد الوطني
    >>> compose_closing(read_cues("مشكور، مع السلامة"), region="gulf", tone=tone)
    'العفو، في أمان الله'
"""

from __future__ import annotations

from collections.abc import Iterable

from majlis.culture.calendar import Moment
from majlis.culture.cues import Cues
from majlis.culture.greetings import GreetingTable, load_greetings
from majlis.culture.seasonal import MAX_GREETINGS, seasonal_wishes
from majlis.culture.tone import ToneDirective

__all__ = ["compose_closing", "compose_opening"]

# Sentence ends that need no full stop before the next sentence (؟ is U+061F).
_ENDS = ("?", "\u061f", "!", ".")


def _dialect(region: str, tone: ToneDirective) -> str:
    """Replies follow the directive's register: the user's region, or MSA by policy."""
    return "msa" if tone.register == "msa" else region


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def _sentences(parts: list[str]) -> str:
    """Join sentences with a full stop unless one already ends in ?/؟/!/."""
    out = ""
    for part in parts:
        if out:
            out += (" " if out.endswith(_ENDS) else ". ") + part
        else:
            out = part
    return out


def compose_opening(
    cues: Cues,
    *,
    region: str,
    tone: ToneDirective,
    moment: Moment,
    first_contact: bool,
    greetings: GreetingTable | None = None,
) -> str:
    """The reciprocal greeting(s), then seasonal greeting(s); "" when nothing to say.

    Order: greetings returned as said (السلام عليكم → وعليكم السلام, رمضان كريم → الله
    أكرم), then the wellbeing answer with its question back (it ends in ؟), then the
    day's seasonal greetings, skipping any the user already said.
    """
    table = greetings or load_greetings()
    dialect = _dialect(region, tone)
    entries = [table.entry(key) for key in cues.openers]

    def reply(key: str) -> str:
        return table.entry(key).reply(
            region=dialect, register=tone.formality, gender=tone.addressee_gender
        )

    head = _unique(
        [reply(e.key) for e in entries if not e.wellbeing]
        + [reply(e.key) for e in entries if e.wellbeing]
    )
    seasonal: list[str] = []
    if first_contact or cues.greeted:
        seasonal = seasonal_wishes(
            moment, region=dialect, religious=tone.religious_greetings, limit=MAX_GREETINGS,
            brief=tone.greeting_style == "brief", skip=frozenset(cues.openers))
    parts = ["، ".join(head)] if head else []
    return _sentences(parts + _unique(seasonal))


def compose_closing(
    cues: Cues,
    *,
    region: str,
    tone: ToneDirective,
    greetings: GreetingTable | None = None,
) -> str:
    """The answer to thanks and goodbyes: شكرا → العفو, تسلم → الله يسلمك, مع السلامة →
    في أمان الله; "" when the message neither thanks nor leaves."""
    table = greetings or load_greetings()
    dialect = _dialect(region, tone)
    keys = list(cues.closers)
    if cues.farewell and not any(table.entry(k).kind == "farewell" for k in keys):
        keys.append("ma_salama")  # a bare "سلام" next to thanks is a goodbye
    replies = _unique(
        table.entry(k).reply(region=dialect, register=tone.formality, gender=tone.addressee_gender)
        for k in keys
    )
    return "، ".join(replies)
