"""The tools every tenant has: ``kb_search``, ``remember_fact``, ``handoff_to_human``.

Each is built from a callable the service injects (the memory store, the
summariser), so this module holds no state and no storage of its own.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from majlis.events import Handoff
from majlis.models.types import Recalled, ToolSpec
from majlis.tools.base import ToolContext, ToolOutcome
from nlp import pii

__all__ = [
    "BUILTIN_NAMES",
    "compose_handoff_summary",
    "handoff_tool",
    "kb_search_tool",
    "remember_fact_tool",
]

log = logging.getLogger("diwaniya.majlis")

# Posts the handoff to the tenant's helpdesk; a ToolOutcome, never an exception
# (majlis.tools.WebhookTool.run has exactly this shape).
Notify = Callable[[Mapping[str, Any], ToolContext], Awaitable[ToolOutcome]]

KB_SEARCH = "kb_search"
REMEMBER_FACT = "remember_fact"
HANDOFF = "handoff_to_human"
BUILTIN_NAMES = frozenset({KB_SEARCH, REMEMBER_FACT, HANDOFF})


@dataclass(slots=True)
class _FunctionTool:
    spec: ToolSpec
    call: Callable[[Mapping[str, Any], ToolContext], Awaitable[ToolOutcome]]
    requires_approval: bool = False
    examples: Sequence[str] = field(default_factory=tuple)

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        try:
            return await self.call(arguments, ctx)
        except Exception as exc:  # a tool never kills the turn; report it instead
            return ToolOutcome(ok=False, error=f"{self.spec.name} failed: {exc}")


def _string_arg(arguments: Mapping[str, Any], name: str) -> str | None:
    value = arguments.get(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


def kb_search_tool(search: Callable[[str, int], Awaitable[list[Recalled]]]) -> _FunctionTool:
    """Search the tenant knowledge base: «ساعات الدوام» → ``[{"title": …, "snippet": …}]``."""

    async def call(arguments: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        query = _string_arg(arguments, "query")
        if query is None:
            return ToolOutcome(ok=False, error="query must be a non-empty string")
        k = arguments.get("k", 3)
        k = k if isinstance(k, int) and 1 <= k <= 10 else 3
        hits = await search(query, k)
        return ToolOutcome(
            ok=True,
            content=[
                {"id": h.id, "title": h.title, "snippet": h.snippet or h.text, "score": h.score}
                for h in hits
            ],
        )

    spec = ToolSpec(
        name=KB_SEARCH,
        description="ابحث في قاعدة معرفة الجهة / search the organisation's knowledge base",
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to look for, in Arabic"},
                "k": {"type": "integer", "minimum": 1, "maximum": 10},
            },
            "required": ["query"],
        },
    )
    return _FunctionTool(spec, call)


def remember_fact_tool(remember: Callable[[str], Awaitable[str]]) -> _FunctionTool:
    """Store a durable fact about the user: «اسمي خالد» → ``{"id": "fact-…"}``."""

    async def call(arguments: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        fact = _string_arg(arguments, "fact")
        if fact is None:
            return ToolOutcome(ok=False, error="fact must be a non-empty string")
        # The result goes back to the model and into the turn's events: masked.
        return ToolOutcome(ok=True, content={"id": await remember(fact), "fact": pii.mask(fact)})

    spec = ToolSpec(
        name=REMEMBER_FACT,
        description="احفظ معلومة دائمة عن المستخدم / remember a lasting fact about the user",
        parameters={
            "type": "object",
            "properties": {"fact": {"type": "string", "description": "one short sentence"}},
            "required": ["fact"],
        },
    )
    return _FunctionTool(spec, call)


def handoff_tool(summarise: Callable[[], str], notify: Notify | None = None) -> _FunctionTool:
    """Hand the conversation to a human; the outcome carries a ``Handoff`` event.

    ``notify`` (the tenant's handoff webhook) is called once per handoff: a second
    call in the same turn reuses the first outcome, and a replayed turn runs no
    tools at all. A failing webhook is logged and reported in the tool result
    (``notified: false``) — the thread is handed off all the same.

    «حوّلني لموظف» → ``{"handed_off": true, "reason": "…", "notified": true}``.
    """
    done: dict[str, Any] = {}

    async def call(arguments: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        if done:  # the model asked twice: one handoff, one webhook call
            return ToolOutcome(ok=True, content={**done, "already": True})
        reason = _string_arg(arguments, "reason") or "طلب المستخدم"
        summary = summarise()
        content: dict[str, Any] = {"handed_off": True, "reason": reason}
        if notify is not None:
            sent = await notify({"event": "handoff", "tenant": ctx.tenant,
                                 "user_id": ctx.user_id, "thread_id": ctx.thread_id,
                                 "turn_id": ctx.turn_id, "reason": reason,
                                 "summary_ar": summary}, ctx)
            content["notified"] = sent.ok
            if not sent.ok:
                content["notify_error"] = sent.error or "the handoff webhook failed"
                log.warning("handoff webhook failed on thread %s turn %s: %s; the thread "
                            "stays handed off", ctx.thread_id, ctx.turn_id,
                            content["notify_error"])
        done.update(content)
        return ToolOutcome(
            ok=True,
            content=content,
            events=(Handoff(summary_ar=summary, reason=reason),),
        )

    spec = ToolSpec(
        name=HANDOFF,
        description=(
            "حوّل المحادثة إلى موظف بشري عند الإصرار أو الانزعاج أو الطلب /"
            " hand the conversation to a human agent"
        ),
        parameters={
            "type": "object",
            "properties": {"reason": {"type": "string"}},
            "required": ["reason"],
        },
    )
    return _FunctionTool(spec, call)


_SENTIMENT_AR = {
    "frustrated": "منزعج",
    "negative": "مستاء",
    "neutral": "محايد",
    "positive": "راضٍ",
}


def compose_handoff_summary(
    *,
    dialect: str,
    phase: str,
    open_request: str,
    sentiment: str,
    facts: Sequence[str] = (),
) -> str:
    """The Arabic brief a human agent reads first.

    >>> print(compose_handoff_summary(dialect="gulf", phase="transaction",
    ...     open_request="وين طلبي؟", sentiment="frustrated", facts=["اسمه خالد"]))
    اللهجة: gulf
    المرحلة: transaction
    الطلب المفتوح: وين طلبي؟
    المزاج: منزعج
    معلومات: اسمه خالد
    """
    lines = [
        f"اللهجة: {dialect or 'غير معروفة'}",
        f"المرحلة: {phase or 'غير معروفة'}",
        f"الطلب المفتوح: {open_request or 'لا يوجد'}",
        f"المزاج: {_SENTIMENT_AR.get(sentiment, sentiment or 'غير معروف')}",
    ]
    if facts:
        lines.append("معلومات: " + "؛ ".join(facts))
    return "\n".join(lines)
