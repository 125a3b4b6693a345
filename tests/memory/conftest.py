"""Store fixtures, parametrized over both backends: the conformance suite in
``test_memory_conformance.py`` runs unchanged against SQLite and PostgreSQL, and
the bridge tests on a store with the dialect bridge (``bridged``), or with and
without it (``bridged_pair``).

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
from memory.expansion import Expander
from nlp import KeyFunction, key_function


@pytest.fixture(scope="session")
def keys() -> KeyFunction:
    return key_function("builtin")


async def _opened(request: pytest.FixtureRequest, path: Path, keys: KeyFunction, *,
                  max_size: int, expand: Expander | None = None) -> MemoryStore:
    """A set-up store of the fixture's backend (``request.param``): SQLite at ``path``,
    or a pool of ``max_size`` on the session's PostgreSQL database."""
    made: MemoryStore
    if request.param == "sqlite":
        made = SqliteMemoryStore(path, keys=keys, expand=expand)
    else:
        made = await PostgresMemoryStore.connect(
            request.getfixturevalue("pg_dsn"), keys=keys, max_size=max_size, expand=expand)
    await made.setup()
    return made


@pytest.fixture(params=["sqlite", "postgres"])
async def store(
    request: pytest.FixtureRequest, tmp_path: Path, keys: KeyFunction
) -> AsyncIterator[MemoryStore]:
    made = await _opened(request, tmp_path / "memory.sqlite3", keys, max_size=4)
    yield made
    await made.close()


@pytest.fixture(params=["sqlite", "postgres"])
async def bridged(
    request: pytest.FixtureRequest, tmp_path: Path, keys: KeyFunction
) -> AsyncIterator[MemoryStore]:
    """A store with the dialect bridge (query-side expansion, nlp.dialect_to_msa)."""
    made = await _opened(request, tmp_path / "m.sqlite3", keys, max_size=2,
                         expand=nlp.dialect_to_msa)
    yield made
    await made.close()


@pytest.fixture(params=["sqlite", "postgres"])
async def bridged_pair(
    request: pytest.FixtureRequest, tmp_path: Path, keys: KeyFunction
) -> AsyncIterator[tuple[MemoryStore, MemoryStore]]:
    """The same backend twice: with the dialect bridge (and so the Arabizi
    stage), and without — what a dialect question finds only through it."""
    on = await _opened(request, tmp_path / "mTrue.sqlite3", keys, max_size=2,
                       expand=nlp.dialect_to_msa)
    off = await _opened(request, tmp_path / "mFalse.sqlite3", keys, max_size=2)
    yield on, off
    await on.close()
    await off.close()


@pytest.fixture
def tenants() -> Callable[[str], str]:
    run = uuid.uuid4().hex[:8]
    return lambda name: f"{name}-{run}"
