"""Re-keying the PostgreSQL store (memory.rekey): many replicas, one database.

One replica at a time: the run holds a session advisory lock (REKEY_LOCK) on
its connection from reading the fingerprint to recording the new one, so a
second replica starting meanwhile waits, then finds the fingerprint recorded
and does nothing.  Writers are not stopped: each batch is one transaction
that takes its tenants' locks (as put and delete do), re-reads its rows, and
moves only the rows whose keys change through the statistics path
(memory.pg_deltas: subtract, update ``tsv``/``doc_len``, add), so
``memory_terms`` and ``memory_stats`` stay exact under concurrent writes.
Keys are computed before the transaction; a row rewritten since is keyed
again from its new text inside it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import asyncpg

from memory.pg_deltas import apply_delta, lock_tenants
from memory.pg_schema import (
    GET_FINGERPRINT,
    REKEY_CHANGED,
    REKEY_FRESH,
    REKEY_LOCK,
    REKEY_PAGE,
    REKEY_UPDATE,
    SET_FINGERPRINT,
)
from memory.rekey import BATCH_ROWS, Progress, RekeyReport, needs_rekey
from memory.terms import KeyFunction
from memory.text_keys import record_terms

__all__ = ["rekey_postgres"]

Acquire = Callable[[], AbstractAsyncContextManager[asyncpg.Connection]]
_BATCH_ROWS = "(r.tenant, r.id) IN (SELECT * FROM unnest($2::text[], $3::text[]))"


def _keyed(title: str, text: str, keys: KeyFunction) -> tuple[str, int]:
    terms = record_terms(title, text, keys)
    return " ".join(terms), len(terms)


async def _rekey_batch(conn: asyncpg.Connection, page: list[Any], keys: KeyFunction) -> int:
    """One page in one transaction; returns the rows whose keys were rewritten."""
    computed = {(r[0], r[1]): (r[2], r[3], _keyed(r[2], r[3], keys)) for r in page}
    tenants = [t for t, _ in computed]
    ids = [i for _, i in computed]
    async with conn.transaction():
        await lock_tenants(conn, tenants)
        new: dict[tuple[str, str], tuple[str, int]] = {}
        for tenant, rid, title, text in await conn.fetch(REKEY_FRESH, tenants, ids):
            was_title, was_text, keyed = computed[(tenant, rid)]
            # A row rewritten since it was read is keyed from what it holds now.
            new[(tenant, rid)] = keyed if (was_title, was_text) == (title, text) \
                else _keyed(title, text, keys)
        cols = ([t for t, _ in new], [i for _, i in new], [k for k, _ in new.values()],
                [n for _, n in new.values()])
        changed = await conn.fetch(REKEY_CHANGED, *cols)
        if not changed:
            return 0
        ct, ci = [str(r[0]) for r in changed], [str(r[1]) for r in changed]
        await apply_delta(conn, -1, _BATCH_ROWS, ct, ci)
        await conn.execute(REKEY_UPDATE, *cols)
        await apply_delta(conn, +1, _BATCH_ROWS, ct, ci)
    return len(changed)


async def rekey_postgres(acquire: Acquire, keys: KeyFunction, fingerprint: str, *,
                         force: bool = False, progress: Progress | None = None,
                         batch: int = BATCH_ROWS) -> RekeyReport:
    """Re-key the database's rows when its fingerprint is not ``fingerprint`` (or ``force``)."""
    started = time.monotonic()
    async with acquire() as conn:
        await conn.execute("SELECT pg_advisory_lock($1)", REKEY_LOCK)
        try:
            before, done, changed, ran = await _under_lock(conn, keys, fingerprint, force,
                                                           progress, batch)
        except BaseException:
            # The pool hands connections out again without a reset: one that
            # may still hold the session lock must not go back to it.
            conn.terminate()
            raise
        await conn.execute("SELECT pg_advisory_unlock($1)", REKEY_LOCK)
    return RekeyReport(before, fingerprint, done, changed, time.monotonic() - started, ran)


async def _under_lock(conn: asyncpg.Connection, keys: KeyFunction, fingerprint: str,
                      force: bool, progress: Progress | None,
                      batch: int) -> tuple[str | None, int, int, bool]:
    """(recorded fingerprint, rows read, rows rewritten, whether it ran)."""
    before = await conn.fetchval(GET_FINGERPRINT)
    has_rows = bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM memory_records)"))
    if not force and not needs_rekey(before, fingerprint, has_rows=has_rows):
        if before != fingerprint:  # an empty database: nothing to re-key
            await conn.execute(SET_FINGERPRINT, fingerprint)
        return before, 0, 0, False
    total = int(await conn.fetchval("SELECT count(*) FROM memory_records"))
    done = changed = 0
    last = ("", "")  # below every (tenant, id): a tenant is never empty
    while page := await conn.fetch(REKEY_PAGE, *last, batch):
        changed += await _rekey_batch(conn, page, keys)
        done += len(page)
        last = (page[-1][0], page[-1][1])
        if progress is not None:
            progress(done, max(total, done))  # rows added meanwhile are keyed too
    await conn.execute(SET_FINGERPRINT, fingerprint)
    return before, done, changed, True
