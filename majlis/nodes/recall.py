"""recall: what do we know that bears on this message — user facts and the knowledge base."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import nlp
from majlis.events import MemoryCited
from majlis.nodes._emit import Emitter
from majlis.state import ThreadState
from memory import MemoryStore, recall


class Recall:
    """Gathers the user's own facts and the knowledge-base chunks that bear on the message.

    Facts are the user's own (never another user's) and always come along (a
    name belongs in every turn); knowledge-base chunks are tenant-wide and
    ranked by the message. Each chunk passed on to the reply is announced as a
    ``memory_cited`` event so the caller can show its sources.

    A dialect question («كم يوم عندي عشان ارجع الجوال؟») gets ``dialect_docs_k``
    chunks instead of ``docs_k``: its words rank the MSA policy lower than its
    own MSA paraphrase would, so the answering sentence is more often 4th or
    5th.  MSA questions keep ``docs_k`` (more candidates there cost the
    ARCD-calibrated answer selection more than they find); five short chunks
    remain a sensible context for a configured model.
    """

    def __init__(self, store: MemoryStore, *, docs_k: int = 3, dialect_docs_k: int = 5,
                 max_facts: int = 20,
                 dialect_cue: Callable[[str], bool] = nlp.has_dialect_words) -> None:
        self._store = store
        self._docs_k = docs_k
        self._dialect_docs_k = dialect_docs_k
        self._max_facts = max_facts
        self._dialect_cue = dialect_cue

    def documents_k(self, text: str) -> int:
        """How many chunks to recall: «بتوصلوا يوم الجمعة؟» → 5, «متى يفتح الفرع؟» → 3."""
        return self._dialect_docs_k if self._dialect_cue(text) else self._docs_k

    async def __call__(self, state: ThreadState) -> dict[str, Any]:
        turn = state["turn"]
        emit = Emitter(turn)
        found = await recall(self._store, turn["tenant"], turn["user_id"], turn["text"],
                             k_documents=self.documents_k(turn["text"]), max_facts=self._max_facts)
        recalled: list[dict[str, Any]] = [
            {"id": f.id, "kind": str(f.kind), "title": f.title, "text": f.text,
             "snippet": f.text, "score": 0.0}
            for f in found.user_facts
        ]
        for hit in found.documents:
            rec = hit.record
            recalled.append({
                "id": rec.id, "kind": str(rec.kind), "title": rec.title, "text": rec.text,
                "snippet": hit.snippet, "score": float(hit.score),
            })
            emit(MemoryCited(memory_id=rec.id, memory_kind=str(rec.kind), title=rec.title,
                             snippet=hit.snippet, score=float(hit.score)))
        return {"turn": {"events": emit.events, "recalled": recalled}}
