"""Builders shared by the memory tests (imported as ``from _memory_helpers import …``,
like tests/majlis/_culture_helpers: a conftest holds fixtures, this plain functions)."""

from __future__ import annotations

from collections.abc import Mapping

from memory import Kind, MemoryStore, NewRecord


def documents(tenant: str, docs: Mapping[str, str]) -> list[NewRecord]:
    """One single-chunk document per ``{doc_id: text}`` entry (chunk id ``<doc_id>#0``,
    no title).

    >>> [(r.id, r.doc_id) for r in documents("t", {"refund": "يعاد المبلغ خلال ١٤ يوماً"})]
    [('refund#0', 'refund')]
    """
    return [NewRecord(tenant=tenant, kind=Kind.DOCUMENT, id=f"{d}#0", doc_id=d, title="",
                      text=t) for d, t in docs.items()]


async def put_documents(store: MemoryStore, tenant: str, docs: Mapping[str, str]) -> None:
    """Write :func:`documents` of ``docs`` to ``store``."""
    await store.put(documents(tenant, docs))
