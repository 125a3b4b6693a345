"""The seam every memory backend implements."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Protocol, runtime_checkable

from memory.records import DocumentInfo, Kind, MemoryRecord, NewRecord, SearchHit

__all__ = ["MemoryStore"]


@runtime_checkable
class MemoryStore(Protocol):
    """Full-text memory scoped by tenant and user.

    Visibility invariant, identical in every implementation: a search with
    ``user_id=None`` sees only tenant-wide rows (documents); with a user id it
    sees tenant-wide rows plus that user's own facts; it never sees another
    tenant's rows or another user's facts.  Hostile query text never raises:
    it yields results or ``[]``.
    """

    async def setup(self) -> None:
        """Create tables and indexes; idempotent and safe under concurrent replicas."""
        ...

    async def put(self, records: Sequence[NewRecord]) -> list[MemoryRecord]:
        """Upsert by ``(tenant, id)``; returns the stored rows in input order."""
        ...

    async def search(
        self,
        tenant: str,
        query: str,
        *,
        user_id: str | None = None,
        kinds: Collection[Kind] | None = None,
        k: int = 5,
    ) -> list[SearchHit]:
        """The ``k`` best BM25 matches, best first."""
        ...

    async def get(self, tenant: str, record_id: str) -> MemoryRecord | None:
        """One record by id, or ``None``."""
        ...

    async def user_records(
        self, tenant: str, user_id: str, *, kinds: Collection[Kind] | None = None, limit: int = 50
    ) -> list[MemoryRecord]:
        """One user's own records, most recently updated first (no query needed:
        a name or form of address belongs in every turn's context)."""
        ...

    async def erase_user(self, tenant: str, user_id: str) -> int:
        """Delete every record of one user; returns the number deleted."""
        ...

    async def erase_thread(self, tenant: str, thread_id: str) -> int:
        """Delete every record that came from one thread."""
        ...

    async def delete_document(
        self, tenant: str, doc_id: str, *, keep: Collection[str] = ()
    ) -> int:
        """Delete a KB document's chunks, except the chunk ids in ``keep``."""
        ...

    async def replace_documents(
        self, tenant: str, documents: Mapping[str, Sequence[NewRecord]]
    ) -> int:
        """In ONE transaction: delete every chunk of each named document of
        ``tenant``, then write its new chunks.  Either all of it is visible
        afterwards or (on any error) none of it.  Returns the chunks written."""
        ...

    async def list_documents(
        self, tenant: str, *, after: str = "", limit: int = 20
    ) -> list[DocumentInfo]:
        """The tenant's documents with ``doc_id > after``, by ``doc_id``, at most ``limit``."""
        ...

    async def get_document(self, tenant: str, doc_id: str) -> DocumentInfo | None:
        """One document of ``tenant``, or ``None``."""
        ...

    async def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...
