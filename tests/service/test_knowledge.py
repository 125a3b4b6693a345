"""diwaniya.v1.Knowledge over a real gRPC server, on SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from diwaniya.v1 import knowledge_pb2 as kpb
from diwaniya.v1 import knowledge_pb2_grpc as kpb_grpc

REFUNDS = """# سياسة الاسترجاع

## المدة

يمكن إرجاع المنتج خلال أربعة عشر يوماً من تاريخ الاستلام مع الفاتورة الأصلية.

## الحالة

يجب أن يكون المنتج في حالته الأصلية وغير مستعمل.
"""
SHIPPING = "يصل الشحن داخل المدينة خلال يومين، وإلى باقي المدن خلال خمسة أيام عمل."


# The README's example knowledge base, read once at import (not inside a coroutine).
EXAMPLES = {f.name: f.read_text(encoding="utf-8")
            for f in sorted((Path(__file__).resolve().parents[2] / "examples" / "kb").glob("*.md"))}


class Tenant:
    """One API key's view of the service."""

    def __init__(self, channel: grpc.aio.Channel, key: str) -> None:
        self.channel = channel
        self.stub = kpb_grpc.KnowledgeStub(channel)
        self.md = (("authorization", f"Bearer {key}"),)

    async def upsert(self, *docs: kpb.UpsertDocumentRequest) -> kpb.UpsertDocumentsResponse:
        async def gen() -> AsyncIterator[kpb.UpsertDocumentRequest]:
            for d in docs:
                yield d
        return await self.stub.UpsertDocuments(gen(), metadata=self.md)

    async def search(self, query: str, limit: int = 5) -> list[kpb.SearchHit]:
        resp = await self.stub.Search(kpb.SearchRequest(query=query, limit=limit),
                                      metadata=self.md)
        return list(resp.hits)

    async def ids(self) -> list[str]:
        out: list[str] = []
        token = ""
        while True:
            page = await self.stub.ListDocuments(
                kpb.ListDocumentsRequest(page_size=100, page_token=token), metadata=self.md)
            out += [d.id for d in page.documents]
            token = page.next_page_token
            if not token:
                return out


def doc(doc_id: str, text: str, **kw: Any) -> kpb.UpsertDocumentRequest:
    return kpb.UpsertDocumentRequest(id=doc_id, text=text, **kw)


@pytest.fixture
def knowledge(run_service: Callable[..., Any]) -> Callable[..., Any]:
    """``async with knowledge(**settings) as (a, b)``: two API keys, two tenants."""

    @asynccontextmanager
    async def start(**overrides: Any) -> AsyncIterator[tuple[Tenant, Tenant]]:
        run = uuid.uuid4().hex[:8]
        keys = {f"key-a-{run}": f"tenant-a-{run}", f"key-b-{run}": f"tenant-b-{run}"}
        async with run_service(api_keys=keys, **overrides) as svc:
            async with grpc.aio.insecure_channel(svc.target) as channel:
                a, b = (Tenant(channel, k) for k in keys)
                yield a, b

    return start


async def expect(code: grpc.StatusCode, call: Any, *words: str) -> str:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await call
    assert err.value.code() == code, err.value.details()
    details = err.value.details() or ""
    for word in words:
        assert word in details
    return details


async def test_upsert_get_search_and_metadata(knowledge: Callable[..., Any]) -> None:
    async with knowledge() as (a, _):
        got = await a.upsert(doc("refunds", REFUNDS, title="الاسترجاع",
                                 metadata={"lang": "ar", "owner": "support"}),
                             doc("shipping", SHIPPING, format=kpb.DOCUMENT_FORMAT_TEXT))
        assert got.documents == 2 and got.chunks >= 3
        d = await a.stub.GetDocument(kpb.GetDocumentRequest(id="refunds"), metadata=a.md)
        assert d.text == REFUNDS and d.title == "الاسترجاع"
        assert dict(d.metadata) == {"lang": "ar", "owner": "support"}
        # The title heading, then one chunk per section.
        assert d.format == kpb.DOCUMENT_FORMAT_MARKDOWN and d.chunk_count == 3
        assert d.updated_at.seconds > 0
        hits = await a.search("متى يصل الشحن؟")
        assert hits[0].document_id == "shipping" and "[[الشحن]]" in hits[0].snippet
        assert hits[0].score > 0 and hits[0].chunk_id == "shipping#0"
        await expect(grpc.StatusCode.NOT_FOUND,
                     a.stub.GetDocument(kpb.GetDocumentRequest(id="nope"), metadata=a.md),
                     "nope")


