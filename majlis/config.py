"""Building a layer's frozen config from the operator's settings, by field name.

Each layer owns a frozen dataclass (``Limits``, ``EngineConfig``,
``ServerOptions`` …) with ONE ``from_settings``; none of them imports the
settings class (only ``service`` does), so they read any object carrying
attributes of the same names. A config field whose setting is named
differently is listed in ``renames`` (config field → setting), once; a field
with no setting (or in ``skip``) keeps its default.

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Limits:
...     max_text_chars: int = 4000
...     max_token_chars: int = 200
>>> class S:
...     max_text_chars = 500
...     persona_name = "ديوانية"
>>> settings_values(Limits, S())
{'max_text_chars': 500}
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import fields
from typing import Any

_MISSING = object()


def settings_values(cls: Any, settings: object, renames: Mapping[str, str] | None = None,
                    skip: Collection[str] = ()) -> dict[str, Any]:
    """Constructor arguments of dataclass ``cls`` found on ``settings`` (but not ``skip``)."""
    values: dict[str, Any] = {}
    for f in fields(cls):
        if f.name in skip:
            continue
        value = getattr(settings, (renames or {}).get(f.name, f.name), _MISSING)
        if value is not _MISSING:
            values[f.name] = value
    return values
