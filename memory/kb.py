"""The knowledge base: ingest files as tenant-wide document chunks, search, delete.

These are the functions ``diwaniya kb ingest|search|delete`` calls; they take
a ready store and plain values, and print nothing.

Document ids: a Markdown or text file's id is its file name (``refunds.md``);
each JSONL line ``{_id, title, text}`` is a document with id ``_id``.
Re-ingesting a document upserts its chunks by id and deletes the chunks the
new version no longer has, so a shortened file leaves no stale rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diwaniya.errors import InvalidRequest
from memory.chunking import Chunk, DocFormat, chunk_document
from memory.records import Kind, NewRecord, SearchHit
from memory.store import MemoryStore

__all__ = [
    "IngestReport",
    "delete_documents",
    "hit_as_dict",
    "ingest_files",
    "read_documents",
    "search",
]

# Rows per put(): large enough to amortise a round trip, small enough that
# one transaction's term-statistics update stays short.
_BATCH = 500


@dataclass(frozen=True, slots=True)
class SourceDocument:
    doc_id: str
    title: str
    text: str
    fmt: DocFormat
    source: str


@dataclass(slots=True)
class IngestReport:
    documents: int = 0
    chunks_written: int = 0
    chunks_removed: int = 0
    doc_ids: list[str] = field(default_factory=list)


def read_documents(path: Path) -> list[SourceDocument]:
    """The documents in one file (JSONL: one per line; otherwise the file).

    Raises :class:`InvalidRequest` naming the file and line for bad input.
    """
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidRequest(f"cannot read {path}: {exc}") from exc
    if path.suffix.lower() in {".jsonl", ".ndjson"}:
        return list(_jsonl_documents(path, raw))
    fmt: DocFormat = "markdown" if path.suffix.lower() in {".md", ".markdown"} else "text"
    return [SourceDocument(path.name, path.stem, raw, fmt, str(path))]


def _jsonl_documents(path: Path, raw: str) -> Iterable[SourceDocument]:
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            doc_id, text = str(obj["_id"]), str(obj["text"])
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidRequest(f"{path}:{number}: expected {{_id, title, text}}: {exc}") from exc
        yield SourceDocument(doc_id, str(obj.get("title") or ""), text, "text", f"{path}:{number}")


def _records(tenant: str, doc: SourceDocument, chunks: Sequence[Chunk]) -> list[NewRecord]:
    return [
        NewRecord(
            tenant=tenant, kind=Kind.DOCUMENT, id=c.id, doc_id=c.doc_id, title=c.title,
            text=c.text, metadata={"source": doc.source, "ordinal": c.ordinal},
        )
        for c in chunks
    ]


async def ingest_files(
    store: MemoryStore, tenant: str, paths: Sequence[Path], *, max_chars: int = 2_000
) -> IngestReport:
    """Ingest Markdown, text and JSONL files into ``tenant``'s knowledge base."""
    report = IngestReport()
    pending: list[NewRecord] = []
    for path in paths:
        for doc in read_documents(path):
            chunks = chunk_document(doc.doc_id, doc.text, title=doc.title, fmt=doc.fmt,
                                    max_chars=max_chars)
            if not chunks:
                continue
            pending.extend(_records(tenant, doc, chunks))
            report.documents += 1
            report.doc_ids.append(doc.doc_id)
            # Drop chunks the new version no longer has (a no-op on first ingest).
            report.chunks_removed += await store.delete_document(
                tenant, doc.doc_id, keep={c.id for c in chunks}
            )
            if len(pending) >= _BATCH:
                report.chunks_written += len(await store.put(pending))
                pending = []
    if pending:
        report.chunks_written += len(await store.put(pending))
    return report


async def search(store: MemoryStore, tenant: str, query: str, *, k: int = 5) -> list[SearchHit]:
    """Knowledge-base chunks only (no user facts), best first."""
    return await store.search(tenant, query, kinds={Kind.DOCUMENT}, k=k)


async def delete_documents(store: MemoryStore, tenant: str, doc_ids: Iterable[str]) -> int:
    """Delete whole documents; returns the number of chunks removed."""
    removed = 0
    for doc_id in doc_ids:
        removed += await store.delete_document(tenant, doc_id)
    return removed


def hit_as_dict(hit: SearchHit) -> dict[str, Any]:
    """A JSON-ready view of one hit for ``diwaniya kb search`` output.

    >>> # {"doc_id": "policy.md", "chunk_id": "policy.md#1", "score": 7.41,
    >>> #  "title": "سياسة المتجر › الاسترجاع", "snippet": "… [[إرجاع]] المنتج …"}
    """
    rec = hit.record
    return {
        "doc_id": rec.doc_id,
        "chunk_id": rec.id,
        "score": round(hit.score, 4),
        "title": rec.title,
        "snippet": hit.snippet,
    }
