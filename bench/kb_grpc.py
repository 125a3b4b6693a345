"""The Knowledge service over gRPC: upload, search and list ARCD passages.

``.venv/bin/python bench/kb_grpc.py [--data ../shared/data] [--postgres DSN] [--batch 100]``

Starts the service in-process on 127.0.0.1:0 (SQLite; with ``--postgres`` a
second run on that database), uploads qa_arcd.corpus.jsonl (465 Arabic
Wikipedia passages) with UpsertDocuments in calls of ``--batch`` documents,
uploads it again (every document replaced), asks every ARCD question with
Search (limit 5) one at a time, and lists every document with page_size 50.

Columns: upload and re-upload throughput (documents/s, wall clock), Search
latency p50/p95 (ms, client side, sequential), ``recall@5`` = share of
questions whose passage is among the 5 hits, list time for all pages (ms).
Prints a table, writes bench/results/kb_grpc.json; last line is JSON.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections.abc import AsyncIterator  # noqa: E402
from typing import Any  # noqa: E402

import grpc  # noqa: E402

from diwaniya.v1 import knowledge_pb2 as kpb  # noqa: E402
from diwaniya.v1 import knowledge_pb2_grpc as kpb_grpc  # noqa: E402
from service import Settings, build_app  # noqa: E402
from service.auth import hash_key  # noqa: E402


async def _upload(stub: kpb_grpc.KnowledgeStub, md: Any, corpus: list[dict[str, Any]],
                  batch: int) -> float:
    start = time.perf_counter()
    for i in range(0, len(corpus), batch):
        async def gen(part: list[dict[str, Any]]) -> AsyncIterator[kpb.UpsertDocumentRequest]:
            for p in part:
                yield kpb.UpsertDocumentRequest(id=p["_id"], title=p.get("title", ""),
                                                text=p["text"],
                                                format=kpb.DOCUMENT_FORMAT_TEXT)
        await stub.UpsertDocuments(gen(corpus[i:i + batch]), metadata=md)
    return len(corpus) / (time.perf_counter() - start)


async def run(backend: str, dsn: str | None, data: Path, batch: int) -> dict[str, Any]:
    corpus = [json.loads(x) for x in (data / "qa_arcd.corpus.jsonl").open(encoding="utf-8")]
    queries = [json.loads(x) for x in (data / "qa_arcd.queries.jsonl").open(encoding="utf-8")]
    key = f"bench-{uuid.uuid4().hex[:8]}"
    with tempfile.TemporaryDirectory() as tmp:
        extra: dict[str, Any] = {"database_url": dsn} if dsn else {}
        settings = Settings(data_dir=Path(tmp) / "data", listen="127.0.0.1:0",
                            api_keys={hash_key(key): key}, max_message_bytes=4 << 20, **extra)
        app = await build_app(settings)
        server = app.server()
        await server.start()
        md = (("authorization", f"Bearer {key}"),)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                stub = kpb_grpc.KnowledgeStub(channel)
                first = await _upload(stub, md, corpus, batch)
                again = await _upload(stub, md, corpus, batch)
                took, found = [], 0
                for q in queries:
                    start = time.perf_counter()
                    resp = await stub.Search(kpb.SearchRequest(query=q["text"], limit=5),
                                             metadata=md)
                    took.append((time.perf_counter() - start) * 1000)
                    found += bool({h.document_id for h in resp.hits}
                                  & set(q["relevant_passage_ids"]))
                start, token, listed = time.perf_counter(), "", 0
                while True:
                    page = await stub.ListDocuments(
                        kpb.ListDocumentsRequest(page_size=50, page_token=token), metadata=md)
                    listed += len(page.documents)
                    token = page.next_page_token
                    if not token:
                        break
                list_ms = (time.perf_counter() - start) * 1000
        finally:
            await server.drain(0, delay=0)
            await app.close()
    cuts = statistics.quantiles(took, n=20)
    return {"backend": backend, "documents": len(corpus), "listed": listed,
            "upload_docs_per_s": round(first, 1), "reupload_docs_per_s": round(again, 1),
            "search_p50_ms": round(statistics.median(took), 2), "search_p95_ms": round(cuts[18], 2),
            "recall_at_5": round(found / len(queries), 4), "queries": len(queries),
            "list_all_ms": round(list_ms, 1)}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=_HERE.parent.parent / "shared" / "data")
    parser.add_argument("--postgres", default="", help="also run on this PostgreSQL DSN")
    parser.add_argument("--batch", type=int, default=100)
    args = parser.parse_args()
    rows = [await run("sqlite", None, args.data, args.batch)]
    if args.postgres:
        rows.append(await run("postgres", args.postgres, args.data, args.batch))
    cols = list(rows[0])
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r[c]) for c in cols))
    out = {"bench": "kb_grpc", "batch": args.batch, "rows": rows}
    (_HERE / "results" / "kb_grpc.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
