"""phase: where are we in the majlis — and how should the reply sound?"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from majlis import culture
from majlis.events import PhaseChanged
from majlis.nodes._emit import Emitter
from majlis.records import Setting, need
from majlis.state import ThreadState
from majlis.tenants import Tenants


class PhaseNode:
    """Reads the cues, moves the phase machine, computes tone and the Majlis courtesies.

    A greeting together with a request is a request: the phase becomes
    TRANSACTION and ``opening`` holds the brief greeting returned before the
    business is dealt with.
    """

    def __init__(self, tenants: Tenants, *, long_gap: timedelta = timedelta(hours=6)) -> None:
        self._tenants = tenants
        self._long_gap = long_gap

    def __call__(self, state: ThreadState) -> dict[str, Any]:
        inp = state["input"]
        analysis = need(state.get("analysis"), "analysis")
        emit = Emitter()
        tenant = self._tenants(inp.tenant)
        # The engine computed the moment when it validated the request; an input
        # built elsewhere (or rebuilt from a checkpoint) has none.
        moment = inp.moment
        if moment is None:
            moment = tenant.calendar.moment(inp.at, tz=ZoneInfo(inp.tz),
                                            country=inp.country or None)
        cues = analysis.cues
        previous_raw = state.get("phase")
        previous = culture.Phase(previous_raw) if previous_raw else None
        last = state.get("last_user_at")
        since_last = inp.at - datetime.fromisoformat(last) if last else None
        step = culture.next_phase(previous, cues, since_last=since_last, long_gap=self._long_gap)
        if step.current != previous or step.new_cycle:
            emit(PhaseChanged(previous=previous_raw or "", current=str(step.current),
                              new_cycle=step.new_cycle))
        # Mirror the thread's dialect only when it is known well enough (or the
        # caller asked for dialect); REGISTER_MSA always speaks MSA.
        reply_register, voice = culture.choose_register(
            requested=inp.register, policy=tenant.profile.register_policy,
            region=analysis.dialect, confidence=analysis.dialect_confidence,
            backed=analysis.dialect_backed)
        gender = cues.self_gender or state.get("gender")
        first_contact = not state.get("messages") or step.new_cycle
        tone = culture.compute_tone(
            tenant.profile, region=voice, cues=cues,
            turn_index=len(state.get("messages", [])) // 2,
            known_gender=gender,  # type: ignore[arg-type]
            moment=moment, prior_formality=state.get("formality"), voice=voice)
        return {"setting": Setting(
            phase=str(step.current),
            previous_phase=previous_raw or "",
            new_cycle=step.new_cycle,
            # Committed to the thread by the last node only (see majlis.state).
            cycle=state.get("cycle", 0) + (1 if step.new_cycle else 0),
            voice=tone.register,
            reply_register=reply_register,
            tone_prompt=tone.to_prompt(),
            formality=tone.formality,
            gender=gender,
            opening=culture.compose_opening(cues, region=tone.register, tone=tone,
                                            moment=moment, first_contact=first_contact),
            closing=culture.compose_closing(cues, region=tone.register, tone=tone),
            hijri=moment.hijri,
            local_time=moment.local.isoformat(),
            modifiers=tuple(m.key for m in moment.modifiers),
            events=tuple(emit.events),
        )}
