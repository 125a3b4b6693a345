"""The offline responder's fixed phrases, per dialect region, kept as data.

``data/phrases.json`` maps a phrase id to ``{region: text}``; ``msa`` is the
fallback for a region the table does not know, so a new region can be added
phrase by phrase without breaking anything.

    >>> PhraseBook.load().say("ask_order_number", "levantine")
    'فيك تعطيني رقم الطلب لتابعلك ياه؟'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from typing import Any

__all__ = ["FALLBACK_REGION", "PhraseBook"]

FALLBACK_REGION = "msa"


class PhraseBook:
    def __init__(self, table: Mapping[str, Mapping[str, str]]) -> None:
        for phrase_id, by_region in table.items():
            if FALLBACK_REGION not in by_region:
                raise ValueError(f"phrase {phrase_id!r} has no {FALLBACK_REGION!r} text")
        self._table = table

    @classmethod
    def load(cls) -> PhraseBook:
        raw: dict[str, Any] = json.loads(
            resources.files("majlis.models").joinpath("data/phrases.json").read_text("utf-8")
        )
        return cls({k: v for k, v in raw.items() if not k.startswith("_")})

    def say(self, phrase_id: str, region: str, **slots: str) -> str:
        by_region = self._table[phrase_id]
        text = by_region.get(region) or by_region[FALLBACK_REGION]
        return text.format(**slots) if slots else text
