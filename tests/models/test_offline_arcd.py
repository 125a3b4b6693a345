"""The offline responder over a real ARCD knowledge base (memory's SQLite store)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nlp
from majlis.models import (
    ChatMessage,
    Citation,
    ModelRequest,
    OfflineResponder,
    PhraseBook,
    Recalled,
    ResponderContext,
    TextChunk,
)
from memory import Kind, NewRecord, SqliteMemoryStore

pytestmark = pytest.mark.shared_data

KHASHOGGI = "arcd-p000"


async def _ask(store: SqliteMemoryStore, tenant: str, question: str) -> tuple[str, list[Citation]]:
    hits = await store.search(tenant, question, kinds={Kind.DOCUMENT}, k=5)
    recalled = tuple(
        Recalled(h.record.id, str(h.record.kind), h.record.title, h.record.text, h.snippet, h.score)
        for h in hits
    )
    ctx = ResponderContext(user_text=question, region="msa", is_request=True, recalled=recalled)
    request = ModelRequest((ChatMessage("user", question),), (), ctx)
    outs = [o async for o in OfflineResponder(keys=nlp.search_keys).stream(request)]
    text = "".join(o.text for o in outs if isinstance(o, TextChunk))
    return text, [o for o in outs if isinstance(o, Citation)]


async def test_answers_from_the_passage_and_abstains_without_it(
    shared_data: Path, tmp_path: Path
) -> None:
    with (shared_data / "qa_arcd.corpus.jsonl").open(encoding="utf-8") as fh:
        passages = [json.loads(line) for line in fh][:60]  # the first few articles
    store = SqliteMemoryStore(tmp_path / "kb.sqlite3", keys=nlp.key_function("builtin"))
    await store.setup()
    try:
        records = [
            NewRecord(
                tenant=tenant, kind=Kind.DOCUMENT, text=p["text"], id=p["_id"], title=p["title"]
            )
            for p in passages
            for tenant in ("full", "without")
            if tenant == "full" or not p["_id"].startswith(KHASHOGGI)
        ]
        await store.put(records)
        question = "في أي مدينة ولد جمال أحمد حمزة خاشقجي؟"
        text, cites = await _ask(store, "full", question)
        assert "المدينة المنورة" in text
        assert cites and cites[0].recalled.id.startswith(KHASHOGGI)
        assert text in cites[0].recalled.text or all(
            s in cites[0].recalled.text for s in text.split(". ")
        )
        text, cites = await _ask(store, "without", question)
        assert cites == []
        phrases = PhraseBook.load()
        assert "المدينة المنورة" not in text
        assert text in (phrases.say("dont_know", "msa"),) or "؟" in text  # admits or asks
    finally:
        await store.close()