async def test_tenants_are_isolated(knowledge: Callable[..., Any]) -> None:
    async with knowledge() as (a, b):
        await a.upsert(doc("refunds", REFUNDS))
        assert await b.search("إرجاع المنتج") == []
        assert await b.ids() == []
        await expect(grpc.StatusCode.NOT_FOUND,
                     b.stub.GetDocument(kpb.GetDocumentRequest(id="refunds"), metadata=b.md))
        gone = await b.stub.DeleteDocuments(kpb.DeleteDocumentsRequest(ids=["refunds"]),
                                            metadata=b.md)
        assert gone.deleted == 0 and list(gone.missing) == ["refunds"]
        # B's document of the same id is B's own; A's is untouched.
        await b.upsert(doc("refunds", SHIPPING))
        assert (await a.search("إرجاع المنتج"))[0].document_id == "refunds"
        assert await a.search("الشحن") == []
        assert await a.ids() == ["refunds"]
        # No key, or a wrong one: UNAUTHENTICATED, never the default tenant.
        await expect(grpc.StatusCode.UNAUTHENTICATED,
                     a.stub.Search(kpb.SearchRequest(query="الشحن")))
        await expect(grpc.StatusCode.UNAUTHENTICATED, a.stub.Search(
            kpb.SearchRequest(query="الشحن"), metadata=(("authorization", "Bearer wrong"),)))


async def test_upsert_replaces_the_old_text(knowledge: Callable[..., Any]) -> None:
    async with knowledge() as (a, _):
        await a.upsert(doc("policy", REFUNDS))
        assert (await a.search("الفاتورة الأصلية"))[0].document_id == "policy"
        await a.upsert(doc("policy", "الدفع عند الاستلام متاح لجميع الطلبات."))
        assert await a.search("الفاتورة الأصلية") == []
        assert await a.search("مستعمل") == []
        assert (await a.search("الدفع عند الاستلام"))[0].chunk_id == "policy#0"
        d = await a.stub.GetDocument(kpb.GetDocumentRequest(id="policy"), metadata=a.md)
        assert d.chunk_count == 1 and d.text.startswith("الدفع")
        # The same id twice in one call: the last one wins, counted once.
        got = await a.upsert(doc("twice", "النسخة الأولى من النص"),
                             doc("twice", "النسخة الثانية من النص"))
        assert (got.documents, got.chunks) == (1, 1)
        d = await a.stub.GetDocument(kpb.GetDocumentRequest(id="twice"), metadata=a.md)
        assert d.text == "النسخة الثانية من النص"


async def test_delete_removes_from_search(knowledge: Callable[..., Any]) -> None:
    async with knowledge() as (a, _):
        await a.upsert(doc("refunds", REFUNDS), doc("shipping", SHIPPING))
        gone = await a.stub.DeleteDocuments(
            kpb.DeleteDocumentsRequest(ids=["refunds", "never"]), metadata=a.md)
        assert gone.deleted == 1 and list(gone.missing) == ["never"]
        assert await a.search("إرجاع المنتج الفاتورة") == []
        assert await a.ids() == ["shipping"]


async def test_large_uploads_are_bounded_and_write_nothing(
    knowledge: Callable[..., Any]
) -> None:
    async with knowledge(kb_max_document_bytes=2000, kb_max_upload_bytes=3000) as (a, _):
        await a.upsert(doc("old", REFUNDS))
        big = "كلمة " * 300  # 2,700 bytes of UTF-8 (9 a word)
        await expect(grpc.StatusCode.INVALID_ARGUMENT,
                     a.upsert(doc("fresh", SHIPPING), doc("old", "نص جديد"), doc("big", big)),
                     "DIWANIYA_KB_MAX_DOCUMENT_BYTES", "'big'", "2000")
        under = "كلمة " * 170  # 1,530 bytes: each fits, the call does not
        await expect(grpc.StatusCode.RESOURCE_EXHAUSTED,
                     a.upsert(doc("fresh", SHIPPING), doc("u1", under), doc("u2", under)),
                     "DIWANIYA_KB_MAX_UPLOAD_BYTES", "3000", "nothing was written")
        # Neither call wrote anything, not even its first, valid documents.
        assert await a.ids() == ["old"]
        assert await a.search("الشحن") == []
        old = await a.stub.GetDocument(kpb.GetDocumentRequest(id="old"), metadata=a.md)
        assert old.text == REFUNDS


async def test_message_over_the_server_limit_is_refused(knowledge: Callable[..., Any]) -> None:
    async with knowledge(max_message_bytes=8192) as (a, _):
        await expect(grpc.StatusCode.RESOURCE_EXHAUSTED, a.upsert(doc("x", "ك" * 10_000)))
        assert await a.ids() == []


