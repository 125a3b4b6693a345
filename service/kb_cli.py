"""``diwaniya kb``: a client of ``diwaniya.v1.Knowledge``, or, with ``--direct``,
of the database the settings name.

The client path imports grpc, the stubs and memory.kb's file reading only:
never the conversation graph (langgraph, majlis), so it starts in well under
a second.  Every command prints JSON lines and exits 0, or prints
``diwaniya: …`` on stderr and exits 2.

>>> main(["kb", "--target", "127.0.0.1:50051", "search", "كم يوم للاسترجاع؟"])  # doctest: +SKIP
{"doc_id": "refunds.md", "chunk_id": "refunds.md#1", "score": 3.1, "title": "…", "snippet": "…"}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diwaniya.errors import InvalidRequest, NotFound
from service.cli_tls import tls_arguments

if TYPE_CHECKING:
    from memory import kb
    from service.settings import Settings

_HOW_TO_CREATE = ("create it with `diwaniya migrate` (or start `diwaniya serve` once) with the "
                  "same settings, or drop --direct to use a running server (--target)")


def add_parser(sub: Any) -> None:
    """The ``kb`` sub-command tree (``sub`` is the top-level subparsers object)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--target", default="",
                        help="HOST:PORT of the server (default: DIWANIYA_LISTEN)")
    common.add_argument("--api-key", default=os.environ.get("DIWANIYA_API_KEY"),
                        help="the tenant's API key (default: DIWANIYA_API_KEY)")
    common.add_argument("--direct", action="store_true",
                        help="skip the server: read and write the database the settings name "
                             "(DATABASE_URL or DIWANIYA_DATA_DIR); needs --tenant")
    common.add_argument("--tenant", default="", help="with --direct only: the tenant to manage")
    tls_arguments(common)
    p = sub.add_parser("kb", help="manage a tenant's knowledge base on a server")
    kbsub = p.add_subparsers(dest="kb_command", required=True)
    ingest = kbsub.add_parser("ingest", parents=[common],
                              help="upload Markdown, text or JSONL files (one call, atomic)")
    ingest.add_argument("files", nargs="+", type=Path)
    search = kbsub.add_parser("search", parents=[common], help="search the knowledge base")
    search.add_argument("-k", type=int, default=5)
    search.add_argument("query")
    delete = kbsub.add_parser("delete", parents=[common], help="delete documents by id")
    delete.add_argument("doc_ids", nargs="+")
    listing = kbsub.add_parser("list", parents=[common], help="list documents, one per line")
    listing.add_argument("--page-size", type=int, default=100)
    get = kbsub.add_parser("get", parents=[common], help="one document as uploaded")
    get.add_argument("doc_id")


def _print(obj: dict[str, Any]) -> None:
    print(json.dumps(obj, ensure_ascii=False))


def _inputs(paths: list[Path]) -> Iterator[kb.DocumentInput]:
    from memory import kb

    for path in paths:
        for d in kb.read_documents(path):
            yield kb.DocumentInput(id=d.doc_id, text=d.text, title=d.title, fmt=d.fmt,
                                   metadata={"source": d.source})


def _document(d: kb.KnowledgeDocument, *, text: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"id": d.id, "title": d.title, "metadata": dict(d.metadata),
                           "chunk_count": d.chunk_count, "updated_at": d.updated_at.isoformat()}
    if text:
        out.update(format=d.fmt, text=d.text)
    return out


async def run(settings: Settings, args: argparse.Namespace) -> int:
    # Imported here, not at the top: `diwaniya chat` shares this parser and
    # must not pay for memory's imports.
    if args.direct:
        return await _direct(settings, args)
    if args.tenant:
        raise InvalidRequest("--tenant needs --direct: through the server the tenant is the "
                             "API key's (--api-key or DIWANIYA_API_KEY)")
    return await _client(settings, args)


