"""Picking a store the way the checkpointer is picked: DATABASE_URL or a file."""

from __future__ import annotations

from pathlib import Path

from memory.expansion import Expander
from memory.sqlite_store import SqliteMemoryStore
from memory.store import MemoryStore
from nlp.bridge import dialect_to_msa
from nlp.keys import KeyFunction

__all__ = ["open_store"]


async def open_store(
    database_url: str | None,
    *,
    sqlite_path: Path,
    keys: KeyFunction,
    expand: Expander | None = None,
    bridge: bool = True,
    pool_max: int = 10,
    connect_timeout_s: float = 60.0,
    command_timeout_s: float | None = None,
    acquire_timeout_s: float | None = None,
    application_name: str | None = None,
    typo: bool = True,
    fingerprint: str | None = None,
) -> MemoryStore:
    """A ready (migrated) store: PostgreSQL when ``database_url`` is set, else SQLite.

    ``keys`` indexes and queries; the composition root chooses it
    (``nlp.key_function``), so the server and ``diwaniya kb`` agree.  Queries
    are expanded by ``expand``, else (``bridge=True``) by the dialect → MSA
    bridge (``nlp.dialect_to_msa``); ``bridge=False`` searches the customer's
    words alone.  The caller reads configuration; this function
    only receives it (pool size, timeouts and ``application_name`` apply to
    PostgreSQL only; ``pool_max`` is the memory share of the replica's
    connection budget, majlis.pg_budget).
    ``typo=False`` switches the typo stage (memory.typo) off in either store.
    ``fingerprint`` names ``keys`` for re-keying (memory.rekey); by default
    ``nlp.keys_fingerprint(keys)``.
    """
    expander = expand or (dialect_to_msa if bridge else None)
    store: MemoryStore
    if database_url:
        # Imported here: the SQLite default never loads asyncpg.
        from memory.postgres_store import PostgresMemoryStore

        store = await PostgresMemoryStore.connect(
            _asyncpg_dsn(database_url), keys=keys, expand=expander, max_size=pool_max,
            connect_timeout_s=connect_timeout_s, command_timeout_s=command_timeout_s,
            acquire_timeout_s=acquire_timeout_s, application_name=application_name, typo=typo,
            fingerprint=fingerprint)
    else:
        store = SqliteMemoryStore(sqlite_path, keys=keys, expand=expander, typo=typo,
                                  fingerprint=fingerprint)
    await store.setup()
    return store


def _asyncpg_dsn(url: str) -> str:
    """asyncpg speaks ``postgresql://``; SQLAlchemy-style driver suffixes are dropped.

    >>> _asyncpg_dsn("postgresql+psycopg://u@h/db")
    'postgresql://u@h/db'
    """
    scheme, sep, rest = url.partition("://")
    return scheme.split("+", 1)[0] + sep + rest