@pytest.mark.parametrize(("docs", "field"), [
    ([], "documents"),
    ([doc("", SHIPPING)], "id"),
    ([doc("x", "   \n")], "text"),
    ([doc(" x", SHIPPING)], "id"),
    ([doc("x", SHIPPING, format=7)], "format"),  # type: ignore[arg-type]
])
async def test_malformed_upload_names_the_field(
    knowledge: Callable[..., Any], docs: Iterable[kpb.UpsertDocumentRequest], field: str
) -> None:
    async with knowledge() as (a, _):
        details = await expect(grpc.StatusCode.INVALID_ARGUMENT, a.upsert(*docs))
        assert field in details
        assert await a.ids() == []


async def test_bad_list_search_and_delete_requests(knowledge: Callable[..., Any]) -> None:
    async with knowledge() as (a, _):
        for call, word in [
            (a.stub.Search(kpb.SearchRequest(query="  "), metadata=a.md), "query"),
            (a.stub.Search(kpb.SearchRequest(query="x", limit=1000), metadata=a.md), "limit"),
            (a.stub.ListDocuments(kpb.ListDocumentsRequest(page_size=101), metadata=a.md),
             "page_size"),
            (a.stub.ListDocuments(kpb.ListDocumentsRequest(page_token="%%%"), metadata=a.md),
             "page_token"),
            (a.stub.DeleteDocuments(kpb.DeleteDocumentsRequest(), metadata=a.md), "ids"),
            (a.stub.GetDocument(kpb.GetDocumentRequest(), metadata=a.md), "id"),
        ]:
            await expect(grpc.StatusCode.INVALID_ARGUMENT, call, word)


async def test_list_documents_pages(knowledge: Callable[..., Any]) -> None:
    async with knowledge() as (a, b):
        ids = [f"doc-{i:02d}" for i in range(7)]
        await a.upsert(*(doc(i, f"{SHIPPING} رقم {i}", title=f"عنوان {i}") for i in ids))
        await b.upsert(doc("doc-00b", SHIPPING))  # sorts inside A's ids: must not show
        pages: list[list[str]] = []
        token = ""
        while True:
            page = await a.stub.ListDocuments(
                kpb.ListDocumentsRequest(page_size=3, page_token=token), metadata=a.md)
            pages.append([d.id for d in page.documents])
            token = page.next_page_token
            if not token:
                break
        assert pages == [ids[0:3], ids[3:6], ids[6:7]]
        first = (await a.stub.ListDocuments(kpb.ListDocumentsRequest(page_size=1),
                                            metadata=a.md)).documents[0]
        assert first.title == "عنوان doc-00" and first.chunk_count == 1


async def test_readme_example_knowledge_answers_its_questions(
    knowledge: Callable[..., Any]
) -> None:
    """examples/kb/*.md, as the README uploads them, answers the README's questions."""
    assert list(EXAMPLES) == ["hours.md", "returns.md", "shipping.md"]
    async with knowledge() as (a, _):
        await a.upsert(*(doc(name, text, title=name.removesuffix(".md"))
                         for name, text in EXAMPLES.items()))
        for question, expected in [("كم يوم عندي لإرجاع المنتج؟", "returns.md"),
                                   ("كم رسوم الشحن؟", "shipping.md"),
                                   ("متى تفتحون؟ أوقات العمل", "hours.md")]:
            assert (await a.search(question))[0].document_id == expected, question


async def test_undecodable_upload_bytes_are_invalid_argument(
    knowledge: Callable[..., Any]
) -> None:
    async with knowledge() as (a, _):
        upload = a.channel.stream_unary(
            "/diwaniya.v1.Knowledge/UpsertDocuments", request_serializer=lambda b: b,
            response_deserializer=kpb.UpsertDocumentsResponse.FromString)

        async def frames() -> AsyncIterator[bytes]:
            yield kpb.UpsertDocumentRequest(id="ok", text="نص سليم").SerializeToString()
            yield b"\x1a\x02\xd8\x00"  # field 3 (text): "\xd8\x00" is not UTF-8

        await expect(grpc.StatusCode.INVALID_ARGUMENT, upload(frames(), metadata=a.md), "UTF-8")
        assert await a.ids() == []  # the valid first document was not written either


async def test_reflection_lists_the_knowledge_service(knowledge: Callable[..., Any]) -> None:
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    # Reflection is off unless enabled (docs/security.md).
    async with knowledge(reflection=True) as (a, _):
        stub = reflection_pb2_grpc.ServerReflectionStub(a.channel)

        async def ask() -> AsyncIterator[reflection_pb2.ServerReflectionRequest]:
            yield reflection_pb2.ServerReflectionRequest(list_services="")

        names = [s.name async for r in stub.ServerReflectionInfo(ask())
                 for s in r.list_services_response.service]
        assert "diwaniya.v1.Knowledge" in names and "diwaniya.v1.Conversations" in names
