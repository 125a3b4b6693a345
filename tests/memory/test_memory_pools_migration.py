"""Length-pool statistics (memory.ranking) on stores created before pools existed.

Both stores must backfill the per-pool counts from the rows already there,
once, even when several replicas run setup() together, and keep them exact
through later writes and deletes.
"""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from pathlib import Path

import asyncpg

from memory import Kind, NewRecord, PostgresMemoryStore, SqliteMemoryStore
from memory.ranking import SHORT_TERMS
from memory.sqlite_store import _SCHEMA as SQLITE_SCHEMA_BEFORE_POOLS
from memory.terms import whitespace_keys

RUN = uuid.uuid4().hex[:8]
LONG_TEXT = " ".join(f"سياسة{i}" for i in range(SHORT_TERMS + 10))


def _rows(tenant: str) -> list[NewRecord]:
    return [
        NewRecord(tenant=tenant, kind=Kind.DOCUMENT, id="faq", text="ساعات العمل في رمضان"),
        NewRecord(tenant=tenant, kind=Kind.DOCUMENT, id="policy", text=LONG_TEXT),
        NewRecord(tenant=tenant, kind=Kind.FACT, user_id="u1", id="name", text="اسمي سارة"),
    ]


async def test_sqlite_file_from_before_pools_is_backfilled_once(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    tenant = f"t-{RUN}"
    # A file as the previous release left it: rows and FTS index, no pools.
    old = SqliteMemoryStore(path, keys=whitespace_keys)
    db = sqlite3.connect(path)
    db.executescript(SQLITE_SCHEMA_BEFORE_POOLS)
    db.close()
    await old._conn()  # open without setup(): writes go through the old schema
    await old.put(_rows(tenant))
    await old.close()
    assert "memory_pools" not in _tables(path)

    replicas = [SqliteMemoryStore(path, keys=whitespace_keys) for _ in range(3)]
    await asyncio.gather(*(r.setup() for r in replicas))
    store = replicas[0]
    try:
        assert _pools(path) == {(tenant, 0): (2, 6), (tenant, 1): (1, SHORT_TERMS + 10)}
        await store.put([NewRecord(tenant=tenant, kind=Kind.DOCUMENT, id="faq",
                                   text="ساعات العمل")])  # update: 4 → 2 keys
        await store.erase_user(tenant, "u1")
        assert _pools(path) == {(tenant, 0): (1, 2), (tenant, 1): (1, SHORT_TERMS + 10)}
        hits = await store.search(tenant, "ساعات العمل")
        assert [h.record.id for h in hits] == ["faq"]
    finally:
        for r in replicas:
            await r.close()


def _tables(path: Path) -> set[str]:
    db = sqlite3.connect(path)
    try:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    finally:
        db.close()


def _pools(path: Path) -> dict[tuple[str, int], tuple[int, int]]:
    db = sqlite3.connect(path)
    try:
        rows = db.execute("SELECT tenant, pool, n_docs, total_len FROM memory_pools")
        return {(t, p): (n, total) for t, p, n, total in rows if n}
    finally:
        db.close()


# memory_stats as the release before pools created it (memory_records and
# memory_terms are unchanged).
_OLD_STATS = """
DROP TABLE memory_stats;
CREATE TABLE memory_stats (tenant text PRIMARY KEY, n_docs bigint NOT NULL,
                           total_len bigint NOT NULL);
"""


async def test_postgres_stats_from_before_pools_are_backfilled(own_database: str) -> None:
    tenant = f"t-{RUN}"
    conn = await asyncpg.connect(own_database)
    first = await PostgresMemoryStore.connect(own_database, keys=whitespace_keys, max_size=1)
    await first.setup()
    await conn.execute(_OLD_STATS)
    # Old-release writes: the statistics delta of the old code, by hand.
    await conn.execute("INSERT INTO memory_stats VALUES ($1, 0, 0)", tenant)
    await first.close()
    stores = [await PostgresMemoryStore.connect(own_database, keys=whitespace_keys, max_size=2)
              for _ in range(3)]
    try:
        await stores[0].setup()
        await stores[0].put(_rows(tenant))  # fills short columns from here on
        await conn.execute(
            "UPDATE memory_stats SET short_docs = 0, short_len = 0")  # as if written before
        await conn.execute("ALTER TABLE memory_stats DROP COLUMN short_docs,"
                           " DROP COLUMN short_len")
        await asyncio.gather(*(s.setup() for s in stores))  # replicas at once
        row = await conn.fetchrow(
            "SELECT n_docs, total_len, short_docs, short_len FROM memory_stats"
            " WHERE tenant = $1", tenant)
        assert tuple(row) == (3, 6 + SHORT_TERMS + 10, 2, 6)
        await stores[1].erase_user(tenant, "u1")
        row = await conn.fetchrow(
            "SELECT short_docs, short_len FROM memory_stats WHERE tenant = $1", tenant)
        assert tuple(row) == (1, 4)
        hits = await stores[2].search(tenant, "رمضان")
        assert [h.record.id for h in hits] == ["faq"]
    finally:
        for s in stores:
            await s.close()
        await conn.close()
