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
    ResponderContext,
    support,
)
from majlis.models.phrases import voice_key
from majlis.nodes._emit import Emitter
from majlis.nodes.recall import PROMPT_DOCUMENTS
from majlis.pii_context import raw_turn_text
from majlis.prompt import compose_system_prompt
from majlis.records import (
    Analysis,
    HeldCall,
    ModelUsage,
    Recollection,
    Reply,
    Setting,
    ThreadSummary,
    ToolScope,
    TurnInput,
    need,
)
from majlis.state import ThreadState, history, summary_of
from majlis.tenants import Tenant, Tenants
from majlis.tools import ToolContext, ToolRegistry, TurnOutput, run_model_turn
from nlp import pii

log = logging.getLogger("diwaniya.majlis")

# How many past messages the model sees besides the system prompt.
HISTORY_MESSAGES = 12

RegistryFactory = Callable[[ToolScope], ToolRegistry]


class Respond:
    """Builds the model request from the turn and runs the model/tool loop.

    The model sees the tenant persona, the Majlis tone directive, the recalled
    memories fenced as untrusted data, and the date in both calendars; the
    offline responder reads the same turn through :class:`ResponderContext`.
    """

    def __init__(self, tenants: Tenants, tools: RegistryFactory) -> None:
        self._tenants = tenants
        self._tools = tools

    async def __call__(self, state: ThreadState) -> dict[str, Any]:
        inp = state["input"]
        analysis = need(state.get("analysis"), "analysis")
        setting = need(state.get("setting"), "setting")
        recollection = need(state.get("recollection"), "recollection")
        emit = Emitter()
        tenant = self._tenants(inp.tenant)
        cues = analysis.cues
        # Order numbers, names… given in this thread, as typed, reused by both paths.
        sup = support.advance(state.get("support"), inp.text, complaint=cues.complaint,
                              request=cues.request)
        # The stored text is masked; a tenant may let the model see this message as typed.
        raw = raw_turn_text() if tenant.pii_to_model == "raw" else None
        request = ModelRequest(
            messages=(ChatMessage(role="system", content=_system_prompt(
                          tenant, setting, recollection, sup, summary_of(state))),
                      *(ChatMessage(role=m.role, content=m.text)
                        for m in history(state, last=HISTORY_MESSAGES)),
                      ChatMessage(role="user", content=raw or inp.text)),
            tools=(),
            context=_responder_context(inp, analysis, setting, recollection, sup,
                                       persona=tenant.profile.persona_name),
            deadline=inp.deadline,
        )
        registry = self._tools(ToolScope(
            tenant=inp.tenant, user_id=inp.user_id, thread_id=inp.thread_id,
            turn_id=inp.turn_id, text=inp.text, dialect=analysis.dialect, phase=setting.phase,
            frustrated=cues.frustration, facts=recollection.facts))
        ctx = ToolContext(tenant=inp.tenant, user_id=inp.user_id, thread_id=inp.thread_id,
                          turn_id=inp.turn_id, deadline=inp.deadline)
        started = time.monotonic()
        out = await _answer(tenant, request, registry, ctx, emit)
        return {"reply": _reply(out, emit.events, inp, sup, raw=raw,
                                respond_s=round(time.monotonic() - started, 4))}


def _reply(out: TurnOutput, events: list[dict[str, Any]], inp: TurnInput,
           sup: support.SupportTurn, *, raw: str | None, respond_s: float) -> Reply:
    """The node's record of what the model (or responder) said and asked for."""
    usage = out.usage
    return Reply(
        # Masked like the user's text when the model saw it as typed: a
        # model echoing the customer's number must not make the stored
        # reply hold it. Otherwise nothing raw reached the responder, and
        # what the reply quotes is the tenant's own (a support e-mail in
        # the knowledge base is not the customer's personal data).
        text=_mask_echo(out.text, raw),
        events=tuple(events),
        usage=None if usage is None else ModelUsage(
            model=usage.model, prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens, cost_usd=usage.cost_usd),
        handoff=out.handoff,
        held={e["call_id"]: HeldCall(name=e["name"], arguments_json=e["arguments_json"],
                                     turn_id=inp.turn_id)
              for e in events if e["kind"] == "approval_required"},
        # Committed to the thread by the last node only (see majlis.state).
        support=sup.state,
        # A bare «48213» answering our question: a fact the extractor cannot see.
        support_answered=({support.ORDER: sup.known[support.ORDER]}
                          if sup.pending_request else {}),
        respond_s=respond_s,
    )


async def _answer(tenant: Tenant, request: ModelRequest, registry: ToolRegistry,
                  ctx: ToolContext, emit: Emitter) -> TurnOutput:
    """The tenant's model, or its offline fallback when the model is unavailable."""
    try:
        return await run_model_turn(tenant.model, request, registry, ctx, emit,
                                    prices=tenant.prices)
    except ModelUnavailable as exc:
        # Raising here, before ``remember``, leaves the thread untouched (see
        # majlis.state); the tenant may prefer an offline answer to an error.
        if tenant.fallback is None:
            log.warning("model failed on thread %s turn %s: %s; the turn fails "
                        "UNAVAILABLE and nothing is saved", ctx.thread_id, ctx.turn_id,
                        exc.message)
            raise
        log.warning("model failed on thread %s turn %s: %s; answering with the "
                    "offline responder", ctx.thread_id, ctx.turn_id, exc.message)
        return await run_model_turn(tenant.fallback, request, registry, ctx, emit)


def _responder_context(inp: TurnInput, analysis: Analysis, setting: Setting,
                       recollection: Recollection, sup: support.SupportTurn, *,
                       persona: str) -> ResponderContext:
    """What the offline responder reads of the turn (the model reads the prompt instead)."""
    cues = analysis.cues
    return ResponderContext(
        user_text=inp.text,
        # The voice as one key (region, country variant, gender) the phrase
        # book reads: «أبشر» only to a known man, Algerian words in Algeria.
        region=voice_key(setting.voice, gender=setting.gender, country=inp.country),
        phase=setting.phase,
        opening=setting.opening,
        closing=setting.closing,
        is_request=cues.request or cues.question or cues.complaint,
        complaint=cues.complaint,
        frustrated=cues.frustration,
        insists=cues.insistence,
        recalled=recollection.recalled,
        known=sup.known,
        persona=persona,
        order_intent=sup.order_intent,
        pending_request=sup.pending_request,
    )


def _system_prompt(tenant: Tenant, setting: Setting, recollection: Recollection,
                   sup: support.SupportTurn, summary: ThreadSummary | None = None) -> str:
    """The tenant persona, the tone directive, recalled memories fenced as data, the date,
    and the summary of the thread's folded turns (majlis.compaction)."""
    hy, hm, hd = setting.hijri
    return compose_system_prompt(
        persona=tenant.profile.persona_name,
        tone_block=setting.tone_prompt,
        # The voice chosen for this reply (phase node), not the raw thread
        # dialect: REGISTER_MSA or an unsure thread must not say "reply in X".
        region=setting.voice,
        recalled=list(recollection.documents[:PROMPT_DOCUMENTS]),
        facts=[*recollection.facts, *support.known_facts_ar(sup.known)],
        now_gregorian=setting.local_time,
        now_hijri=f"{hd} {Hijri(hy, hm, hd).month_name('ar')} {hy}",
        extra_policy=support.model_policy(
            persona=tenant.profile.persona_name,
            order_missing=bool(sup.state.get("awaiting"))),
        summary=summary.text if summary else "",
    )


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
