"""respond: the reply, streamed — from the configured chat model or the offline responder."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from hijridate import Hijri

from diwaniya.errors import ModelUnavailable
from majlis.models import (
    ChatMessage,
    ModelRequest,
    Recalled,
    ResponderContext,
    support,
)
from majlis.models.phrases import voice_key
from majlis.nodes._emit import Emitter
from majlis.pii_context import raw_turn_text
from majlis.prompt import compose_system_prompt
from majlis.state import ThreadState
from majlis.tenants import Tenants
from majlis.tools import ToolContext, ToolRegistry, run_model_turn
from nlp import pii

log = logging.getLogger("diwaniya.majlis")

# How many past messages the model sees besides the system prompt.
HISTORY_MESSAGES = 12

RegistryFactory = Callable[[dict[str, Any]], ToolRegistry]


class Respond:
    """Builds the model request from the turn and runs the model/tool loop.

    The model sees the tenant persona, the Majlis tone directive, the recalled
    memories fenced as untrusted data, and the date in both calendars; the
    offline responder reads the same turn through :class:`ResponderContext`.
    """

    def __init__(self, tenants: Tenants, tools: RegistryFactory, *,
                 deadline_key: str = "deadline") -> None:
        self._tenants = tenants
        self._tools = tools
        self._deadline_key = deadline_key

    async def __call__(self, state: ThreadState) -> dict[str, Any]:
        turn = state["turn"]
        emit = Emitter(turn)
        tenant = self._tenants(turn["tenant"])
        recalled = tuple(
            Recalled(id=r["id"], kind=r["kind"], title=r["title"], text=r["text"],
                     snippet=r["snippet"], score=r["score"])
            for r in turn.get("recalled", [])
        )
        cues = turn.get("cues", {})
        # Order numbers, names… given in this thread, as typed, reused by both paths.
        sup = support.advance(state.get("support"), turn["text"],
                              complaint=bool(cues.get("complaint")),
                              request=bool(cues.get("request")))
        context = ResponderContext(
            user_text=turn["text"],
            # The voice as one key (region, country variant, gender) the phrase
            # book reads: «أبشر» only to a known man, Algerian words in Algeria.
            region=voice_key(turn["tone"]["register"], gender=turn.get("gender"),
                             country=turn.get("country")),
            phase=turn["phase"],
            opening=turn.get("opening", ""),
            closing=turn.get("closing", ""),
            is_request=bool(cues.get("request") or cues.get("question") or cues.get("complaint")),
            complaint=bool(cues.get("complaint")),
            frustrated=bool(cues.get("frustration")),
            insists=bool(cues.get("insistence")),
            recalled=recalled,
            known=sup.known,
            persona=tenant.profile.persona_name,
            order_intent=sup.order_intent,
            pending_request=sup.pending_request,
        )
        hy, hm, hd = turn["hijri"]
        system = compose_system_prompt(
            persona=tenant.profile.persona_name,
            tone_block=turn["tone_prompt"],
            # The voice chosen for this reply (phase node), not the raw thread
            # dialect: REGISTER_MSA or an unsure thread must not say "reply in X".
            region=turn["tone"]["register"],
            recalled=[r for r in recalled if r.kind == "document"],
            facts=[*(r.text for r in recalled if r.kind != "document"),
                   *support.known_facts_ar(sup.known)],
            now_gregorian=turn["local_time"],
            now_hijri=f"{hd} {Hijri(hy, hm, hd).month_name('ar')} {hy}",
            extra_policy=support.model_policy(
                persona=tenant.profile.persona_name,
                order_missing=bool(sup.state.get("awaiting"))),
        )
        history = [
            ChatMessage(role=m["role"], content=m["text"])
            for m in state.get("messages", [])[-HISTORY_MESSAGES:]
        ]
        # The stored text is masked; a tenant may let the model see this message as typed.
        raw = raw_turn_text() if tenant.pii_to_model == "raw" else None
        request = ModelRequest(
            messages=(ChatMessage(role="system", content=system), *history,
                      ChatMessage(role="user", content=raw or turn["text"])),
            tools=(),
            context=context,
            deadline=turn.get(self._deadline_key),
        )
        registry = self._tools(turn)
        ctx = ToolContext(tenant=turn["tenant"], user_id=turn["user_id"],
                          thread_id=turn["thread_id"], turn_id=turn["turn_id"],
                          deadline=turn.get(self._deadline_key))
        started = time.monotonic()
        try:
            out = await run_model_turn(tenant.model, request, registry, ctx, emit,
                                       prices=tenant.prices)
        except ModelUnavailable as exc:
            # Raising here, before ``remember``, leaves the thread untouched (see
            # majlis.state); the tenant may prefer an offline answer to an error.
            if tenant.fallback is None:
                log.warning("model failed on thread %s turn %s: %s; the turn fails "
                            "UNAVAILABLE and nothing is saved", turn["thread_id"],
                            turn["turn_id"], exc.message)
                raise
            log.warning("model failed on thread %s turn %s: %s; answering with the "
                        "offline responder", turn["thread_id"], turn["turn_id"], exc.message)
            out = await run_model_turn(tenant.fallback, request, registry, ctx, emit)
        usage = out.usage
        held = {e["call_id"]: {"name": e["name"], "arguments_json": e["arguments_json"],
                               "turn_id": turn["turn_id"]}
                for e in emit.events if e["kind"] == "approval_required"}
        return {
            "turn": {
                "pending_approvals": held,
                # Committed to the thread by the last node only (see majlis.state).
                "support": sup.state,
                # A bare «48213» answering our question: a fact the extractor cannot see.
                "support_answered": ({support.ORDER: sup.known[support.ORDER]}
                                     if sup.pending_request else {}),
                "events": emit.events,
                # Masked like the user's text when the model saw it as typed: a
                # model echoing the customer's number must not make the stored
                # reply hold it. Otherwise nothing raw reached the responder, and
                # what the reply quotes is the tenant's own (a support e-mail in
                # the knowledge base is not the customer's personal data).
                "reply": _mask_echo(out.text, raw),
                "handoff": out.handoff,
                "respond_s": round(time.monotonic() - started, 4),
                "usage": None if usage is None else {
                    "model": usage.model, "prompt_tokens": usage.prompt_tokens,
                    "completion_tokens": usage.completion_tokens, "cost_usd": usage.cost_usd,
                },
            }
        }


def _mask_echo(reply: str, raw: str | None) -> str:
    """``reply`` masked when the model saw the customer's message as typed (``raw``).

    The model may echo a number in any spelling (spaces, other digits), so the
    whole reply is masked, not only the raw message's exact substrings.

    >>> _mask_echo("سجّلنا البطاقة 5440 1234 5678 9012", "بطاقتي 5440123456789012")
    'سجّلنا البطاقة ****9012'
    >>> _mask_echo("راسلونا على care@example.sa", None)
    'راسلونا على care@example.sa'
    """
    return reply if raw is None else pii.mask(reply)
