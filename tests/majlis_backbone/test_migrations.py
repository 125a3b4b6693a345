"""Migrations are idempotent and safe when several replicas start at once."""

from __future__ import annotations

import asyncio
import sqlite3

import psycopg
import pytest

from majlis.persistence import migrate_postgres, open_postgres, open_sqlite
from tests.service._cli import run_cli


@pytest.fixture
def empty_db(own_database: str) -> str:
    """A brand-new database (the session one is already migrated)."""
    return own_database


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


def test_migrate_command(empty_db: str, tmp_path, monkeypatch, capsys) -> None:
    env = {"DATABASE_URL": empty_db, "DIWANIYA_DATA_DIR": str(tmp_path)}
    done = run_cli(monkeypatch, capsys, env, "migrate")
    assert done.returncode == 0, done.stderr
    assert "migrated postgres" in done.stdout
    with psycopg.connect(empty_db) as conn:
        tables = {r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()}
    assert "diwaniya_threads" in tables and "checkpoints" in tables
    assert any("memor" in t for t in tables), tables


_OLD_THREADS = """
CREATE TABLE diwaniya_threads (
    thread_id text PRIMARY KEY, tenant text NOT NULL, user_id text NOT NULL,
    title text NOT NULL DEFAULT '', created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL, turn_count integer NOT NULL DEFAULT 0)
"""


async def test_upgrade_adds_fencing_columns_and_request_table_concurrently(empty_db: str) -> None:
    """A registry from before fencing keeps its rows; replicas upgrading at once do it once."""
    with psycopg.connect(empty_db, autocommit=True) as conn:
        conn.execute(_OLD_THREADS)
        conn.execute("INSERT INTO diwaniya_threads VALUES ('t-old', 'default', 'u1', 'هلا',"
                     " now(), now(), 3)")
    await asyncio.gather(*(migrate_postgres(empty_db, prepare_threshold=None) for _ in range(3)))
    await migrate_postgres(empty_db, prepare_threshold=None)  # and again: idempotent
    with psycopg.connect(empty_db) as conn:
        row = conn.execute("SELECT title, turn_count, lease_epoch, head_checkpoint_id"
                           " FROM diwaniya_threads").fetchone()
        tables = {r[0] for r in conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall()}
    assert row == ("هلا", 3, 0, "")
    assert "diwaniya_requests" in tables


async def test_sqlite_upgrade_adds_the_head_column_once(tmp_path) -> None:
    path = tmp_path / "threads.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute(_OLD_THREADS.replace("timestamptz", "TEXT"))
        conn.execute("INSERT INTO diwaniya_threads VALUES ('t-old', 'default', 'u1', 'هلا',"
                     " '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00', 3)")
    for _ in range(2):
        db = await open_sqlite(tmp_path)
        await db.close()
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT title, turn_count, head_checkpoint_id FROM diwaniya_threads"
                           ).fetchone()
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert row == ("هلا", 3, "")
    assert "diwaniya_requests" in tables