# ----------------------------------------------------------------- client
async def _client(settings: Settings, args: argparse.Namespace) -> int:
    import grpc
    from google.protobuf.json_format import MessageToDict

    from diwaniya.v1 import knowledge_pb2 as kpb
    from diwaniya.v1 import knowledge_pb2_grpc as kpb_grpc

    target = args.target or settings.listen.replace("0.0.0.0", "127.0.0.1")
    md = (("authorization", f"Bearer {args.api_key}"),) if args.api_key else ()
    formats = {"markdown": kpb.DOCUMENT_FORMAT_MARKDOWN, "text": kpb.DOCUMENT_FORMAT_TEXT}
    from diwaniya.client import _options as opt

    # The same channel as `diwaniya chat`: plaintext, TLS or mTLS by the flags.
    channel = opt.aio_channel(target, tls=bool(args.tls or args.tls_server_name),
                              tls_ca=args.tls_ca, tls_cert=args.tls_cert, tls_key=args.tls_key,
                              tls_server_name=args.tls_server_name)
    async with channel:
        stub = kpb_grpc.KnowledgeStub(channel)
        try:
            if args.kb_command == "ingest":
                docs = list(_inputs(args.files))  # read every file before sending any

                async def requests() -> AsyncIterator[kpb.UpsertDocumentRequest]:
                    for d in docs:
                        yield kpb.UpsertDocumentRequest(
                            id=d.id, title=d.title, text=d.text, format=formats[d.fmt],
                            metadata=dict(d.metadata))

                done = await stub.UpsertDocuments(requests(), metadata=md)
                _print({"documents": done.documents, "chunks": done.chunks,
                        "doc_ids": list(dict.fromkeys(d.id for d in docs))})
            elif args.kb_command == "search":
                found = await stub.Search(kpb.SearchRequest(query=args.query, limit=args.k),
                                          metadata=md)
                for h in found.hits:
                    _print({"doc_id": h.document_id, "chunk_id": h.chunk_id,
                            "score": round(h.score, 4), "title": h.title, "snippet": h.snippet})
            elif args.kb_command == "delete":
                gone = await stub.DeleteDocuments(kpb.DeleteDocumentsRequest(ids=args.doc_ids),
                                                  metadata=md)
                _print({"deleted": gone.deleted, "missing": list(gone.missing)})
            elif args.kb_command == "list":
                token = ""
                while True:
                    page = await stub.ListDocuments(kpb.ListDocumentsRequest(
                        page_size=args.page_size, page_token=token), metadata=md)
                    for s in page.documents:
                        _print({"id": s.id, "title": s.title, "metadata": dict(s.metadata),
                                "chunk_count": s.chunk_count,
                                "updated_at": s.updated_at.ToJsonString()})
                    token = page.next_page_token
                    if not token:
                        break
            else:
                doc = await stub.GetDocument(kpb.GetDocumentRequest(id=args.doc_id),
                                             metadata=md)
                _print(MessageToDict(doc, preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True))
        except grpc.aio.AioRpcError as exc:
            where = f" ({target})" if exc.code() == grpc.StatusCode.UNAVAILABLE else ""
            print(f"diwaniya: {exc.code().name}{where}: {exc.details()}", file=sys.stderr)
            return 2
    return 0


# ----------------------------------------------------------------- direct
async def _direct(settings: Settings, args: argparse.Namespace) -> int:
    from memory import kb, open_store
    from service.keys import search_key_function

    if not args.tenant:
        raise InvalidRequest("--direct needs --tenant: the tenant whose documents to manage")
    dsn = settings.database_dsn()
    # The same key function as the server: documents indexed here are found there.
    keys = await asyncio.to_thread(search_key_function, settings, os.environ)
    sqlite_path = settings.data_dir / "memory.sqlite3"
    if dsn:
        await _require_postgres_tables(dsn)
    elif not sqlite_path.is_file():
        # Opening it would create an empty store, and a search there finds
        # nothing: the usual sign of running from the wrong folder.
        raise NotFound(f"no knowledge base at {sqlite_path.resolve()}: {_HOW_TO_CREATE}")
    store = await open_store(dsn, sqlite_path=sqlite_path, keys=keys)
    try:
        tenant = args.tenant
        if args.kb_command == "ingest":
            batch = kb.UploadBatch(kb.UploadLimits(settings.kb_max_document_bytes,
                                                   settings.kb_max_upload_bytes))
            for d in _inputs(args.files):
                batch.add(d)
            documents, chunks = await kb.upsert_documents(store, tenant, batch.documents.values())
            _print({"documents": documents, "chunks": chunks, "doc_ids": list(batch.documents)})
        elif args.kb_command == "search":
            for hit in await kb.search(store, tenant, args.query, k=args.k):
                _print(kb.hit_as_dict(hit))
        elif args.kb_command == "delete":
            deleted, missing = await kb.remove_documents(store, tenant, args.doc_ids)
            _print({"deleted": deleted, "missing": missing})
        elif args.kb_command == "list":
            token = ""
            while True:
                docs, token = await kb.list_documents(store, tenant, page_size=min(
                    max(args.page_size, 1), kb.MAX_PAGE_SIZE), page_token=token)
                for page_doc in docs:
                    _print(_document(page_doc, text=False))
                if not token:
                    break
        else:
            _print(_document(await kb.get_document(store, tenant, args.doc_id), text=True))
    finally:
        await store.close()
    return 0


async def _require_postgres_tables(dsn: str) -> None:
    import asyncpg

    from diwaniya.errors import Unavailable
    from memory.factory import _asyncpg_dsn

    try:
        conn = await asyncpg.connect(_asyncpg_dsn(dsn), timeout=10)
    except (OSError, TimeoutError, asyncpg.PostgresError) as exc:
        raise Unavailable(f"cannot connect to the database: {exc}") from exc
    try:
        found = await conn.fetchval("SELECT to_regclass('memory_records') IS NOT NULL")
    finally:
        await conn.close()
    if not found:
        raise NotFound(f"the database has no knowledge-base tables: {_HOW_TO_CREATE}")
