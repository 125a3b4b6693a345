"""The thread state persisted in every checkpoint.

Invariants:
* Only the last node of a turn (``remember``) writes thread-level fields:
  ``messages`` (append-only), phase, dialect, usage, handoff. Earlier nodes write only
  into ``turn``. A turn that fails or is cancelled half-way may leave a
  checkpoint behind, but it differs from the last good one only in ``turn``,
  which the next turn's input replaces — never half a turn in the thread.
* ``turn`` is scratch space for the running turn; the input of each turn
  replaces it wholesale (``{"reset": True, ...}``) and nodes merge into it.
* Replay records of request ids are not here: they live in the request table,
  written in the same fenced commit as the checkpoint (docs/fencing.md).
  Checkpoints from before that still carry a ``completed`` channel, which is
  simply no longer read.
* ``handoff`` is set by the turn whose ``handoff_to_human`` ran (``active``,
  ``reason``, ``summary_ar``, ``at``, ``notified``) and cleared by
  ``ReleaseHandoff``; while active, turns are acknowledged, not answered.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict


def merge_turn(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """Reducer for ``turn``: ``reset`` starts a new turn, anything else merges."""
    if new.get("reset"):
        return {k: v for k, v in new.items() if k != "reset"}
    return {**(old or {}), **new}


def merge_pending(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """Reducer for ``pending_approvals``: add entries; a ``None`` value removes one."""
    merged = {**(old or {}), **new}
    return {k: v for k, v in merged.items() if v is not None}


class ThreadState(TypedDict, total=False):
    messages: Annotated[list[dict[str, Any]], operator.add]
    phase: str
    cycle: int
    dialect: str
    dialect_confidence: float
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
    # Tool calls held for the caller's approval: call_id → {name, arguments_json, ...}.
    pending_approvals: Annotated[dict[str, Any], merge_pending]
    turn: Annotated[dict[str, Any], merge_turn]
