"""Knowledge-base chunking and ingest: stable ids, in-place re-ingest, JSONL."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from diwaniya.errors import InvalidRequest
from memory import Kind, MemoryStore
from memory.chunking import chunk_document
from memory.kb import delete_documents, ingest_files, search

POLICY = """# سياسة المتجر

مرحباً بكم في متجرنا.

## الاسترجاع

يمكن إرجاع المنتج خلال ١٤ يوماً من الاستلام بشرط وجود الفاتورة.

## التوصيل

التوصيل مجاني للطلبات فوق ٢٠٠ ريال.

```bash
# هذا تعليق وليس عنواناً
```
"""


def test_markdown_chunks_follow_headings_with_heading_path_titles() -> None:
    chunks = chunk_document("policy.md", POLICY, title="policy")
    assert [c.id for c in chunks] == [f"policy.md#{i}" for i in range(len(chunks))]
    titles = [c.title for c in chunks]
    assert "policy › سياسة المتجر › الاسترجاع" in titles
    refund = next(c for c in chunks if c.title.endswith("الاسترجاع"))
    assert "خلال ١٤ يوماً" in refund.text and "التوصيل مجاني" not in refund.text
    # '#' inside a code fence is not a heading.
    assert not any(c.title.endswith("هذا تعليق وليس عنواناً") for c in chunks)


def test_long_paragraphs_are_split_by_sentence_within_the_limit() -> None:
    sentence = "هذه جملة طويلة نسبياً عن سياسة الشحن والتوصيل؟ "
    chunks = chunk_document("long.txt", sentence * 40, fmt="text", max_chars=300)
    assert len(chunks) > 1
    assert all(len(c.text) <= 300 for c in chunks)
    joined = " ".join(c.text for c in chunks)
    assert joined.count("سياسة") == 40  # nothing lost, nothing duplicated


def test_chunk_ids_are_stable_across_runs() -> None:
    first = chunk_document("p.md", POLICY)
    second = chunk_document("p.md", POLICY)
    assert [(c.id, c.text) for c in first] == [(c.id, c.text) for c in second]


async def test_ingest_search_reingest_and_delete(
    store: MemoryStore, tenants: Callable[[str], str], tmp_path: Path
) -> None:
    t = tenants("shop")
    path = tmp_path / "policy.md"
    path.write_text(POLICY, encoding="utf-8")
    report = await ingest_files(store, t, [path])
    assert report.documents == 1 and report.chunks_written >= 3 and report.chunks_removed == 0

    hits = await search(store, t, "ابي ارجع المنتج، كم يوم عندي؟")
    assert hits[0].record.doc_id == "policy.md"
    assert "الاسترجاع" in hits[0].record.title
    assert hits[0].record.kind is Kind.DOCUMENT

    # Shorter file: the delivery section disappears and must not linger.
    path.write_text(POLICY.split("## التوصيل")[0], encoding="utf-8")
    again = await ingest_files(store, t, [path])
    assert again.chunks_removed >= 1
    assert not await search(store, t, "التوصيل مجاني للطلبات")
    assert (await search(store, t, "إرجاع المنتج"))[0].record.id == hits[0].record.id

    assert await delete_documents(store, t, ["policy.md"]) == again.chunks_written
    assert await search(store, t, "إرجاع المنتج") == []


async def test_jsonl_documents_keep_their_ids(
    store: MemoryStore, tenants: Callable[[str], str], tmp_path: Path
) -> None:
    t = tenants("wiki")
    rows = [
        {"_id": "p1", "title": "الرياض", "text": "الرياض عاصمة المملكة العربية السعودية."},
        {"_id": "p2", "title": "القاهرة", "text": "القاهرة عاصمة جمهورية مصر العربية."},
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    report = await ingest_files(store, t, [path])
    assert report.doc_ids == ["p1", "p2"]
    [hit] = await search(store, t, "ما هي عاصمة مصر؟", k=1)
    assert hit.record.doc_id == "p2" and hit.record.text == rows[1]["text"]


async def test_bad_jsonl_names_the_line(
    store: MemoryStore, tenants: Callable[[str], str], tmp_path: Path
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"_id": "a", "text": "نص"}\n{"title": "بدون معرف"}\n', encoding="utf-8")
    with pytest.raises(InvalidRequest, match=r"bad\.jsonl:2"):
        await ingest_files(store, tenants("x"), [path])
