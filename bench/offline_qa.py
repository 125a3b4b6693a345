"""Offline responder on ARCD: does it answer with the right sentence, and abstain honestly?

``nice -n 10 .venv/bin/python bench/offline_qa.py [--data DIR] [--limit N]``
reads ../shared/data/qa_arcd.{corpus,queries}.jsonl (read-only). Prints a table,
writes bench/results/offline_qa.json; the last line is one JSON object.

Pipeline per question, as in the service with no model configured: memory
(SQLite store, ``nlp.search_keys``) recalls the top 5 KB chunks, then
``OfflineResponder`` composes the reply.

* answerable: the full KB is ingested. ``span_in_reply`` = a gold answer span
  appears verbatim in the reply (the right passage's sentence was served).
* unanswerable: only the articles of one half are ingested and questions
  about the *other* half are asked. The honest outcome is "I don't know" or a
  clarifying question; ``false_answer`` counts replies that asserted a passage.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, bench/ is sys.path[0] and bench/nlp.py would shadow the nlp package.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from typing import Any  # noqa: E402

import nlp  # noqa: E402
from majlis.models import (  # noqa: E402
    ChatMessage,
    Citation,
    ModelRequest,
    OfflineResponder,
    PhraseBook,
    Recalled,
    ResponderContext,
    TextChunk,
)
from memory import Kind, NewRecord, SqliteMemoryStore  # noqa: E402

ROOT = _HERE.parent
TENANT_ALL, TENANT_HALF = "arcd-all", "arcd-half"


def _article(passage_id: str) -> str:
    return passage_id.rsplit("-", 1)[0]  # arcd-p012-03 → arcd-p012


def _load(data: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    def read(name: str) -> list[dict[str, Any]]:
        with (data / name).open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]

    return read("qa_arcd.corpus.jsonl"), read("qa_arcd.queries.jsonl")


async def _ingest(store: SqliteMemoryStore, tenant: str, passages: list[dict[str, Any]]) -> None:
    await store.put(
        [
            NewRecord(
                tenant=tenant,
                kind=Kind.DOCUMENT,
                text=p["text"],
                id=p["_id"],
                title=p.get("title", ""),
                doc_id=_article(p["_id"]),
            )
            for p in passages
        ]
    )


async def _recall(store: SqliteMemoryStore, tenant: str, question: str) -> tuple[Recalled, ...]:
    hits = await store.search(tenant, question, kinds={Kind.DOCUMENT}, k=5)
    return tuple(
        Recalled(
            id=h.record.id,
            kind=str(h.record.kind),
            title=h.record.title,
            text=h.record.text,
            snippet=h.snippet,
            score=h.score,
        )
        for h in hits
    )


async def _reply(
    responder: OfflineResponder, question: str, recalled: tuple[Recalled, ...]
) -> tuple[str, list[Citation]]:
    ctx = ResponderContext(user_text=question, region="msa", is_request=True, recalled=recalled)
    request = ModelRequest(messages=(ChatMessage("user", question),), tools=(), context=ctx)
    text, cites = "", []
    async for out in responder.stream(request):
        if isinstance(out, TextChunk):
            text += out.text
        elif isinstance(out, Citation):
            cites.append(out)
    return text, cites


def _outcome(text: str, cites: list[Citation], phrases: PhraseBook) -> str:
    if cites:
        return "answered"
    if text == phrases.say("dont_know", "msa"):
        return "dont_know"
    return "clarify"


async def run(data: Path, limit: int | None) -> dict[str, Any]:
    corpus, queries = _load(data)
    queries = queries[:limit] if limit else queries
    responder = OfflineResponder(keys=nlp.search_keys)
    phrases = PhraseBook.load()
    articles = sorted({_article(p["_id"]) for p in corpus})
    half = set(articles[::2])  # every other article: both halves span the whole corpus
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteMemoryStore(Path(tmp) / "kb.sqlite3", keys=nlp.key_function("builtin"))
        await store.setup()
        await _ingest(store, TENANT_ALL, corpus)
        await _ingest(store, TENANT_HALF, [p for p in corpus if _article(p["_id"]) in half])

        counts: Counter[str] = Counter()
        started = time.perf_counter()
        respond_s = 0.0
        for q in queries:
            relevant = set(q["relevant_passage_ids"])
            recalled = await _recall(store, TENANT_ALL, q["text"])
            counts["retrieved@5"] += bool(relevant & {r.id for r in recalled})
            t0 = time.perf_counter()
            text, cites = await _reply(responder, q["text"], recalled)
            respond_s += time.perf_counter() - t0
            counts[_outcome(text, cites, phrases)] += 1
            spans = [a["text"] for a in q.get("answers", []) if a.get("text")]
            if cites and any(s in text for s in spans):
                counts["span_in_reply"] += 1
            if cites and _article(cites[0].recalled.id) in {_article(r) for r in relevant}:
                counts["cited_right_article"] += 1
        n = len(queries)

        held_out = [q for q in queries if _article(q["relevant_passage_ids"][0]) not in half]
        abstain: Counter[str] = Counter()
        for q in held_out:
            recalled = await _recall(store, TENANT_HALF, q["text"])
            text, cites = await _reply(responder, q["text"], recalled)
            abstain[_outcome(text, cites, phrases)] += 1
        await store.close()
        elapsed = time.perf_counter() - started
    m = len(held_out)
    return {
        "bench": "offline_qa",
        "keys": "nlp",
        "questions": n,
        "retrieval_at_5": round(counts["retrieved@5"] / n, 4),
        "answered_rate": round(counts["answered"] / n, 4),
        "span_in_reply_rate": round(counts["span_in_reply"] / n, 4),
        "cited_right_article_rate": round(counts["cited_right_article"] / n, 4),
        "clarify_rate": round(counts["clarify"] / n, 4),
        "dont_know_rate": round(counts["dont_know"] / n, 4),
        "unanswerable_questions": m,
        "unanswerable_abstain_rate": round((abstain["dont_know"] + abstain["clarify"]) / m, 4),
        "unanswerable_dont_know_rate": round(abstain["dont_know"] / m, 4),
        "unanswerable_false_answer_rate": round(abstain["answered"] / m, 4),
        "responder_ms_per_question": round(respond_s / n * 1000, 3),
        "total_s": round(elapsed, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    result = asyncio.run(run(args.data, args.limit))
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key:<{width}}  {value}")
    out = ROOT / "bench" / "results" / "offline_qa.json"
    out.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
