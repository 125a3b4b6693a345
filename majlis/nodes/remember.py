"""remember: commit the turn — history, learned facts and usage.

The replay record of a ``request_id`` is not thread state: the engine writes it
to the request table in the turn's fenced commit (docs/fencing.md)."""

from __future__ import annotations

from typing import Any

from majlis.nodes.handoff import handoff_record
from majlis.state import ThreadState
from memory import ExtractedFact, FactExtractor, Kind, MemoryStore, remember
from memory.facts import mask_number


class Remember:
    """The last node: the only one that appends to ``messages``.

    It stores facts the user stated about themselves (through the extraction
    seam, so a model-based extractor can replace the rules), adds the turn to
    the history and records the turn's events under its ``request_id`` so a
    retry replays instead of running again.
    """

    def __init__(self, store: MemoryStore, extractor: FactExtractor) -> None:
        self._store = store
        self._extractor = extractor

    async def __call__(self, state: ThreadState) -> dict[str, Any]:
        turn = state["turn"]
        await remember(self._store, self._extractor, tenant=turn["tenant"],
                       user_id=turn["user_id"], message=turn["text"],
                       thread_id=turn["thread_id"], turn_id=turn["turn_id"])
        answered = [ExtractedFact(Kind.FACT, slot, mask_number(value),
                                  f"رقم الطلب {mask_number(value)}")
                    for slot, value in (turn.get("support_answered") or {}).items()]
        if answered:  # kept masked, like every number the extractor finds
            await self._store.put([f.to_record(tenant=turn["tenant"], user_id=turn["user_id"],
                                               thread_id=turn["thread_id"],
                                               turn_id=turn["turn_id"]) for f in answered])
        meta = {"turn_id": turn["turn_id"], "phase": turn["phase"], "dialect": turn["dialect"],
                "at": turn["at"]}
        messages = [
            {"role": "user", "text": turn["text"], **meta},
            {"role": "assistant", "text": turn["reply"], **meta},
        ]
        usage = dict(state.get("usage") or {"prompt_tokens": 0, "completion_tokens": 0,
                                             "cost_usd": 0.0})
        if turn.get("usage"):
            for key in ("prompt_tokens", "completion_tokens", "cost_usd"):
                usage[key] = usage.get(key, 0) + turn["usage"][key]
        update: dict[str, Any] = {
            "messages": messages,
            "last_user_at": turn["at"],
            "usage": usage,
            # What earlier nodes worked out, committed together with the turn.
            "phase": turn["phase"],
            "cycle": turn["cycle"],
            "gender": turn.get("gender"),
            "formality": turn["formality"],
            "dialect": turn["dialect"],
            "dialect_confidence": turn.get("dialect_confidence", 0.0),
            "dialect_thread": turn["dialect_thread"],
            "pending_approvals": turn.get("pending_approvals") or {},
        }
        if turn.get("support") is not None:
            update["support"] = turn["support"]
        handoff = handoff_record(turn.get("events", []), at=turn["at"])
        if handoff is not None:
            update["handoff"] = handoff
        return update
