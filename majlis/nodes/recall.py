"""recall: what do we know that bears on this message — user facts and the knowledge base."""

from __future__ import annotations

from typing import Any

from majlis.events import MemoryCited
from majlis.models import Recalled
from majlis.nodes._emit import Emitter
from majlis.records import Recollection
from majlis.state import ThreadState
from memory import MemoryStore, recall

# Chunks recalled per turn.  The offline responder reranks all of them for a dialect
# question (its words rarely match the policy's, so the chunk holding the answer is
# often 4th or 5th: bench/support.py dev 0.773 → 0.807 at the same abstention); an
# MSA question and the model's prompt read only the first PROMPT_DOCUMENTS.
RECALL_DOCUMENTS = 5
PROMPT_DOCUMENTS = 3


class Recall:
    """Gathers the user's own facts and the knowledge-base chunks that bear on the message.

    Facts are the user's own (never another user's) and always come along (a
    name belongs in every turn); knowledge-base chunks are tenant-wide and
    ranked by the message. Each chunk passed on to the reply is announced as a
    ``memory_cited`` event so the caller can show its sources.
    """

    def __init__(self, store: MemoryStore, *, docs_k: int = RECALL_DOCUMENTS,
                 max_facts: int = 20) -> None:
        self._store = store
        self._docs_k = docs_k
        self._max_facts = max_facts

    async def __call__(self, state: ThreadState) -> dict[str, Any]:
        inp = state["input"]
        emit = Emitter()
        found = await recall(self._store, inp.tenant, inp.user_id, inp.text,
                             k_documents=self._docs_k, max_facts=self._max_facts)
        recalled = [Recalled(id=f.id, kind=str(f.kind), title=f.title, text=f.text,
                             snippet=f.text, score=0.0) for f in found.user_facts]
        for hit in found.documents:
            rec = hit.record
            recalled.append(Recalled(id=rec.id, kind=str(rec.kind), title=rec.title,
                                     text=rec.text, snippet=hit.snippet, score=float(hit.score)))
            emit(MemoryCited(memory_id=rec.id, memory_kind=str(rec.kind), title=rec.title,
                             snippet=hit.snippet, score=float(hit.score)))
        return {"recollection": Recollection(recalled=tuple(recalled), events=tuple(emit.events))}
