"""recall: what do we know that bears on this message — user facts and the knowledge base."""

from __future__ import annotations

from typing import Any

from majlis.events import MemoryCited
from majlis.nodes._emit import Emitter
from majlis.state import ThreadState
from memory import Kind, MemoryStore


class Recall:
    """Searches the user's facts and the tenant's knowledge base with the message.

    Facts are the user's own (never another user's); knowledge-base chunks are
    tenant-wide. Each memory passed on to the reply is announced as a
    ``memory_cited`` event so the caller can show its sources.
    """

    def __init__(self, store: MemoryStore, *, facts_k: int = 3, docs_k: int = 3,
                 min_score: float = 0.0) -> None:
        self._store = store
        self._facts_k = facts_k
        self._docs_k = docs_k
        self._min_score = min_score

    async def __call__(self, state: ThreadState) -> dict[str, Any]:
        turn = state["turn"]
        emit = Emitter(turn)
        tenant, user, text = turn["tenant"], turn["user_id"], turn["text"]
        facts = await self._store.search(
            tenant, text, user_id=user, kinds={Kind.FACT, Kind.PREFERENCE}, k=self._facts_k
        )
        docs = await self._store.search(tenant, text, kinds={Kind.DOCUMENT}, k=self._docs_k)
        recalled: list[dict[str, Any]] = []
        for hit in [*facts, *docs]:
            if hit.score < self._min_score:
                continue
            rec = hit.record
            recalled.append({
                "id": rec.id, "kind": str(rec.kind), "title": rec.title, "text": rec.text,
                "snippet": hit.snippet, "score": float(hit.score),
            })
            emit(MemoryCited(memory_id=rec.id, memory_kind=str(rec.kind), title=rec.title,
                             snippet=hit.snippet, score=float(hit.score)))
        return {"turn": {"events": emit.events, "recalled": recalled}}
