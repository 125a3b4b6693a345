"""The reciprocal-greeting table: who says what, and the customary answer.

The table lives in ``data/greetings.json`` (one file, reviewed entry by entry).
Each entry is an *opener* (السلام عليكم, صباح الخير, شلونك, رمضان كريم …) or a
*closer* of kind ``thanks`` / ``farewell`` (شكرا, مع السلامة …). An entry lists
its match phrases per region and its replies per region and register:

    >>> table = load_greetings()
    >>> table.entry("salam").reply(region="gulf", register="formal", gender=None)
    'وعليكم السلام ورحمة الله وبركاته'
    >>> table.entry("shlonak").reply(region="gulf", register="neutral", gender="f")
    'الحمد لله بخير، وانتي شلونج؟'
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from diwaniya.errors import ConfigurationError

__all__ = ["REGISTERS", "GreetingEntry", "GreetingTable", "load_greetings"]

EntryKind = Literal["opener", "thanks", "farewell"]
Gender = Literal["m", "f"]
REGISTERS = ("formal", "neutral", "casual")


@dataclass(frozen=True)
class GreetingEntry:
    """One opener or closer: its match phrases and its replies."""

    key: str
    kind: EntryKind
    wellbeing: bool
    also_farewell: bool
    match: Mapping[str, tuple[str, ...]]
    replies: Mapping[str, Mapping[str, Mapping[str, str]]]

    def phrases_for(self, region: str) -> tuple[str, ...]:
        """The phrases a user from ``region`` says: the common ones plus the region's own."""
        return self.match.get("common", ()) + self.match.get(region, ())

    @property
    def regions(self) -> tuple[str, ...]:
        """Regions with phrases of their own ("common" is not a region)."""
        return tuple(r for r in self.match if r != "common")

    def all_phrases(self) -> Iterator[str]:
        for phrases in self.match.values():
            yield from phrases

    def reply(self, *, region: str, register: str, gender: Gender | None) -> str:
        """The customary answer in ``region``'s dialect and ``register``.

        A missing region falls back to ``default``; a missing register to
        ``neutral``. A reply that addresses the user picks its feminine form only
        when the gender is *known* ("وانتي شلونج؟"); otherwise the generic form.
        """
        by_register = self.replies.get(region) or self.replies["default"]
        variants = by_register.get(register) or by_register["neutral"]
        if gender is not None and gender in variants:
            return variants[gender]
        return variants["any"]


def _variants(raw: Any, where: str) -> dict[str, str]:
    """A reply is a string, or {"any": ..., "m": ..., "f": ...}; normalise to the dict."""
    if isinstance(raw, str):
        return {"any": raw}
    if isinstance(raw, dict) and isinstance(raw.get("any"), str):
        return {k: str(v) for k, v in raw.items() if k in {"any", "m", "f"}}
    raise ConfigurationError(f"greetings table: reply at {where} must be a string or have 'any'")


def _entry(key: str, raw: Mapping[str, Any], kind: EntryKind) -> GreetingEntry:
    replies: dict[str, dict[str, dict[str, str]]] = {}
    for region, by_register in raw.get("replies", {}).items():
        if "neutral" not in by_register:
            raise ConfigurationError(f"greetings table: {key}/{region} has no 'neutral' reply")
        replies[region] = {
            register: _variants(value, f"{key}/{region}/{register}")
            for register, value in by_register.items()
        }
    if "default" not in replies:
        raise ConfigurationError(f"greetings table: {key} has no 'default' replies")
    return GreetingEntry(
        key=key,
        kind=kind,
        wellbeing=bool(raw.get("wellbeing", False)),
        also_farewell=bool(raw.get("also_farewell", False)),
        match={region: tuple(phrases) for region, phrases in raw["match"].items()},
        replies=replies,
    )


@dataclass(frozen=True)
class GreetingTable:
    """All entries by key; openers and closers share one key space.

    ``edge_only`` phrases are ambiguous inside a sentence (بأي folds to باي, هلأ to
    هلا, السلامة 'safety' to بسلامة), so they count only at an edge of a message.
    """

    entries: Mapping[str, GreetingEntry]
    edge_only: frozenset[str] = frozenset()

    @classmethod
    def from_json(cls, text: str) -> GreetingTable:
        data = json.loads(text)
        entries: dict[str, GreetingEntry] = {}
        for key, raw in data["openers"].items():
            entries[key] = _entry(key, raw, "opener")
        for key, raw in data["closers"].items():
            kind = raw.get("kind")
            if kind not in ("thanks", "farewell"):
                raise ConfigurationError(f"greetings table: closer {key} has kind {kind!r}")
            if key in entries:
                raise ConfigurationError(f"greetings table: duplicate key {key}")
            entries[key] = _entry(key, raw, kind)
        edge_only = frozenset(data.get("edge_only", ()))
        known = {p for e in entries.values() for p in e.all_phrases()}
        if not edge_only <= known:
            raise ConfigurationError(
                f"greetings table: edge_only phrases not in any entry: {sorted(edge_only - known)}"
            )
        return cls(entries=entries, edge_only=edge_only)

    def entry(self, key: str) -> GreetingEntry:
        return self.entries[key]

    def of_kind(self, kind: EntryKind) -> tuple[GreetingEntry, ...]:
        return tuple(e for e in self.entries.values() if e.kind == kind)


@lru_cache(maxsize=1)
def load_greetings() -> GreetingTable:
    """The packaged table (parsed once per process)."""
    text = resources.files("majlis.culture").joinpath("data/greetings.json").read_text("utf-8")
    return GreetingTable.from_json(text)
