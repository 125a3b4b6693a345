"""The thread state persisted in every checkpoint.

Invariants:
* Only the last step of a turn (``remember``) writes thread-level fields:
  ``messages`` (appended), phase, dialect, usage, handoff. After it, at the
  turn boundary, ``compact`` may fold the oldest turns of ``messages`` into
  ``summary`` (majlis.compaction): it overwrites ``messages`` with its latest
  turns, in the same checkpoint, so a turn that is not committed folds nothing. Earlier steps write
  only their own turn record. A turn that fails or is cancelled half-way may
  leave a checkpoint behind, but it differs from the last good one only in the
  turn records, which the next turn's input replaces — never half a turn in
  the thread.
* The turn records (``input`` … ``outcome``, see majlis.records) are scratch
  space for the running turn: :func:`turn_start` sets ``input`` and clears the
  others, and each step (analyse … remember; majlis.graph runs a turn's
  steps as one LangGraph node) writes exactly one of them. So a checkpoint's
  records are never read again: the PostgreSQL saver leaves them out when it
  loads one (majlis.persistence_pg.TurnSaver).
* Replay records of request ids are not here: they live in the request table,
  written in the same fenced commit as the checkpoint (docs/fencing.md).
  Checkpoints from before that still carry a ``completed`` channel, and those
  from before the records a ``turn`` dict; neither is declared, so neither is read.
* ``handoff`` is set by the turn whose ``handoff_to_human`` ran (``active``,
  ``reason``, ``summary_ar``, ``at``, ``notified``) and cleared by
  ``ReleaseHandoff``; while active, turns are acknowledged, not answered.
* ``messages`` holds ``ThreadMessage.to_state()`` dicts, read through
  :func:`history`: the history grows with the thread and is rewritten with
  every checkpoint, so it stays in the form msgpack packs natively.
  ``pending_approvals`` holds ``HeldCall`` records (dicts in older threads),
  read through :func:`held_calls`.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from majlis.records import (
    Analysis,
    CompletedTurn,
    HeldCall,
    Recollection,
    Reply,
    Setting,
    ThreadMessage,
    ThreadSummary,
    TurnInput,
)


def merge_pending(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """Reducer for ``pending_approvals``: add entries; a ``None`` value removes one."""
    merged = {**(old or {}), **new}
    return {k: v for k, v in merged.items() if v is not None}


class ThreadState(TypedDict, total=False):
    # ThreadMessage.to_state() dicts; read them through history().
    messages: Annotated[list[dict[str, Any]], operator.add]
    phase: str
    cycle: int
    dialect: str
    dialect_confidence: float
    # ThreadDialect.backed of the last turn (absent in older checkpoints: backed).
    dialect_backed: bool
    # The thread's accumulated regional evidence (nlp.dialect_thread.ThreadDialect.to_dict()).
    dialect_thread: dict[str, Any]
    # Legacy (per-message reads pooled by an earlier version): read by nothing.
    dialect_history: list[dict[str, Any]]
    formality: str
    gender: str | None
    last_user_at: str
    usage: dict[str, float]
    # {known: {slot: value as typed}, awaiting: slot asked for, pending: the request
    # waiting for it}; see majlis.models.support. Thread-scoped: deleted with the thread.
    support: dict[str, Any]
    # {active, reason, summary_ar, at, notified, notify_error}; see majlis.nodes.handoff.
    handoff: dict[str, Any]
    # The turns folded out of ``messages`` (majlis.compaction); None: nothing folded yet.
    summary: ThreadSummary | None
    # Tool calls held for the caller's approval: call_id → HeldCall (a dict before records).
    pending_approvals: Annotated[dict[str, HeldCall | dict[str, Any]], merge_pending]
    # This turn, one record per step (majlis.records).
    input: TurnInput
    analysis: Analysis | None
    setting: Setting | None
    recollection: Recollection | None
    reply: Reply | None
    outcome: CompletedTurn | None


# The turn records' channels: every turn's input sets or clears each of them.
TURN_RECORDS = ("input", "analysis", "setting", "recollection", "reply", "outcome")


def turn_start(inp: TurnInput) -> dict[str, Any]:
    """The graph input of a turn: its ``input``, and every other turn record cleared."""
    return {"input": inp, **dict.fromkeys(TURN_RECORDS[1:])}


def held_calls(state: ThreadState) -> dict[str, HeldCall]:
    """The thread's held tool calls as records, whatever shape the checkpoint stored."""
    return {k: HeldCall.read(v) for k, v in (state.get("pending_approvals") or {}).items()}


def history(state: ThreadState, *, last: int | None = None) -> list[ThreadMessage]:
    """The thread's (``last``) messages as records, whatever shape the checkpoint stored."""
    messages = state.get("messages", [])
    return [ThreadMessage.read(m) for m in (messages[-last:] if last else messages)]


def summary_of(state: ThreadState) -> ThreadSummary | None:
    """The thread's running summary as a record (None before the first fold)."""
    return ThreadSummary.read(state.get("summary"))
