"""hold: while a person has the thread, the bot only acknowledges — and the handoff record.

After ``handoff_to_human`` the thread is *handed off* until released (RPC
``ReleaseHandoff``). Turns in between still run ``analyse`` and ``phase`` (so
the acknowledgement is in the customer's dialect) and ``remember`` (so the
message is kept in the thread for the colleague), but no knowledge base and no
model: «وين صار طلبي؟» → «وصلتنا رسالتك، وبيرد عليك واحد من زملائنا قريب إن شاء الله.»
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from majlis.events import TextDelta
from majlis.models import PhraseBook
from majlis.nodes._emit import Emitter
from majlis.records import Reply, need
from majlis.reply_text import stream_words
from majlis.state import ThreadState

__all__ = ["Hold", "handed_off", "handoff_record"]

HANDOFF_TOOL = "handoff_to_human"


def handed_off(state: ThreadState) -> bool:
    """True while the thread waits for a person (set by a handoff, cleared by release)."""
    return bool((state.get("handoff") or {}).get("active"))


def handoff_record(events: Sequence[dict[str, Any]], *, at: str) -> dict[str, Any] | None:
    """The thread's handoff fields from a turn's events, or None when no handoff happened.

    >>> handoff_record([{"kind": "handoff", "reason": "يصرّ", "summary_ar": "الطلب: وين طلبي؟"},
    ...                 {"kind": "tool_result", "name": "handoff_to_human", "ok": True,
    ...                  "content_json": '{"handed_off": true, "notified": true}'}],
    ...                at="2026-11-01T07:30:00+00:00")["notified"]
    True
    """
    event = next((e for e in events if e.get("kind") == "handoff"), None)
    if event is None:
        return None
    content: dict[str, Any] = {}
    for e in events:
        if e.get("kind") == "tool_result" and e.get("name") == HANDOFF_TOOL:
            try:
                parsed = json.loads(e.get("content_json") or "null")
            except ValueError:
                parsed = None
            content = parsed if isinstance(parsed, dict) else {}
            break
    return {
        "active": True,
        "reason": event.get("reason", ""),
        "summary_ar": event.get("summary_ar", ""),
        "at": at,
        # None: no webhook configured; False: it failed (the handoff holds anyway).
        "notified": content.get("notified"),
        "notify_error": content.get("notify_error", ""),
    }


class Hold:
    """Replaces recall → respond while the thread is handed off: a short acknowledgement."""

    def __init__(self, phrases: PhraseBook | None = None) -> None:
        self._phrases = phrases or PhraseBook.load()

    def __call__(self, state: ThreadState) -> dict[str, Any]:
        setting = need(state.get("setting"), "setting")
        emit = Emitter()
        reply = self._phrases.say("handoff_hold", setting.voice, gender=setting.gender,
                                  country=state["input"].country)
        for word in stream_words(reply):
            emit(TextDelta(text=word))
        return {"reply": Reply(text=reply, events=tuple(emit.events))}
