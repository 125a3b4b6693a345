"""The majlis phase machine: GREETING → SOCIAL → TRANSACTION → FAREWELL.

A conversation has a shape. Within one *cycle* the phase only moves forward;
a message after FAREWELL, or after a long silence, opens a new cycle. Business
always wins: a message that greets *and* asks is a TRANSACTION, so the request
is never dropped (the opening greeting is still returned, briefly).

    >>> from majlis.culture import read_cues
    >>> next_phase(None, read_cues("هلا، عندي مشكلة في الحساب"), since_last=None)
    PhaseStep(previous=None, current=<Phase.TRANSACTION: 'transaction'>, new_cycle=True)
    >>> step = next_phase(Phase.TRANSACTION, read_cues("مشكور، مع السلامة"),
    ...                   since_last=timedelta(minutes=1))
    >>> step.current, step.new_cycle
    (<Phase.FAREWELL: 'farewell'>, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from majlis.culture.cues import Cues

__all__ = ["DEFAULT_LONG_GAP", "Phase", "PhaseStep", "next_phase"]

DEFAULT_LONG_GAP = timedelta(hours=6)


class Phase(StrEnum):
    GREETING = "greeting"
    SOCIAL = "social"
    TRANSACTION = "transaction"
    FAREWELL = "farewell"


_ORDER = {Phase.GREETING: 0, Phase.SOCIAL: 1, Phase.TRANSACTION: 2, Phase.FAREWELL: 3}


@dataclass(frozen=True, slots=True)
class PhaseStep:
    """One transition. ``previous`` is the stored phase (None on a thread's first turn);
    ``new_cycle`` is True when this message opens a conversation cycle (first turn,
    after FAREWELL, or after a long gap). ``changed`` tells whether to emit phase_changed."""

    previous: Phase | None
    current: Phase
    new_cycle: bool

    @property
    def changed(self) -> bool:
        return self.new_cycle or self.previous != self.current


def _wanted(cues: Cues, base: Phase | None) -> Phase:
    """The phase this message asks for, given where the open cycle stands (None: fresh)."""
    if cues.business:
        return Phase.TRANSACTION
    if cues.farewell:
        return Phase.FAREWELL
    if cues.thanks:
        # Thanks closes an open conversation; as a first message ("شكرا على امس")
        # it is small talk that opens one.
        return Phase.SOCIAL if base is None else Phase.FAREWELL
    if cues.openers or cues.wellbeing:
        # The first greeting opens; greeting back and asking after health is social.
        if base is None:
            return Phase.GREETING
        return Phase.SOCIAL if cues.wellbeing or base is Phase.GREETING else base
    # Anything else ("الحمد لله", "تمام") continues: small talk after a greeting,
    # details of the business during a transaction.
    return Phase.SOCIAL if base in (None, Phase.GREETING) else base


def next_phase(
    current: Phase | None,
    cues: Cues,
    *,
    since_last: timedelta | None,
    long_gap: timedelta = DEFAULT_LONG_GAP,
) -> PhaseStep:
    """The phase after a message with ``cues``, from the stored phase ``current``.

    ``since_last`` is the time since the thread's previous message (None if unknown).
    Rules: business (request, question, complaint, asking for a human) → TRANSACTION,
    even with a greeting or a thanks in the same message; farewell or thanks → FAREWELL;
    the phase never moves backwards within a cycle.
    """
    new_cycle = (
        current is None
        or current is Phase.FAREWELL
        or (since_last is not None and since_last >= long_gap)
    )
    base = None if new_cycle else current
    wanted = _wanted(cues, base)
    if base is not None and _ORDER[wanted] < _ORDER[base]:
        wanted = base
    return PhaseStep(previous=current, current=wanted, new_cycle=new_cycle)
