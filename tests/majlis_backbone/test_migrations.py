"""Migrations are idempotent and safe when several replicas start at once."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from majlis.persistence import migrate_postgres, open_postgres
from tests.conftest import ADMIN_DSN


@pytest.fixture
def empty_db(pg_dsn: str) -> Iterator[str]:
    """A brand-new database (the session one is already migrated)."""
    name = f"diwaniya_mig_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield f"{ADMIN_DSN.rsplit('/', 1)[0]}/{name}"
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def test_concurrent_replicas_migrate_once(empty_db: str) -> None:
    await asyncio.gather(*(migrate_postgres(empty_db, prepare_threshold=None) for _ in range(4)))
    dbs = await asyncio.gather(*(open_postgres(empty_db, min_size=1, max_size=2, lock_pool_size=1)
                                 for _ in range(3)))
    for db in dbs:
        await db.close()
    with psycopg.connect(empty_db) as conn:
        versions = conn.execute("SELECT v, count(*) FROM checkpoint_migrations GROUP BY v"
                                ).fetchall()
        tables = {r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()}
    assert versions and all(count == 1 for _, count in versions)
    assert {"checkpoints", "checkpoint_writes", "diwaniya_threads"} <= tables


def test_migrate_command(empty_db: str, tmp_path) -> None:
    env = {**os.environ, "DATABASE_URL": empty_db, "DIWANIYA_DATA_DIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "service", "migrate"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "migrated postgres" in done.stdout
    with psycopg.connect(empty_db) as conn:
        tables = {r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()}
    assert "diwaniya_threads" in tables and "checkpoints" in tables
    assert any("memor" in t for t in tables), tables
