"""The knowledge base: ingest files as tenant-wide document chunks, search, delete.

These are the functions the ``diwaniya.v1.Knowledge`` service (service.knowledge)
and ``diwaniya kb --direct`` call; they take a ready store and plain values,
and print nothing.

Documents uploaded through the API keep their own fields in the metadata of
their first chunk (``{doc_id}#0``) under ``"document"``: title, format, the
caller's metadata and the text as uploaded, so GetDocument returns what was
sent, not a re-assembly of chunks (headings become chunk titles, memory.chunking).

Document ids: a Markdown or text file's id is its file name (``refunds.md``);
each JSONL line ``{_id, title, text}`` is a document with id ``_id``.
Re-ingesting a document upserts its chunks by id and deletes the chunks the
new version no longer has, so a shortened file leaves no stale rows.
"""

from __future__ import annotations

import base64
import binascii
import json
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from diwaniya.errors import InvalidRequest, NotFound, ResourceExhausted
from memory.chunking import Chunk, DocFormat, chunk_document
from memory.records import DocumentInfo, Kind, NewRecord, SearchHit
from memory.store import MemoryStore

__all__ = [
    "DocumentInput",
    "IngestReport",
    "KnowledgeDocument",
    "UploadBatch",
    "UploadLimits",
    "delete_documents",
    "get_document",
    "hit_as_dict",
    "ingest_files",
    "list_documents",
    "read_documents",
    "remove_documents",
    "search",
    "upsert_documents",
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
    # The first chunk keeps the document as read, as an upload's does, so
    # GetDocument answers for files ingested in-process too.
    whole = {"title": doc.title, "format": doc.fmt, "metadata": {"source": doc.source},
             "text": doc.text}
    return [
        NewRecord(
            tenant=tenant, kind=Kind.DOCUMENT, id=c.id, doc_id=c.doc_id, title=c.title,
            text=c.text, metadata={"source": doc.source, "ordinal": c.ordinal,
                                   **({"document": whole} if c.ordinal == 0 else {})},
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


# --------------------------------------------------------------- the API
MAX_DOC_ID_CHARS = 200
MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 20
MAX_DELETE_IDS = 1000


@dataclass(frozen=True, slots=True)
class DocumentInput:
    """One uploaded document (an ``UpsertDocumentRequest``)."""

    id: str
    text: str
    title: str = ""
    fmt: DocFormat = "markdown"
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class KnowledgeDocument:
    id: str
    title: str
    text: str
    fmt: DocFormat
    metadata: Mapping[str, str]
    chunk_count: int
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class UploadLimits:
    """Bounds of one upload call, in UTF-8 bytes of ``text`` (title and metadata
    are bounded by the server's per-message limit)."""

    max_document_bytes: int = 1 << 20
    max_upload_bytes: int = 16 << 20


class UploadBatch:
    """Collects one call's documents, checking each as it arrives, so an
    oversized call is refused at the document that crosses the limit, before
    the rest is read, and nothing is written (:func:`upsert_documents` runs
    only on a complete batch).

    >>> batch = UploadBatch(UploadLimits(max_document_bytes=10, max_upload_bytes=15))
    >>> batch.add(DocumentInput("a", "سلام"))          # 8 bytes
    >>> batch.add(DocumentInput("b", "مرحبا"))  # 10 bytes: 18 in all  # doctest: +SKIP
    Traceback (most recent call last):
    diwaniya.errors.ResourceExhausted: this upload passed 15 bytes of text ...
    """

    def __init__(self, limits: UploadLimits) -> None:
        self._limits = limits
        self.total_bytes = 0
        # Later uploads of the same id win, as they would in separate calls.
        self.documents: dict[str, DocumentInput] = {}

    def add(self, doc: DocumentInput) -> None:
        check_document(doc, index=len(self.documents))
        size = len(doc.text.encode("utf-8"))
        if size > self._limits.max_document_bytes:
            raise InvalidRequest(
                f"document {doc.id!r} has {size} bytes of text; the limit per document is "
                f"{self._limits.max_document_bytes} (DIWANIYA_KB_MAX_DOCUMENT_BYTES): split it "
                "into several documents", field="text")
        self.total_bytes += size
        if self.total_bytes > self._limits.max_upload_bytes:
            raise ResourceExhausted(
                f"this upload passed {self._limits.max_upload_bytes} bytes of text "
                "(DIWANIYA_KB_MAX_UPLOAD_BYTES) at document "
                f"{doc.id!r}; nothing was written: send the documents in several calls")
        self.documents[doc.id] = doc


def check_document(doc: DocumentInput, *, index: int = 0) -> None:
    """Raise :class:`InvalidRequest` naming the field of a malformed document."""
    where = f"document {index + 1}"
    if not doc.id.strip():
        raise InvalidRequest(f"{where}: id is required", field="id")
    if len(doc.id) > MAX_DOC_ID_CHARS:
        raise InvalidRequest(f"{where}: id is longer than {MAX_DOC_ID_CHARS} characters",
                             field="id")
    if doc.id != doc.id.strip() or any(unicodedata.category(c) == "Cc" for c in doc.id):
        raise InvalidRequest(f"{where}: id {doc.id!r} has control characters or surrounding "
                             "spaces", field="id")
    if not doc.text.strip():
        raise InvalidRequest(f"document {doc.id!r}: text is empty", field="text")
    if "\x00" in doc.text or "\x00" in doc.title:
        raise InvalidRequest(f"document {doc.id!r}: text contains NUL (U+0000)", field="text")


def _api_records(tenant: str, doc: DocumentInput, chunks: Sequence[Chunk]) -> list[NewRecord]:
    records = []
    for c in chunks:
        meta: dict[str, Any] = {"source": "api", "ordinal": c.ordinal}
        if c.ordinal == 0:
            meta["document"] = {"title": doc.title, "format": doc.fmt,
                                "metadata": dict(doc.metadata), "text": doc.text}
        records.append(NewRecord(tenant=tenant, kind=Kind.DOCUMENT, id=c.id, doc_id=c.doc_id,
                                 title=c.title, text=c.text, metadata=meta))
    return records


async def upsert_documents(
    store: MemoryStore, tenant: str, documents: Iterable[DocumentInput], *,
    max_chars: int = 2_000,
) -> tuple[int, int]:
    """Replace each document (same id) in one store transaction; (documents, chunks).

    A document whose text yields no chunk is refused (``text`` has no words
    to search), so every stored document is listable by its first chunk.
    """
    by_id: dict[str, list[NewRecord]] = {}
    for doc in documents:
        chunks = chunk_document(doc.id, doc.text, title=doc.title, fmt=doc.fmt,
                                max_chars=max_chars)
        if not chunks:
            raise InvalidRequest(f"document {doc.id!r}: text has no content", field="text")
        by_id[doc.id] = _api_records(tenant, doc, chunks)
    if not by_id:
        raise InvalidRequest("the upload has no documents: send at least one", field="documents")
    written = await store.replace_documents(tenant, by_id)
    return len(by_id), written


def _as_document(info: DocumentInfo) -> KnowledgeDocument:
    own = info.first.metadata.get("document")
    if not isinstance(own, dict):
        # Written before documents kept their own fields: only the count is known.
        own = {"title": "", "format": "text", "metadata": {"source": str(
            info.first.metadata.get("source", ""))}, "text": ""}
    fmt: DocFormat = "text" if own.get("format") == "text" else "markdown"
    return KnowledgeDocument(
        id=info.doc_id, title=str(own.get("title", "")), text=str(own.get("text", "")),
        fmt=fmt, metadata={str(k): str(v) for k, v in dict(own.get("metadata") or {}).items()},
        chunk_count=info.chunk_count, updated_at=info.first.updated_at)


def _page_token(doc_id: str) -> str:
    return base64.urlsafe_b64encode(doc_id.encode("utf-8")).decode("ascii")


def _after(page_token: str) -> str:
    if not page_token:
        return ""
    try:
        after = base64.b64decode(page_token.encode("ascii"), altchars=b"-_",
                                 validate=True).decode("utf-8")
        if not after:
            raise ValueError(page_token)
        return after
    except (ValueError, binascii.Error, UnicodeError):
        raise InvalidRequest("page_token is not a token this service returned; send "
                             "next_page_token unchanged, or '' for the first page",
                             field="page_token") from None


async def list_documents(
    store: MemoryStore, tenant: str, *, page_size: int = 0, page_token: str = ""
) -> tuple[list[KnowledgeDocument], str]:
    """One page of the tenant's documents by id, and the next page's token ('' at the end)."""
    if page_size < 0 or page_size > MAX_PAGE_SIZE:
        raise InvalidRequest(f"page_size must be 0-{MAX_PAGE_SIZE} (0: {DEFAULT_PAGE_SIZE})",
                             field="page_size")
    size = page_size or DEFAULT_PAGE_SIZE
    # One row more than the page tells whether another page exists.
    infos = await store.list_documents(tenant, after=_after(page_token), limit=size + 1)
    docs = [_as_document(i) for i in infos[:size]]
    return docs, (_page_token(docs[-1].id) if len(infos) > size else "")


async def get_document(store: MemoryStore, tenant: str, doc_id: str) -> KnowledgeDocument:
    if not doc_id:
        raise InvalidRequest("id is required", field="id")
    info = await store.get_document(tenant, doc_id)
    if info is None:
        raise NotFound(f"no document {doc_id!r} in this tenant's knowledge base")
    return _as_document(info)


async def remove_documents(
    store: MemoryStore, tenant: str, doc_ids: Sequence[str]
) -> tuple[int, list[str]]:
    """Delete whole documents: (documents deleted, ids the tenant did not have)."""
    if not doc_ids:
        raise InvalidRequest("ids is empty: name at least one document", field="ids")
    if len(doc_ids) > MAX_DELETE_IDS:
        raise InvalidRequest(f"at most {MAX_DELETE_IDS} ids per call", field="ids")
    if any(not d for d in doc_ids):
        raise InvalidRequest("ids contains an empty id", field="ids")
    deleted, missing = 0, []
    for doc_id in dict.fromkeys(doc_ids):
        if await store.delete_document(tenant, doc_id):
            deleted += 1
        else:
            missing.append(doc_id)
    return deleted, missing
