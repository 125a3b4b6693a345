"""Which seasonal wishes a reply opens with, in whose words, and how many.

The calendar (:mod:`majlis.culture.calendar`) says *what* the day is; this
module says what a careful support team says about it:

- region-true wording: an Egyptian reads «كل سنة وانتم طيبين», the Maghreb
  «عواشر مبروكة» (``by_region`` in ``data/seasons.json``);
- worship-specific wishes (جمعة مباركة, the last ten nights, Arafah, «تقبّل الله
  صيامكم») only for a tenant that opts in; otherwise the plain «رمضان كريم»;
- the day's main occasion first (``priority``), and never more than the
  greetings the reply has room for.

    >>> from datetime import UTC, datetime
    >>> from zoneinfo import ZoneInfo
    >>> from majlis.culture.calendar import SeasonCalendar
    >>> at = datetime(2027, 2, 26, 9, tzinfo=UTC)  # Ramadan, Liberation Day, a Friday
    >>> moment = SeasonCalendar().moment(at, tz=ZoneInfo("Asia/Kuwait"), country="KW")
    >>> seasonal_wishes(moment, region="gulf", religious=False, limit=2)
    ['رمضان كريم', 'كل عام والكويت بخير بمناسبة عيد التحرير']
    >>> len(seasonal_wishes(moment, region="gulf", religious=True, limit=2))  # not Friday too
    2
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

from majlis.culture.calendar import Modifier, Moment

__all__ = ["MAX_GREETINGS", "seasonal_wishes", "wording"]

# At most this many seasonal greetings before the answer (the reply to what the
# user said is not counted: it answers them): three in a row (Ramadan,
# Liberation Day, Friday) bury what the customer asked.
MAX_GREETINGS = 2
# Wishes a brief greeting style leaves out: they are nice, not expected.
_MINOR = frozenset({"friday", "last_ten_nights"})


@lru_cache(maxsize=1)
def wording() -> Mapping[str, Mapping[str, Any]]:
    """The packaged per-modifier wording rules (``data/seasons.json``)."""
    root = resources.files("majlis.culture").joinpath("data")
    data: dict[str, Any] = json.loads(root.joinpath("seasons.json").read_text("utf-8"))
    return data["modifiers"]


def _text(modifier: Modifier, rules: Mapping[str, Any], region: str, religious: bool) -> str:
    if religious:
        by_region = rules.get("religious_by_region", {})
        if region in by_region:
            return str(by_region[region])
        if "religious_ar" in rules:
            return str(rules["religious_ar"])
    by_region = rules.get("by_region", {})
    return str(by_region.get(region, modifier.greeting_ar))


def seasonal_wishes(
    moment: Moment,
    *,
    region: str,
    religious: bool,
    limit: int = MAX_GREETINGS,
    brief: bool = False,
    skip: frozenset[str] = frozenset(),
) -> list[str]:
    """The day's wishes for ``region`` (a dialect region, "msa" or "neutral"), main first.

    ``religious`` is the tenant's opt-in for worship-specific wishes; ``skip``
    holds greeting-table keys the user already said (their reply is given
    instead); ``brief`` keeps one wish and no minor ones.
    """
    table = wording()
    ranked: list[tuple[int, int, str]] = []
    for order, modifier in enumerate(moment.modifiers):
        rules = table.get(modifier.key.split(":")[0], {})
        if rules.get("religious") and not religious:
            continue
        if skip & set(modifier.user_openers):
            continue
        if brief and modifier.key in _MINOR:
            continue
        ranked.append((int(rules.get("priority", 9)), order,
                       _text(modifier, rules, region, religious)))
    # Keep the main occasions (priority), then say them in the calendar's order.
    kept = sorted(ranked)[: min(limit, 1) if brief else limit]
    return list(dict.fromkeys(text for _, _, text in sorted(kept, key=lambda r: r[1])))
