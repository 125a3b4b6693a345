"""The one hook where budgets, rate limits and the injection policy meet the engine.

:class:`GuardedEngine` is the :class:`~majlis.engine.ConversationEngine` with
an admission check in front of every turn and approval (before the graph runs,
so before any model call) and the usage of each model call added to the
budgets as its ``usage`` event passes. A message that tries to instruct the
assistant («تجاهل التعليمات السابقة…», "ignore previous instructions",
"tjahal el ta3limat") is flagged in ``TurnCompleted.safety_flags``; under the
tenant policy ``block`` it is answered with :data:`BLOCKED_REPLY` without
running the graph: no model call, and nothing is added to the thread.
Everything else is the engine's own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import uuid
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from majlis.approvals import ApprovalRequest
from majlis.budgets import TurnBudgets
from majlis.engine import ConversationEngine
from majlis.events import Envelope, Event, TextDelta, TurnCompleted, TurnStarted, Usage
from majlis.models.injection import addresses_assistant
from majlis.requests import TurnRequest, validate
from majlis.threads import RequestKey

log = logging.getLogger("diwaniya.budgets")


INJECTION = "injection_suspected"
BLOCKED_REPLY = ("عذرًا، لا أستطيع تنفيذ هذا الطلب لأنه يحاول تغيير تعليمات المساعد. "
                 "يسعدني أن أساعدك في استفسارك بصيغة أخرى.")


class GuardedEngine(ConversationEngine):
    """``budgets``: None → no limits. ``injection_policy``: tenant → "flag" | "block"
    (key "" is the default for tenants not listed)."""

    def __init__(self, *args: Any, budgets: TurnBudgets | None = None,
                 injection_policy: Mapping[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._budgets = budgets
        self._injection = dict(injection_policy or {})

    async def run_turn(self, request: TurnRequest, **kwargs: Any
                       ) -> AsyncGenerator[Envelope, None]:
        await self._admit(request.tenant, request.thread_id, request.user_id, request.request_id)
        flags = INJECTION if addresses_assistant(request.text) else ""
        if flags and self._injection.get(request.tenant, self._injection.get("")) == "block":
            async for envelope in self._blocked(request):
                yield envelope
            return
        # aclosing: an abandoned turn is closed here, in this context, not by the GC.
        async with contextlib.aclosing(super().run_turn(request, **kwargs)) as events:
            async for envelope in events:
                # Metered here, not by a generator of its own around the turn:
                # one layer less for every event to pass through (issue #11).
                if self._budgets is not None and isinstance(envelope.event, Usage):
                    await self._record(request.tenant, envelope.thread_id, envelope.event)
                if flags and isinstance(envelope.event, TurnCompleted):
                    envelope = dataclasses.replace(
                        envelope, event=dataclasses.replace(envelope.event, safety_flags=flags))
                yield envelope

    async def _blocked(self, request: TurnRequest) -> AsyncGenerator[Envelope, None]:
        """The refusal turn: validated and owned like any turn, never saved."""
        req = validate(request, self._config.limits)
        if req.thread_id:
            with self._db.errors():
                await self._owned(req.tenant, req.user_id, req.thread_id)
        log.warning("turn blocked by injection policy (tenant %r)", req.tenant)
        turn_id = uuid.uuid4().hex
        events: tuple[Event, ...] = (TurnStarted(user_text=req.text, request_id=req.request_id),
                  TextDelta(text=BLOCKED_REPLY),
                  TurnCompleted(text=BLOCKED_REPLY, phase="transaction", safety_flags=INJECTION))
        for seq, event in enumerate(events, start=1):
            yield Envelope(thread_id=req.thread_id, turn_id=turn_id, seq=seq, event=event)

    async def run_approval(self, request: ApprovalRequest, **kwargs: Any
                           ) -> AsyncGenerator[Envelope, None]:
        await self._admit(request.tenant, request.thread_id, request.user_id, request.request_id)
        async with contextlib.aclosing(super().run_approval(request, **kwargs)) as events:
            async for envelope in events:
                if self._budgets is not None and isinstance(envelope.event, Usage):
                    await self._record(request.tenant, envelope.thread_id, envelope.event)
                yield envelope

    async def _admit(self, tenant: str, thread_id: str, user_id: str, request_id: str) -> None:
        if self._budgets is None or not self._budgets.policy(tenant).enabled:
            return
        # A database outage here is UNAVAILABLE with a retry hint, as everywhere.
        with self._db.errors():
            if request_id and await self._finished(tenant, user_id, request_id):
                return  # a replay: no model call, no new turn — not counted, never refused
            await self._budgets.admit(tenant, thread_id)

    async def _finished(self, tenant: str, user_id: str, request_id: str) -> bool:
        """Whether ``request_id`` names a finished turn, which then only replays."""
        record = await self._db.threads.get_request(
            RequestKey(tenant, user_id, request_id), window_s=self._config.replay_window_s)
        return record is not None and record.done

    async def _record(self, tenant: str, thread_id: str, usage: Usage) -> None:
        """A model call's usage, counted at once: spent is spent, even if the turn fails later."""
        if self._budgets is None:
            return
        try:
            with self._db.errors():
                await self._budgets.record(tenant, thread_id, usage)
        except Exception:
            # The turn itself is fine; the budget undercounts by this call.
            log.warning("could not record usage for tenant %r", tenant, exc_info=True)
