"""settle: the approval branch — run or decline a held tool call, and say so.

``Approve`` enters the graph here instead of at ``analyse`` (see majlis.graph):
the caller's answer is not a message to read, but the turn still goes through
the same lock, deadline, span, ``remember`` and fenced commit as any other.
«نعم، ألغِ الطلب» on a held ``cancel_order`` → ToolResult(ok=True) and
«هذا اللي وصلني من النظام: …» in the thread's voice.
"""

from __future__ import annotations

from typing import Any

from majlis import culture
from majlis.approvals import not_held, settle
from majlis.events import TextDelta
from majlis.models import PhraseBook
from majlis.nodes._emit import Emitter
from majlis.nodes.respond import RegistryFactory
from majlis.records import Reply, ToolScope, need
from majlis.reply_text import stream_words
from majlis.state import ThreadState, held_calls
from majlis.tools import ToolContext


def approval_voice(state: ThreadState) -> str:
    """The phrase voice of an approval turn: the thread's dialect only when it is
    confident enough to mirror (as in a normal turn), else neutral."""
    region = str(state.get("dialect") or "msa")
    _, voice = culture.choose_register(requested="", policy="mirror", region=region,
                                       confidence=float(state.get("dialect_confidence") or 0.0),
                                       backed=bool(state.get("dialect_backed", True)))
    return voice


class Settle:
    """Runs (or declines) the held call the approval names; its reply streams word by word."""

    def __init__(self, tools: RegistryFactory, phrases: PhraseBook | None = None) -> None:
        self._tools = tools
        self._phrases = phrases or PhraseBook.load()

    async def __call__(self, state: ThreadState) -> dict[str, Any]:
        inp = state["input"]
        approval = need(inp.approval, "an approval")
        held = held_calls(state).get(approval.call_id)
        if held is None:  # the engine checks first; a race lost since is still not found
            raise not_held(approval.call_id, inp.thread_id)
        emit = Emitter()
        scope = ToolScope(tenant=inp.tenant, user_id=inp.user_id, thread_id=inp.thread_id,
                          turn_id=inp.turn_id, dialect=str(state.get("dialect") or "msa"),
                          phase=state.get("phase", ""))
        ctx = ToolContext(tenant=inp.tenant, user_id=inp.user_id, thread_id=inp.thread_id,
                          turn_id=inp.turn_id, deadline=inp.deadline)
        settled, reply = await settle(
            held, approved=approval.approved, call_id=approval.call_id,
            registry=self._tools(scope), ctx=ctx, phrases=self._phrases,
            region=approval_voice(state))
        for event in settled:
            emit(event)
        for word in stream_words(reply):
            emit(TextDelta(text=word))
        return {"reply": Reply(text=reply, events=tuple(emit.events),
                               settled=approval.call_id)}
