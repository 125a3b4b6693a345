"""A throwaway PostgreSQL database for a bench script: created, handed over, dropped.

Nine scripts did this with their own copy of the same lines; one copy here also
says plainly what to do when PostgreSQL is not there, where each copy used to
end in psycopg's bare connection traceback.  A bench script imports it as
``bench._pg`` once its preamble has put the repository (not bench/, whose nlp.py
would shadow the package) on sys.path::

    with fresh_database(admin_dsn, "diwaniya_bench") as db:        # sync
        run(db.dsn)
    async with fresh_database_async(admin_dsn, "diwaniya_bench") as db:
        await run(db.dsn)

The database is dropped ``WITH (FORCE)``: a pool the script left open (or a
crashed server's backends) must not keep the scratch database alive.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

import psycopg

# What the test suite and most scripts default to (tests/conftest.py's ADMIN_DSN).
DEFAULT_ADMIN_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
# The command .ci/run uses when PostgreSQL is down, for the error message.
START_HINT = ('pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start '
              "(or point the script's admin DSN at a running server)")


@dataclass(frozen=True)
class Database:
    """The scratch database: its name (for pg_stat_database and the like) and DSN."""

    name: str
    dsn: str
    created: bool  # False: a kept database that was already there


def dsn_for(admin_dsn: str, name: str) -> str:
    """``admin_dsn`` with its database replaced by ``name``."""
    return f"{admin_dsn.rsplit('/', 1)[0]}/{name}"


def _admin(admin_dsn: str) -> psycopg.Connection:
    try:
        return psycopg.connect(admin_dsn, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as exc:
        raise SystemExit(f"PostgreSQL is unreachable at {admin_dsn}: {exc}".rstrip()
                         + f"\nstart it with: {START_HINT}") from exc


def _create(admin_dsn: str, name: str, *, must_exist: bool) -> bool:
    """Create ``name`` unless it is there; True when this call created it."""
    with _admin(admin_dsn) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                              (name,)).fetchone() is not None
        if must_exist and not exists:
            raise SystemExit(f"no database {name} at {admin_dsn}")
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
    return not exists


def _drop(admin_dsn: str, name: str) -> None:
    with _admin(admin_dsn) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _name(prefix: str, kept: str | None) -> str:
    return kept or f"{prefix}_{uuid.uuid4().hex[:10]}"


@contextmanager
def fresh_database(admin_dsn: str = DEFAULT_ADMIN_DSN, prefix: str = "diwaniya_bench", *,
                   kept: str | None = None, must_exist: bool = False) -> Iterator[Database]:
    """A new database ``<prefix>_<random>``, dropped (forcibly) on the way out.

    With ``kept`` the database of that name is used instead, created only if it
    is not there (``must_exist``: refused then), and left in place afterwards —
    for a bench that loads once and measures over several runs.
    """
    name = _name(prefix, kept)
    created = _create(admin_dsn, name, must_exist=must_exist)
    try:
        yield Database(name, dsn_for(admin_dsn, name), created)
    finally:
        if kept is None:
            _drop(admin_dsn, name)


@asynccontextmanager
async def fresh_database_async(admin_dsn: str = DEFAULT_ADMIN_DSN,
                               prefix: str = "diwaniya_bench", *, kept: str | None = None,
                               must_exist: bool = False) -> AsyncIterator[Database]:
    """:func:`fresh_database` for a script on an event loop: the admin statements
    run in a thread, so a loop with work of its own (a server) is not held up."""
    name = _name(prefix, kept)
    created = await asyncio.to_thread(_create, admin_dsn, name, must_exist=must_exist)
    try:
        yield Database(name, dsn_for(admin_dsn, name), created)
    finally:
        if kept is None:
            await asyncio.to_thread(_drop, admin_dsn, name)
