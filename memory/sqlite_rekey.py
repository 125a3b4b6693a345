"""Re-keying the SQLite store (memory.rekey): fingerprint in memory_meta, rows by rowid.

The fingerprint is one ``memory_meta`` row ``keys=<fingerprint>`` (the table's
one column is its key; marks like ``pools_v1`` live beside it).  Each batch is
one ``BEGIN IMMEDIATE`` transaction that re-reads its rows, so a row another
connection rewrote since it was keyed is keyed again from its new text; the
``UPDATE OF keys`` triggers then move the FTS5 entry, the length pool and the
per-tenant document frequencies (memory.sqlite_schema, memory.sqlite_stats)
exactly as a delete and re-insert would.  The typo vocabulary gains the new
keys; old ones stay listed, as after a delete (memory.sqlite_typo: a key no row
holds has df 0 and is never chosen).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

import aiosqlite

from memory.rekey import BATCH_ROWS, Progress, RekeyReport, needs_rekey
from memory.sqlite_typo import ADD_WORDS, words
from memory.terms import KeyFunction
from memory.text_keys import record_terms

__all__ = ["record_if_new", "recorded_fingerprint", "rekey_sqlite"]

Locked = Callable[[], AbstractAsyncContextManager[aiosqlite.Connection]]

_PREFIX = "keys="
_GET = "SELECT key FROM memory_meta WHERE key LIKE 'keys=%' ORDER BY key LIMIT 1"
_PAGE = "SELECT rowid, title, text FROM memory_records WHERE rowid > ? ORDER BY rowid LIMIT ?"
_FRESH = ("SELECT rowid, tenant, title, text, keys FROM memory_records"
          " WHERE rowid IN (SELECT value FROM json_each(?))")
_SET_KEYS = "UPDATE memory_records SET keys = ? WHERE rowid = ?"


async def recorded_fingerprint(db: aiosqlite.Connection) -> str | None:
    async with db.execute(_GET) as cur:
        row = await cur.fetchone()
    return str(row[0])[len(_PREFIX):] if row else None


async def _record(db: aiosqlite.Connection, fingerprint: str) -> None:
    await db.execute("DELETE FROM memory_meta WHERE key LIKE 'keys=%'")
    await db.execute("INSERT INTO memory_meta VALUES (?)", (_PREFIX + fingerprint,))


async def _has_rows(db: aiosqlite.Connection) -> bool:
    async with db.execute("SELECT EXISTS (SELECT 1 FROM memory_records)") as cur:
        row = await cur.fetchone()
    return bool(row and row[0])


async def record_if_new(db: aiosqlite.Connection, fingerprint: str) -> str | None:
    """In setup's transaction: an empty file takes ``fingerprint``; returns what is recorded."""
    recorded = await recorded_fingerprint(db)
    if recorded is None and not await _has_rows(db):
        await _record(db, fingerprint)
        return fingerprint
    return recorded


def _keys_of(title: str, text: str, keys: KeyFunction) -> str:
    return " ".join(record_terms(title, text, keys))


async def _pages(locked: Locked, batch: int) -> AsyncIterator[list[tuple[int, str, str]]]:
    last = 0
    while True:
        async with locked() as db, db.execute(_PAGE, (last, batch)) as cur:
            rows = [(int(r[0]), str(r[1]), str(r[2])) for r in await cur.fetchall()]
        if not rows:
            return
        yield rows
        last = rows[-1][0]


async def rekey_sqlite(locked: Locked, keys: KeyFunction, fingerprint: str, *,
                       force: bool = False, progress: Progress | None = None,
                       batch: int = BATCH_ROWS) -> RekeyReport:
    """Re-key the file's rows when its fingerprint is not ``fingerprint`` (or ``force``)."""
    started = time.monotonic()
    async with locked() as db:
        await db.execute("BEGIN IMMEDIATE")
        before = await recorded_fingerprint(db)
        async with db.execute("SELECT count(*) FROM memory_records") as cur:
            total = int((await cur.fetchone() or (0,))[0])
        if not force and not needs_rekey(before, fingerprint, has_rows=total > 0):
            if before != fingerprint:  # an empty file: nothing to re-key
                await _record(db, fingerprint)
            await db.commit()
            return RekeyReport(before, fingerprint, 0, 0, time.monotonic() - started, False)
        await db.commit()
    done = changed = 0
    async for page in _pages(locked, batch):
        # Keyed outside the write lock; the transaction re-reads and compares.
        computed = {rowid: (title, text, _keys_of(title, text, keys))
                    for rowid, title, text in page}
        async with locked() as db:
            await db.execute("BEGIN IMMEDIATE")
            async with db.execute(_FRESH, (json.dumps(list(computed)),)) as cur:
                fresh = await cur.fetchall()
            updates: list[tuple[str, int]] = []
            vocabulary: set[tuple[str, str]] = set()
            for rowid, tenant, title, text, old in fresh:
                was_title, was_text, new = computed[rowid]
                if (was_title, was_text) != (title, text):  # rewritten meanwhile
                    new = _keys_of(title, text, keys)
                if new != old:
                    updates.append((new, rowid))
                    vocabulary.update(words(tenant, new))
            await db.executemany(_SET_KEYS, updates)
            await db.executemany(ADD_WORDS, sorted(vocabulary))
            await db.commit()
        done += len(page)
        changed += len(updates)
        if progress is not None:
            progress(done, max(total, done))  # rows added meanwhile are keyed too
    async with locked() as db:
        await db.execute("BEGIN IMMEDIATE")
        await _record(db, fingerprint)
        await db.commit()
    return RekeyReport(before, fingerprint, done, changed, time.monotonic() - started, True)
