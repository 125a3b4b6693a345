"""Per-turn tool wiring (``TurnTools``): built-in tools bound to this turn's tenant, user, thread.

Was ``majlis.toolkit`` (a name one letter from the ``majlis.tools`` package it builds on)."""

from __future__ import annotations

from functools import lru_cache

import nlp
from majlis.models import Recalled
from majlis.records import ToolScope
from majlis.tenants import Tenants
from majlis.tools import (
    Tool,
    ToolRegistry,
    compose_handoff_summary,
    handoff_tool,
    kb_search_tool,
    remember_fact_tool,
)
from memory import Kind, MemoryStore, NewRecord
from nlp import pii


@lru_cache(maxsize=1024)
def _keys_of(text: str) -> tuple[str, ...]:
    return tuple(nlp.search_keys(text))


def _cached_keys(text: str) -> list[str]:
    """``nlp.search_keys`` memoised: every turn builds a registry over the same
    tool descriptions, examples and function words — key them once per process."""
    return list(_keys_of(text))


def safe_fact(fact: str) -> str:
    """What ``remember_fact`` stores: «بطاقتي 4111 1111 1111 1111» → 'بطاقتي ****1111'."""
    return pii.mask(nlp.clean(fact))


class TurnTools:
    """``TurnTools(store, tenants)(scope)`` → the :class:`ToolRegistry` for one turn.

    Built-ins are closures over the turn, so a tool can never reach another
    tenant's knowledge base or write a fact onto another user.
    """

    def __init__(self, store: MemoryStore, tenants: Tenants) -> None:
        self._store = store
        self._tenants = tenants

    def __call__(self, scope: ToolScope) -> ToolRegistry:
        tenant, user, thread, turn_id = scope.tenant, scope.user_id, scope.thread_id, scope.turn_id

        async def search(query: str, k: int) -> list[Recalled]:
            hits = await self._store.search(tenant, query, kinds={Kind.DOCUMENT}, k=k)
            return [Recalled(id=h.record.id, kind=str(h.record.kind), title=h.record.title,
                             text=h.record.text, snippet=h.snippet, score=h.score) for h in hits]

        async def remember(fact: str) -> str:
            # The model writes this text: spoofing controls and personal data
            # are taken out exactly as from the user's own message.
            (saved,) = await self._store.put([NewRecord(
                tenant=tenant, kind=Kind.FACT, text=safe_fact(fact), user_id=user,
                thread_id=thread, turn_id=turn_id, metadata={"source": "remember_fact"})])
            return saved.id

        def summarise() -> str:
            return compose_handoff_summary(
                dialect=scope.dialect, phase=scope.phase, open_request=scope.text,
                sentiment="frustrated" if scope.frustrated else "neutral",
                facts=list(scope.facts))

        config = self._tenants(tenant)
        notify = config.handoff_webhook.run if config.handoff_webhook is not None else None
        builtins: list[Tool] = [kb_search_tool(search), remember_fact_tool(remember),
                                handoff_tool(summarise, notify)]
        webhooks = config.tools
        return ToolRegistry([*builtins, *webhooks], keys=_cached_keys)
