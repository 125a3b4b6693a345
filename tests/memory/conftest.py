"""One store fixture, parametrized over both backends: the conformance suite
in ``test_memory_conformance.py`` runs unchanged against SQLite and PostgreSQL.

Every test gets fresh tenant names (``tenants`` fixture), so tests sharing the
session's PostgreSQL database never see each other's rows.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

import nlp
from memory import MemoryStore, PostgresMemoryStore, SqliteMemoryStore
from nlp import KeyFunction, key_function


@pytest.fixture(scope="session")
def keys() -> KeyFunction:
    return key_function("builtin")


@pytest.fixture(params=["sqlite", "postgres"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, keys: KeyFunction
) -> AsyncIterator[MemoryStore]:
    made: MemoryStore
    if request.param == "sqlite":
        made = SqliteMemoryStore(tmp_path / "memory.sqlite3", keys=keys)
    else:
        dsn = request.getfixturevalue("pg_dsn")
        made = await PostgresMemoryStore.connect(dsn, keys=keys, max_size=4)
    await made.setup()
    yield made
    await made.close()


@pytest.fixture(params=["sqlite", "postgres"])
async def bridged_pair(
    request: pytest.FixtureRequest, tmp_path: Path, keys: KeyFunction
) -> AsyncIterator[tuple[MemoryStore, MemoryStore]]:
    """The same backend twice: with the dialect bridge (and so the Arabizi
    stage), and without — what a dialect question finds only through it."""

    async def open_one(bridge: bool) -> MemoryStore:
        expand = nlp.dialect_to_msa if bridge else None
        made: MemoryStore
        if request.param == "sqlite":
            made = SqliteMemoryStore(tmp_path / f"m{bridge}.sqlite3", keys=keys, expand=expand)
        else:
            made = await PostgresMemoryStore.connect(
                request.getfixturevalue("pg_dsn"), keys=keys, max_size=2, expand=expand)
        await made.setup()
        return made

    on = await open_one(True)
    off = await open_one(False)
    yield on, off
    await on.close()
    await off.close()


@pytest.fixture
def tenants() -> Callable[[str], str]:
    run = uuid.uuid4().hex[:8]
    return lambda name: f"{name}-{run}"
