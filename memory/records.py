"""The records the memory keeps, and what a search returns.

A record always carries the user's *original* text, byte for byte, for
display; search keys are derived from it by the store and never written back
into ``text``. Scope is part of the identity: ``(tenant, id)`` is unique, so
two tenants may use the same ids without ever touching each other's rows.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from diwaniya.errors import InvalidRequest

__all__ = [
    "DocumentInfo", "Kind", "MemoryRecord", "NewRecord", "SearchHit", "document_from_row",
    "record_from_row", "validated_chunks",
]  # fmt: skip


class Kind(StrEnum):
    """What a record is; decides who may see it and how it is refreshed."""

    FACT = "fact"  # about one user: name, form of address, masked order number
    PREFERENCE = "preference"  # about one user: "افضل التواصل بالواتساب"
    DOCUMENT = "document"  # a knowledge-base chunk, tenant-wide (user_id None)


@dataclass(frozen=True, slots=True)
class NewRecord:
    """A record to write.  ``id=None`` means "make one up" (a random UUID).

    Give a stable id to get upsert semantics: writing the same ``(tenant, id)``
    again replaces the text, keys and metadata in place and keeps
    ``created_at``.

    >>> NewRecord(tenant="t1", kind=Kind.FACT, text="اسمي محمد", user_id="u1").text
    'اسمي محمد'
    """

    tenant: str
    kind: Kind
    text: str
    id: str | None = None
    user_id: str | None = None
    title: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    thread_id: str | None = None
    turn_id: str | None = None
    doc_id: str | None = None

    def validated(self) -> NewRecord:
        """Return self with a concrete id, or raise :class:`InvalidRequest`.

        Invariant enforced here rather than in each store: documents are
        tenant-wide, facts and preferences belong to exactly one user.
        """
        if not self.tenant:
            raise InvalidRequest("a memory record needs a tenant", field="tenant")
        kind = Kind(self.kind)
        if kind is Kind.DOCUMENT and self.user_id is not None:
            raise InvalidRequest("knowledge-base documents are tenant-wide: user_id must be None")
        if kind is not Kind.DOCUMENT and not self.user_id:
            raise InvalidRequest(f"a {kind.value} record needs a user_id", field="user_id")
        if not self.text.strip():
            raise InvalidRequest("a memory record needs non-empty text", field="text")
        return NewRecord(
            tenant=self.tenant,
            kind=kind,
            text=self.text,
            id=self.id or uuid.uuid4().hex,
            user_id=self.user_id,
            title=self.title,
            metadata=dict(self.metadata),
            thread_id=self.thread_id,
            turn_id=self.turn_id,
            doc_id=self.doc_id,
        )


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """A stored record.  ``text`` is exactly what was given to ``put``."""

    id: str
    tenant: str
    user_id: str | None
    kind: Kind
    text: str
    title: str
    metadata: Mapping[str, Any]
    thread_id: str | None
    turn_id: str | None
    doc_id: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One search result.

    ``score`` is BM25 (higher is better; comparable only within one result
    list).  ``snippet`` is an excerpt of the ORIGINAL text in which every word
    whose search keys matched the query is wrapped in ``[[`` and ``]]``
    (chosen over «…» because Arabic prose uses «…» as ordinary quotation
    marks), e.g. ``"… [[سياسة]] [[الاسترجاع]] خلال 14 يوما …"``.
    """

    record: MemoryRecord
    score: float
    snippet: str


@dataclass(frozen=True, slots=True)
class DocumentInfo:
    """One knowledge-base document as the store sees it: its first chunk
    (``{doc_id}#0``, whose metadata carries the document's own fields, see
    memory.kb) and how many chunks it has."""

    doc_id: str
    first: MemoryRecord
    chunk_count: int


def validated_chunks(tenant: str, documents: Mapping[str, Sequence[NewRecord]]
                   ) -> list[NewRecord]:
    """Validated chunks, each of ``tenant`` and of the document it is filed under."""
    ready = [r.validated() for chunks in documents.values() for r in chunks]
    for (doc_id, chunks) in documents.items():
        for r in chunks:
            if r.tenant != tenant or r.doc_id != doc_id or Kind(r.kind) is not Kind.DOCUMENT:
                raise InvalidRequest(f"chunk {r.id!r} is not a document chunk of "
                                     f"{tenant!r}/{doc_id!r}")
    return ready


def record_from_row(row: Sequence[Any]) -> MemoryRecord:
    """A record from a row of either store, in their shared column order: id, tenant,
    user_id, kind, text, title, metadata (JSON text), thread_id, turn_id, doc_id,
    created_at, updated_at. Times come as datetimes (PostgreSQL) or ISO text (SQLite).

    >>> r = record_from_row(("faq#0", "t", None, "document", "ساعات العمل في رمضان", "",
    ...                      '{"source": "faq.md"}', None, None, "faq",
    ...                      "2026-11-01T07:30:00+00:00", "2026-11-01T07:30:00+00:00"))
    >>> r.kind is Kind.DOCUMENT, r.text, r.metadata["source"], r.created_at.hour
    (True, 'ساعات العمل في رمضان', 'faq.md', 7)
    """
    return MemoryRecord(
        id=row[0],
        tenant=row[1],
        user_id=row[2],
        kind=Kind(row[3]),
        text=row[4],
        title=row[5],
        metadata=json.loads(row[6]),
        thread_id=row[7],
        turn_id=row[8],
        doc_id=row[9],
        created_at=_when(row[10]),
        updated_at=_when(row[11]),
    )


def document_from_row(row: Sequence[Any]) -> DocumentInfo:
    """A document from its first chunk's row (:func:`record_from_row`) and, after it,
    its chunk count."""
    return DocumentInfo(doc_id=row[9], first=record_from_row(row[:12]), chunk_count=int(row[12]))


def _when(value: datetime | str) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)
