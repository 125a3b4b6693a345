"""``diwaniya.v1.Knowledge`` over grpc.aio: a tenant's knowledge base.

The tenant is always the API key's (service.auth), never a request field.
Each RPC is a thin translation onto memory.kb; domain errors go through the
one mapping in service.errors.

>>> # UpsertDocuments([{id: "refunds", title: "سياسة الاسترجاع", text: "# الاسترجاع\\n…"}])
>>> # → {documents: 1, chunks: 2}
>>> # Search({query: "كيف ارجع المنتج؟"})
>>> # → {hits: [{document_id: "refunds", snippet: "يمكن [[إرجاع]] [[المنتج]] …", …}]}
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from diwaniya.errors import DiwaniyaError, InvalidRequest, Unavailable
from diwaniya.v1 import knowledge_pb2 as kpb
from diwaniya.v1 import knowledge_pb2_grpc as kpb_grpc
from memory import kb
from memory.chunking import DocFormat
from memory.store import MemoryStore
from memory.terms import MAX_K
from service import errors as status
from service import priority
from service.auth import ApiKeyAuth
from service.wire import Undecodable

log = logging.getLogger("diwaniya.knowledge")

SERVICE = kpb.DESCRIPTOR.services_by_name["Knowledge"]
MAX_SEARCH_LIMIT = min(50, MAX_K)

_FORMATS: dict[int, DocFormat] = {
    kpb.DOCUMENT_FORMAT_UNSPECIFIED: "markdown",
    kpb.DOCUMENT_FORMAT_MARKDOWN: "markdown",
    kpb.DOCUMENT_FORMAT_TEXT: "text",
}
_WIRE_FORMATS = {"markdown": kpb.DOCUMENT_FORMAT_MARKDOWN, "text": kpb.DOCUMENT_FORMAT_TEXT}


class KnowledgeServicer(kpb_grpc.KnowledgeServicer):
    def __init__(self, store: Callable[[], MemoryStore], auth: ApiKeyAuth,
                 limits: kb.UploadLimits, draining: asyncio.Event | None = None) -> None:
        # Asked for on every call, as the Conversations servicer's engine (service.opening).
        self._store_of = store
        self._auth = auth
        self._limits = limits
        self._draining = draining or asyncio.Event()

    @property
    def _store(self) -> MemoryStore:
        return self._store_of()

    def _tenant(self, context: grpc.aio.ServicerContext[Any, Any]) -> str:
        if self._draining.is_set():
            raise Unavailable("this replica is shutting down; retry, another replica will serve")
        tenant = self._auth.tenant(context.invocation_metadata())
        self._store_of()  # not open yet: UNAVAILABLE with RetryInfo
        return tenant

    @staticmethod
    async def _abort(context: grpc.aio.ServicerContext[Any, Any], exc: Exception) -> None:
        if isinstance(exc, DiwaniyaError):
            await status.abort(context, exc)
        ref = uuid.uuid4().hex[:12]
        log.exception("internal error (ref %s)", ref, exc_info=exc)
        await context.abort(grpc.StatusCode.INTERNAL, f"internal error (ref {ref})")

    async def UpsertDocuments(
        self, request_iterator: AsyncIterator[kpb.UpsertDocumentRequest | Undecodable],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> kpb.UpsertDocumentsResponse:
        # A bulk upload (chunking, keying, indexing) is no first response anyone
        # waits on: it runs behind the turns' first events (service.priority).
        priority.settle()
        try:
            # Authenticated before a byte of the upload is read.
            tenant = self._tenant(context)
            batch = kb.UploadBatch(self._limits)
            async for message in request_iterator:
                if isinstance(message, Undecodable):
                    raise InvalidRequest(message.message)
                if message.format not in _FORMATS:
                    raise InvalidRequest(
                        f"document {message.id!r}: format {message.format} is not one of "
                        "DOCUMENT_FORMAT_MARKDOWN, DOCUMENT_FORMAT_TEXT", field="format")
                batch.add(kb.DocumentInput(
                    id=message.id, text=message.text, title=message.title,
                    fmt=_FORMATS[message.format], metadata=dict(message.metadata)))
            documents, chunks = await kb.upsert_documents(
                self._store, tenant, batch.documents.values())
            return kpb.UpsertDocumentsResponse(documents=documents, chunks=chunks)
        except Exception as exc:
            await self._abort(context, exc)
            raise  # unreachable: abort raises

    async def ListDocuments(
        self, request: kpb.ListDocumentsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> kpb.ListDocumentsResponse:
        try:
            tenant = self._tenant(context)  # first: auth and draining before the store
            docs, token = await kb.list_documents(
                self._store, tenant, page_size=request.page_size,
                page_token=request.page_token)
            return kpb.ListDocumentsResponse(
                documents=[kpb.DocumentSummary(
                    id=d.id, title=d.title, metadata=dict(d.metadata), chunk_count=d.chunk_count,
                    updated_at=_timestamp(d)) for d in docs],
                next_page_token=token)
        except Exception as exc:
            await self._abort(context, exc)
            raise

    async def GetDocument(
        self, request: kpb.GetDocumentRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> kpb.Document:
        try:
            tenant = self._tenant(context)
            d = await kb.get_document(self._store, tenant, request.id)
            return kpb.Document(
                id=d.id, title=d.title, text=d.text, format=_WIRE_FORMATS[d.fmt],
                metadata=dict(d.metadata), chunk_count=d.chunk_count, updated_at=_timestamp(d))
        except Exception as exc:
            await self._abort(context, exc)
            raise

    async def DeleteDocuments(
        self, request: kpb.DeleteDocumentsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> kpb.DeleteDocumentsResponse:
        try:
            tenant = self._tenant(context)
            deleted, missing = await kb.remove_documents(self._store, tenant, list(request.ids))
            return kpb.DeleteDocumentsResponse(deleted=deleted, missing=missing)
        except Exception as exc:
            await self._abort(context, exc)
            raise

    async def Search(
        self, request: kpb.SearchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> kpb.SearchResponse:
        try:
            tenant = self._tenant(context)
            if not request.query.strip():
                raise InvalidRequest("query is empty", field="query")
            if request.limit < 0 or request.limit > MAX_SEARCH_LIMIT:
                raise InvalidRequest(f"limit must be 0-{MAX_SEARCH_LIMIT} (0: 5)", field="limit")
            hits = await kb.search(self._store, tenant, request.query, k=request.limit or 5)
            return kpb.SearchResponse(hits=[
                kpb.SearchHit(document_id=h.record.doc_id or "", chunk_id=h.record.id,
                              title=h.record.title, snippet=h.snippet, score=h.score)
                for h in hits])
        except Exception as exc:
            await self._abort(context, exc)
            raise


def _timestamp(doc: kb.KnowledgeDocument) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(doc.updated_at)
    return ts
