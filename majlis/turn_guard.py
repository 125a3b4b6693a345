"""The one hook where budgets and rate limits meet the engine.

:class:`GuardedEngine` is the :class:`~majlis.engine.ConversationEngine` with
an admission check in front of every turn and approval (before the graph runs,
so before any model call) and the usage of each model call added to the
budgets as its ``usage`` event passes. Everything else is the engine's own.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator
from typing import Any

from majlis.approvals import ApprovalRequest
from majlis.budgets import TurnBudgets
from majlis.engine import ConversationEngine
from majlis.events import Envelope, Usage
from majlis.requests import TurnRequest

log = logging.getLogger("diwaniya.budgets")


class GuardedEngine(ConversationEngine):
    def __init__(self, *args: Any, budgets: TurnBudgets | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._budgets = budgets

    async def run_turn(self, request: TurnRequest, **kwargs: Any
                       ) -> AsyncGenerator[Envelope, None]:
        await self._admit(request.tenant, request.thread_id)
        async for envelope in self._metered(request.tenant, super().run_turn(request, **kwargs)):
            yield envelope

    async def run_approval(self, request: ApprovalRequest) -> AsyncGenerator[Envelope, None]:
        await self._admit(request.tenant, request.thread_id)
        async for envelope in self._metered(request.tenant, super().run_approval(request)):
            yield envelope

    async def _admit(self, tenant: str, thread_id: str) -> None:
        if self._budgets is None or not self._budgets.policy(tenant).enabled:
            return
        # A database outage here is UNAVAILABLE with a retry hint, as everywhere.
        with self._db.errors():
            await self._budgets.admit(tenant, thread_id)

    async def _metered(self, tenant: str, events: AsyncGenerator[Envelope, None]
                       ) -> AsyncGenerator[Envelope, None]:
        async with contextlib.aclosing(events) as stream:
            async for envelope in stream:
                if isinstance(envelope.event, Usage) and self._budgets is not None:
                    # Spent is spent: counted at once, even if the turn fails later.
                    try:
                        with self._db.errors():
                            await self._budgets.record(tenant, envelope.thread_id,
                                                       envelope.event)
                    except Exception:
                        # The turn itself is fine; the budget undercounts by this call.
                        log.warning("could not record usage for tenant %r", tenant,
                                    exc_info=True)
                yield envelope
