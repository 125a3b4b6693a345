"""Settling a held tool call once the caller approves or declines it.

A tool declared ``requires_approval`` is never run inside the turn that asked
for it: the turn emits ``approval_required`` and the call is kept in the
thread state. The caller's ``Approve`` runs it (or drops it) as a short turn
of its own, on any replica.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from diwaniya.errors import NotFound
from majlis.events import Event, ToolResult
from majlis.models import PhraseBook
from majlis.records import HeldCall
from majlis.reply_text import render_content
from majlis.tools import ToolContext, ToolRegistry


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    tenant: str
    user_id: str
    thread_id: str
    call_id: str
    approved: bool
    request_id: str = ""


def not_held(call_id: str, thread_id: str) -> NotFound:
    """The answer to an approval whose call is not (or no longer) held."""
    return NotFound(f"no tool call {call_id} is waiting for approval on thread {thread_id}; "
                    "it was settled already or never held")


async def settle(
    held: HeldCall, *, approved: bool, call_id: str, registry: ToolRegistry,
    ctx: ToolContext, phrases: PhraseBook, region: str,
) -> tuple[list[Event], str]:
    """Run (or decline) one held call → (events, reply text in the user's dialect).

    >>> # approved «إلغاء الطلب 4411» → [ToolResult(ok=True, …)], 'هذا اللي وصلني من النظام: …'
    """
    if not approved:
        return [], phrases.say("approval_declined", region)
    name = held.name
    tool = registry.get(name)
    try:
        arguments = json.loads(held.arguments_json)
    except ValueError:
        arguments = None
    if tool is None or not isinstance(arguments, dict):
        error = f"{name} is no longer available" if tool is None else "arguments are not an object"
        return ([ToolResult(call_id=call_id, name=name, ok=False, error=error)],
                phrases.say("tool_failed", region))
    outcome = await tool.run(arguments, ctx)
    result = ToolResult(
        call_id=call_id, name=name, ok=outcome.ok,
        content_json=json.dumps(outcome.content, ensure_ascii=False), error=outcome.error or "")
    if not outcome.ok:
        return [*outcome.events, result], phrases.say("tool_failed", region)
    reply = f"{phrases.say('tool_result', region)} {render_content(outcome.content)}"
    return [*outcome.events, result], reply

