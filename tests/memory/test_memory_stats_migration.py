"""Per-tenant term statistics (memory.sqlite_stats) on SQLite files from before them.

A file the previous release wrote has rows, FTS index, pools and typo
vocabulary but no ``memory_terms``.  setup() must count every tenant's
document frequencies from the rows once, even with three replicas opening
the file at once, keep them exact through later writes, updates and
deletes, and rank exactly as a file that held the same rows from the start.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections import Counter
from pathlib import Path

import pytest

from memory import Kind, NewRecord, SqliteMemoryStore, sqlite_store
from memory.terms import KeyFunction

RUN = uuid.uuid4().hex[:8]
A, B = f"a-{RUN}", f"b-{RUN}"

# What the previous release's setup() left: everything but memory_terms.
_BEFORE_TERMS = """
DROP TRIGGER memory_terms_ai;
DROP TRIGGER memory_terms_ad;
DROP TRIGGER memory_terms_au;
DROP TABLE memory_terms;
DELETE FROM memory_meta WHERE key = 'terms_v1';
"""


def _rows(tenant: str) -> list[NewRecord]:
    return [
        NewRecord(tenant=tenant, kind=Kind.DOCUMENT, id="refund#0", doc_id="refund",
                  text="سياسة الاسترجاع: يمكن إرجاع المنتج خلال ١٤ يوماً مع الفاتورة."),
        NewRecord(tenant=tenant, kind=Kind.DOCUMENT, id="hours#0", doc_id="hours",
                  text="ساعات العمل من الأحد إلى الخميس، والاسترجاع في الفرع خلال الدوام."),
        NewRecord(tenant=tenant, kind=Kind.FACT, user_id="u1", id="name", text="اسمي سارة",
                  thread_id="th1"),
    ]


def _recounted(path: Path) -> dict[tuple[str, str], int]:
    """Document frequencies counted afresh from the rows' keys."""
    db = sqlite3.connect(path)
    try:
        counts: Counter[tuple[str, str]] = Counter()
        for tenant, keys in db.execute("SELECT tenant, keys FROM memory_records"):
            counts.update((tenant, term) for term in set(keys.split()))
        return dict(counts)
    finally:
        db.close()


def _stored(path: Path) -> dict[tuple[str, str], int]:
    db = sqlite3.connect(path)
    try:
        return {(t, term): df for t, term, df in db.execute("SELECT * FROM memory_terms")}
    finally:
        db.close()


async def _ranking(store: SqliteMemoryStore, tenant: str) -> list[list[tuple[str, float]]]:
    out = []
    for query in ("الاسترجاع خلال الدوام", "الدوام الصبح", "سارة"):
        hits = await store.search(tenant, query, user_id="u1", k=5)
        out.append([(h.record.id, h.score) for h in hits])
    return out


async def test_sqlite_file_from_before_term_statistics_is_counted_once(
    tmp_path: Path, keys: KeyFunction
) -> None:
    path = tmp_path / "old.sqlite3"
    first = SqliteMemoryStore(path, keys=keys)
    await first.setup()
    await first.close()
    db = sqlite3.connect(path)
    db.executescript(_BEFORE_TERMS)
    db.close()
    # The previous release's writes: rows of two tenants, an update, an erasure.
    old = SqliteMemoryStore(path, keys=keys)
    await old._conn()  # open without setup(), as the old code's schema stands
    await old.put(_rows(A) + _rows(B))
    await old.put([NewRecord(tenant=A, kind=Kind.DOCUMENT, id="hours#0", doc_id="hours",
                             text="ساعات العمل من السبت إلى الخميس")])
    await old.erase_thread(B, "th1")
    await old.close()

    replicas = [SqliteMemoryStore(path, keys=keys) for _ in range(3)]
    await asyncio.gather(*(r.setup() for r in replicas))
    try:
        stored = _stored(path)
        assert stored == _recounted(path)
        assert stored[(A, "ساعات")] == 1 and (B, "سارة") not in stored
        # Later writes by any replica keep the counts exact.
        await replicas[1].put([NewRecord(tenant=A, kind=Kind.DOCUMENT, id="hours#0",
                                         doc_id="hours", text="الدوام من ٩ الصبح")])
        await replicas[2].delete_document(B, "refund")
        await replicas[0].put(_rows(f"c-{RUN}"))
        assert _stored(path) == _recounted(path)
        assert all(df > 0 for df in _stored(path).values())
        # And the migrated file ranks exactly as one that held these rows from the start.
        fresh = SqliteMemoryStore(tmp_path / "fresh.sqlite3", keys=keys)
        await fresh.setup()
        try:
            await fresh.put([r for r in _rows(A) if r.id != "hours#0"] + [
                NewRecord(tenant=A, kind=Kind.DOCUMENT, id="hours#0", doc_id="hours",
                          text="الدوام من ٩ الصبح")])
            migrated = await _ranking(replicas[0], A)
            assert migrated == await _ranking(fresh, A)
            assert all(migrated)
        finally:
            await fresh.close()
    finally:
        for r in replicas:
            await r.close()


async def test_setup_waits_out_another_process_migration(
    tmp_path: Path, keys: KeyFunction, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A backfill holds the write lock for seconds on a big file; a replica
    # starting meanwhile must wait for it (then find it done), not fail as a
    # normal write does after its busy timeout (shortened here to 50 ms).
    monkeypatch.setattr(sqlite_store, "_BUSY_MS", 50)
    path = tmp_path / "busy.sqlite3"
    first = SqliteMemoryStore(path, keys=keys)
    await first.setup()
    await first.close()
    migrating = sqlite3.connect(path, isolation_level=None)
    migrating.execute("BEGIN IMMEDIATE")  # the other process, mid-migration
    late = SqliteMemoryStore(path, keys=keys)
    try:
        starting = asyncio.create_task(late.setup())
        await asyncio.sleep(0.5)  # ten busy timeouts
        assert not starting.done()
        migrating.execute("COMMIT")
        await starting
        await late.put(_rows(A))
        assert await late.search(A, "سارة", user_id="u1")
    finally:
        migrating.close()
        await late.close()
