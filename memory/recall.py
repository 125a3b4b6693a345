"""The two calls the conversation graph makes: recall before a turn, remember after.

``recall`` gathers what the reply may use: the user's own facts (always, a
name belongs in every turn) and the best knowledge-base chunks for the
message.  ``remember`` stores the facts a message states, through any
:class:`FactExtractor`.  Both take the store and extractor as arguments;
the graph's nodes own when to call them and which events to emit.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory.facts import FactExtractor
from memory.records import Kind, MemoryRecord, SearchHit
from memory.store import MemoryStore

__all__ = ["RecallResult", "recall", "remember"]


@dataclass(frozen=True, slots=True)
class RecallResult:
    """What :func:`recall` found (named apart from the graph's node ``majlis.nodes.Recall``)."""

    user_facts: list[MemoryRecord]  # the user's facts and preferences, newest first
    documents: list[SearchHit]  # knowledge-base chunks relevant to the message, best first


async def recall(
    store: MemoryStore,
    tenant: str,
    user_id: str | None,
    message: str,
    *,
    k_documents: int = 3,
    max_facts: int = 20,
) -> RecallResult:
    """Facts about the user plus the ``k_documents`` best KB chunks for ``message``.

    >>> r = await recall(store, "t", "u1", "كم مدة الاسترجاع؟")  # doctest: +SKIP
    >>> [f.text for f in r.user_facts], r.documents[0].snippet  # doctest: +SKIP
    (['ناديني ابو فهد'], 'سياسة [[الاسترجاع]]: يمكن إرجاع المنتج خلال ١٤ يوماً …')
    """
    fact_kinds = {Kind.FACT, Kind.PREFERENCE}
    # A store that can read both in one round trip (PostgreSQL: every round
    # trip wakes a backend on a shared machine) says so with facts_and_search;
    # the result is the same as the two calls below.
    together = getattr(store, "facts_and_search", None)
    if together is not None and user_id:
        facts, documents = await together(tenant, user_id, message, fact_kinds=fact_kinds,
                                          max_facts=max_facts, kinds={Kind.DOCUMENT},
                                          k=k_documents)
        return RecallResult(user_facts=facts, documents=documents)
    facts = (
        await store.user_records(tenant, user_id, kinds=fact_kinds, limit=max_facts)
        if user_id
        else []
    )
    documents = await store.search(tenant, message, kinds={Kind.DOCUMENT}, k=k_documents)
    return RecallResult(user_facts=facts, documents=documents)


async def remember(
    store: MemoryStore,
    extractor: FactExtractor,
    *,
    tenant: str,
    user_id: str,
    message: str,
    thread_id: str | None = None,
    turn_id: str | None = None,
) -> list[MemoryRecord]:
    """Store the facts ``message`` states about its author; returns what was stored.

    >>> await remember(store, RuleFactExtractor(), tenant="t", user_id="u1",
    ...                message="ناديني ابو فهد")  # doctest: +SKIP
    [MemoryRecord(..., text='ناديني ابو فهد', ...)]
    """
    facts = extractor.extract(message)
    if not facts:
        return []
    return await store.put([
        f.to_record(tenant=tenant, user_id=user_id, thread_id=thread_id, turn_id=turn_id)
        for f in facts
    ])
