"""remember: commit the turn — history, learned facts and usage.

The replay record of a ``request_id`` is not thread state: the engine writes it
to the request table in the turn's fenced commit (docs/fencing.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from majlis.nodes.handoff import handoff_record
from majlis.records import (
    CompletedTurn,
    Reply,
    ThreadMessage,
    TurnInput,
    need,
    started_event,
)
from majlis.state import ThreadState
from memory import ExtractedFact, FactExtractor, Kind, MemoryStore, remember
from memory.facts import mask_number


class Remember:
    """The last node: the only one that appends to ``messages``, and the one that
    writes the turn's :class:`~majlis.records.CompletedTurn` (``outcome``).

    After a message it stores facts the user stated about themselves (through
    the extraction seam, so a model-based extractor can replace the rules) and
    adds both sides of the turn to the history; after an approval, only the
    reply, and the settled call leaves ``pending_approvals``.
    """

    def __init__(self, store: MemoryStore, extractor: FactExtractor) -> None:
        self._store = store
        self._extractor = extractor

    async def __call__(self, state: ThreadState) -> dict[str, Any]:
        inp = state["input"]
        reply = need(state.get("reply"), "the reply")
        if inp.approval is not None:
            return _after_approval(state, inp, reply)
        analysis = need(state.get("analysis"), "analysis")
        setting = need(state.get("setting"), "setting")
        await self._learn(inp, reply)
        usage = dict(state.get("usage") or {"prompt_tokens": 0, "completion_tokens": 0,
                                             "cost_usd": 0.0})
        if reply.usage is not None:
            usage["prompt_tokens"] = usage.get("prompt_tokens", 0) + reply.usage.prompt_tokens
            usage["completion_tokens"] = (usage.get("completion_tokens", 0)
                                          + reply.usage.completion_tokens)
            usage["cost_usd"] = usage.get("cost_usd", 0) + reply.usage.cost_usd
        events = (started_event(inp), *setting.events, *_recollected(state), *reply.events)
        update: dict[str, Any] = {
            "messages": [
                ThreadMessage(role="user", text=inp.text, turn_id=inp.turn_id,
                              phase=setting.phase, dialect=analysis.dialect,
                              at=inp.at).to_state(),
                ThreadMessage(role="assistant", text=reply.text, turn_id=inp.turn_id,
                              phase=setting.phase, dialect=analysis.dialect,
                              at=inp.at).to_state()],
            "last_user_at": inp.at.isoformat(),
            "usage": usage,
            # What earlier nodes worked out, committed together with the turn.
            "phase": setting.phase,
            "cycle": setting.cycle,
            "gender": setting.gender,
            "formality": setting.formality,
            "dialect": analysis.dialect,
            "dialect_confidence": analysis.dialect_confidence,
            "dialect_backed": analysis.dialect_backed,
            "dialect_thread": analysis.dialect_thread,
            "pending_approvals": reply.held,
            "outcome": completed_turn(
                inp, reply, events, phase=setting.phase, dialect=analysis.dialect,
                dialect_confidence=analysis.dialect_confidence, script=analysis.script,
                message_dialect=analysis.message_dialect,
                message_dialect_confidence=analysis.message_dialect_confidence,
                reply_register=setting.reply_register),
        }
        if reply.support is not None:
            update["support"] = reply.support
        handoff = handoff_record(events, at=inp.at.isoformat())
        if handoff is not None:
            update["handoff"] = handoff
        return update

    async def _learn(self, inp: TurnInput, reply: Reply) -> None:
        """Facts from the message, and the slots a bare answer filled — kept masked."""
        await remember(self._store, self._extractor, tenant=inp.tenant, user_id=inp.user_id,
                       message=inp.text, thread_id=inp.thread_id, turn_id=inp.turn_id)
        answered = [ExtractedFact(Kind.FACT, slot, mask_number(value),
                                  f"رقم الطلب {mask_number(value)}")
                    for slot, value in reply.support_answered.items()]
        if answered:  # kept masked, like every number the extractor finds
            await self._store.put([f.to_record(tenant=inp.tenant, user_id=inp.user_id,
                                               thread_id=inp.thread_id, turn_id=inp.turn_id)
                                   for f in answered])


def _recollected(state: ThreadState) -> tuple[dict[str, Any], ...]:
    recollection = state.get("recollection")  # None on the hold branch
    return recollection.events if recollection is not None else ()


def _after_approval(state: ThreadState, inp: TurnInput, reply: Reply) -> dict[str, Any]:
    """An approval adds only the assistant's reply, in the thread's phase and dialect."""
    phase = state.get("phase", "")
    dialect = state.get("dialect") or "msa"
    return {
        "messages": [ThreadMessage(role="assistant", text=reply.text, turn_id=inp.turn_id,
                                   phase=phase, dialect=dialect, at=inp.at).to_state()],
        "pending_approvals": {reply.settled: None},
        "outcome": completed_turn(inp, reply, (started_event(inp), *reply.events),
                                  phase=phase, dialect=dialect,
                                  dialect_confidence=state.get("dialect_confidence", 0.0)),
    }


def completed_turn(inp: TurnInput, reply: Reply, events: Iterable[dict[str, Any]], *,
                   phase: str, dialect: str, dialect_confidence: float, script: str = "",
                   message_dialect: str = "", message_dialect_confidence: float = 0.0,
                   reply_register: str = "") -> CompletedTurn:
    """The one place a turn's completion record is made (committed, then replayed)."""
    return CompletedTurn(
        turn_id=inp.turn_id, reply=reply.text, phase=phase, dialect=dialect,
        dialect_confidence=dialect_confidence, script=script, message_dialect=message_dialect,
        message_dialect_confidence=message_dialect_confidence, reply_register=reply_register,
        events=tuple(events))
