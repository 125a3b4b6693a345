"""The offline responder's fixed phrases, per dialect region and gender, kept as data.

``data/phrases.json`` maps a phrase id to ``{key: text}``. A key is a region
(``gulf``), the ``neutral`` voice, or a country variant ``region:CC``
(``maghrebi:DZ`` Algerian, ``maghrebi:TN`` Tunisian; ``maghrebi`` itself is
Moroccan). Lookup falls back variant → region → ``msa``, so a new region can
be added phrase by phrase without breaking anything. A text is a string, or
``{"any", "m", "f"}``: ``any`` is said while the user's gender is unknown and
uses no gendered second-person verb.

    >>> book = PhraseBook.load()
    >>> book.say("ask_order_number", "levantine")
    'ممكن رقم الطلب لنتابعلك ياه؟'
    >>> book.say("ask_order_number", "levantine", gender="f")
    'فيكي تعطينا رقم الطلب لنتابعلك ياه؟'
    >>> book.say("need_param", "maghrebi", country="TN", what="رقم الطلب")
    'يلزمنا رقم الطلب باش نكمّلو الطلب متاعك.'

The voice can also travel as one string (:func:`voice_key`), which is how the
offline responder receives it through ``ResponderContext.region``:

    >>> book.say("handoff_started", voice_key("gulf", gender="m"))
    'أبشر، نحوّلك الحين لموظف من فريقنا.'
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from importlib import resources
from typing import Any

__all__ = ["FALLBACK_REGION", "GENDERS", "PhraseBook", "parse_voice", "voice_key"]

FALLBACK_REGION = "msa"
# Gender as the thread knows it: None (unknown, the neutral form), "m", "f".
GENDERS: tuple[str | None, ...] = (None, "m", "f")
_GENDER_SEP = "/"
_COUNTRY_SEP = ":"

Text = str | Mapping[str, str]


def voice_key(region: str, *, gender: str | None = None, country: str | None = None) -> str:
    """One string naming region, country variant and gender: ``"maghrebi:DZ/f"``.

    >>> voice_key("maghrebi", gender="f", country="dz")
    'maghrebi:DZ/f'
    >>> voice_key("gulf")
    'gulf'
    """
    key = region
    if country:
        key += _COUNTRY_SEP + country.upper()
    if gender in ("m", "f"):
        key += _GENDER_SEP + gender
    return key


def parse_voice(voice: str) -> tuple[str, str | None, str | None]:
    """``"maghrebi:DZ/f"`` → ``("maghrebi", "DZ", "f")``; a plain region passes through.

    >>> parse_voice("gulf")
    ('gulf', None, None)
    """
    body, _, gender = voice.partition(_GENDER_SEP)
    region, _, country = body.partition(_COUNTRY_SEP)
    return region, (country or None), (gender if gender in ("m", "f") else None)


class PhraseBook:
    def __init__(self, table: Mapping[str, Mapping[str, Text]]) -> None:
        for phrase_id, by_region in table.items():
            if FALLBACK_REGION not in by_region:
                raise ValueError(f"phrase {phrase_id!r} has no {FALLBACK_REGION!r} text")
            for key, text in by_region.items():
                if not isinstance(text, str) and not isinstance(text.get("any"), str):
                    raise ValueError(f"phrase {phrase_id!r}/{key} needs an 'any' form")
        self._table = table

    @classmethod
    def load(cls) -> PhraseBook:
        raw: dict[str, Any] = json.loads(
            resources.files("majlis.models").joinpath("data/phrases.json").read_text("utf-8")
        )
        return cls({k: v for k, v in raw.items() if not k.startswith("_")})

    def phrase_ids(self) -> Iterator[str]:
        return iter(self._table)

    def keys_of(self, phrase_id: str) -> tuple[str, ...]:
        """The region / variant keys a phrase has its own text for."""
        return tuple(self._table[phrase_id])

    def say(
        self,
        phrase_id: str,
        region: str,
        *,
        gender: str | None = None,
        country: str | None = None,
        **slots: str,
    ) -> str:
        """The phrase for ``region`` (or a :func:`voice_key`), ``country`` and ``gender``.

        Explicit ``gender`` / ``country`` win over those inside a voice key. Moroccan
        is the Maghrebi default: ``country`` MA, or none, reads the ``maghrebi`` text.
        """
        base, key_country, key_gender = parse_voice(region)
        gender = gender if gender in ("m", "f") else key_gender
        country = (country or key_country or "").upper()
        by_region = self._table[phrase_id]
        text = (
            by_region.get(f"{base}{_COUNTRY_SEP}{country}") if country else None
        ) or by_region.get(base) or by_region[FALLBACK_REGION]
        if not isinstance(text, str):
            text = text.get(gender or "any") or text["any"]
        return text.format(**slots) if slots else text
