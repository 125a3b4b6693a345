"""open_store picks the backend like the checkpointer; PostgreSQL setup races safely."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import asyncpg
import pytest

from diwaniya.errors import StoreUnavailable
from memory import Kind, NewRecord, PostgresMemoryStore, SqliteMemoryStore, open_store
from memory.terms import whitespace_keys


async def test_no_database_url_means_an_sqlite_file_where_asked(tmp_path: Path) -> None:
    path = tmp_path / "data" / "memory.sqlite3"
    store = await open_store(None, sqlite_path=path, keys=whitespace_keys)
    try:
        assert isinstance(store, SqliteMemoryStore)
        await store.put([NewRecord(tenant="t", kind=Kind.DOCUMENT, text="ساعات العمل")])
        assert path.exists()
    finally:
        await store.close()


async def test_database_url_means_postgres_and_replicas_can_migrate_at_once(
    own_database: str, tmp_path: Path
) -> None:
    # A brand-new database and four replicas running setup() concurrently:
    # without the advisory lock, CREATE ... IF NOT EXISTS races and fails.
    dsn = own_database
    stores: list[PostgresMemoryStore] = []
    try:
        stores = list(await asyncio.gather(*(
            PostgresMemoryStore.connect(dsn, keys=whitespace_keys, max_size=1) for _ in range(4)
        )))
        await asyncio.gather(*(s.setup() for s in stores))
        via_factory = await open_store(
            dsn.replace("postgresql://", "postgresql+psycopg://"), sqlite_path=tmp_path / "x",
            keys=whitespace_keys,
        )
        assert isinstance(via_factory, PostgresMemoryStore)
        await via_factory.put([NewRecord(tenant="t", kind=Kind.DOCUMENT, text="ساعات العمل")])
        assert await stores[0].search("t", "العمل")
        stores.append(via_factory)
    finally:
        for s in stores:
            await s.close()


async def test_a_database_out_of_connection_slots_is_unavailable_not_internal(
    pg_dsn: str
) -> None:
    # PostgreSQL refuses a connection past a role's CONNECTION LIMIT with SQLSTATE
    # 53300, as it does past max_connections: the pool's second connection fails
    # with asyncpg's TooManyConnectionsError, which must reach callers as the
    # retryable StoreUnavailable (gRPC UNAVAILABLE), not an unexpected error.
    role = f"diwaniya_one_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(pg_dsn)
    await admin.execute(f'CREATE ROLE "{role}" LOGIN CONNECTION LIMIT 1')
    await admin.execute(f'GRANT ALL ON SCHEMA public TO "{role}"')
    dsn = pg_dsn.replace("postgres@", f"{role}@", 1)
    assert dsn != pg_dsn
    store = await PostgresMemoryStore.connect(dsn, keys=whitespace_keys, min_size=1,
                                              max_size=2)
    try:
        async with store._conn():  # the role's one connection, held
            with pytest.raises(StoreUnavailable, match="retry"):
                await store.search("t", "ساعات العمل")
    finally:
        await store.close()
        await admin.execute(f'DROP OWNED BY "{role}"')
        await admin.execute(f'DROP ROLE "{role}"')
        await admin.close()
