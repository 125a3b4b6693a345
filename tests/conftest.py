"""Shared fixtures: a fresh PostgreSQL database per test session and ../shared/data.

Outside CI, tests that need PostgreSQL or ../shared/data skip when those are
missing. Under CI (``CI=true``) a missing one is a failure, never a skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
# Servers under test (in-process and `serve` subprocesses, which inherit this)
# put their Prometheus endpoint on a free port: the default 127.0.0.1:9464 would
# collide between concurrent servers and test runs.
os.environ.setdefault("DIWANIYA_METRICS_LISTEN", "127.0.0.1:0")
ADMIN_DSN = os.environ.get("DIWANIYA_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres")
_DEFAULT_SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
SHARED_DATA = Path(os.environ.get("DIWANIYA_SHARED_DATA", _DEFAULT_SHARED))


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: required, not skipped)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """DSN of a database created for this test session and dropped afterwards."""
    name = f"diwaniya_test_{uuid.uuid4().hex[:10]}"
    try:
        with psycopg.connect(ADMIN_DSN, autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        _unavailable(f"PostgreSQL is not reachable at {ADMIN_DSN}: {exc}")
    base = ADMIN_DSN.rsplit("/", 1)[0]
    yield f"{base}/{name}"
    with psycopg.connect(ADMIN_DSN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only ../shared/data folder."""
    if not (SHARED_DATA / "SOURCES.md").exists():
        _unavailable(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
