"""Per-tenant configuration: voice, calendar overrides and model.

One service serves many companies. Each tenant may have its own persona and
register policy, national-day overrides and moon-sighting offsets, and its own
model endpoint; everything unset falls back to the service default.

>>> directory = Tenants(default=Tenant(ToneProfile(), SeasonCalendar(), model))  # doctest: +SKIP
>>> directory("acme").profile.persona_name                                       # doctest: +SKIP
'ديوانية'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from majlis.compaction import CompactionPolicy
from majlis.culture import SeasonCalendar, ToneProfile
from majlis.models import ChatModel, Pricing
from majlis.tools import Tool


@dataclass(frozen=True, slots=True)
class Tenant:
    profile: ToneProfile
    calendar: SeasonCalendar
    model: ChatModel
    prices: Pricing | None = None
    tools: tuple[Tool, ...] = ()  # the tenant's own webhook tools (its backends)
    # Answers when ``model`` fails after its retries (on_model_failure="offline");
    # None: the turn fails UNAVAILABLE and nothing is saved.
    fallback: ChatModel | None = None
    # Told once per handoff to a person (a POST with the reason and Arabic summary).
    handoff_webhook: Tool | None = None
    # Personal data is always masked before it is stored. "masked": the model sees
    # the masked text too (****4567); "raw": this turn's own message reaches the
    # model as typed (history stays masked, and the stored reply is masked).
    pii_to_model: Literal["masked", "raw"] = "masked"
    # When the history folds into a running summary (majlis.compaction); default: never.
    compaction: CompactionPolicy = field(default_factory=CompactionPolicy)


@dataclass(frozen=True)
class Tenants:
    """``tenants(name)`` → that tenant's :class:`Tenant`, or the default."""

    default: Tenant
    overrides: Mapping[str, Tenant] = field(default_factory=dict)

    def __call__(self, tenant: str) -> Tenant:
        return self.overrides.get(tenant, self.default)
