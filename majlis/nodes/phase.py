"""phase: where are we in the majlis — and how should the reply sound?"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from majlis import culture
from majlis.events import PhaseChanged
from majlis.nodes._emit import Emitter
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
        turn = state["turn"]
        emit = Emitter(turn)
        tenant = self._tenants(turn["tenant"])
        at = datetime.fromisoformat(turn["at"])
        moment = tenant.calendar.moment(at, tz=ZoneInfo(turn["tz"]),
                                        country=turn["country"] or None)
        cues = culture.read_cues(turn["text"])
        previous_raw = state.get("phase")
        previous = culture.Phase(previous_raw) if previous_raw else None
        last = state.get("last_user_at")
        since_last = at - datetime.fromisoformat(last) if last else None
        step = culture.next_phase(previous, cues, since_last=since_last, long_gap=self._long_gap)
        if step.current != previous or step.new_cycle:
            emit(PhaseChanged(previous=previous_raw or "", current=str(step.current),
                              new_cycle=step.new_cycle))
        # Mirror the thread's dialect only when it is known well enough (or the
        # caller asked for dialect); REGISTER_MSA always speaks MSA.
        reply_register, voice = culture.choose_register(
            requested=turn.get("register") or "", policy=tenant.profile.register_policy,
            region=turn["dialect"], confidence=float(turn.get("dialect_confidence") or 0.0))
        gender = cues.self_gender or state.get("gender")
        first_contact = not state.get("messages") or step.new_cycle
        tone = culture.compute_tone(
            tenant.profile,
            region=voice,
            cues=cues,
            turn_index=len(state.get("messages", [])) // 2,
            known_gender=gender,  # type: ignore[arg-type]
            moment=moment,
            prior_formality=state.get("formality"),
            voice=voice,
        )
        opening = culture.compose_opening(
            cues, region=tone.register, tone=tone, moment=moment, first_contact=first_contact
        )
        closing = culture.compose_closing(cues, region=tone.register, tone=tone)
        return {
            "turn": {
                "events": emit.events,
                "phase_previous": previous_raw or "",
                "phase": str(step.current),
                "new_cycle": step.new_cycle,
                "cues": _plain(dataclasses.asdict(cues)),
                "tone": _plain(dataclasses.asdict(tone)),
                "tone_prompt": tone.to_prompt(),
                "reply_register": reply_register,
                "opening": opening,
                "closing": closing,
                "hijri": list(moment.hijri),
                "local_time": moment.local.isoformat(),
                "modifiers": [m.key for m in moment.modifiers],
                # Committed to the thread by the last node only (see majlis.state).
                "cycle": state.get("cycle", 0) + (1 if step.new_cycle else 0),
                "gender": gender,
                "formality": tone.formality,
            },
        }


def _plain(value: Any) -> Any:
    """JSON-safe copy (tuples → lists, enums → str) for the checkpoint."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value if not isinstance(value, str) else str(value)
    return str(value)
