"""Health readiness reflects the database (PostgreSQL: it can go away under a running server)."""

from __future__ import annotations

import asyncio
import time

import psycopg
import pytest

from service import DiwaniyaClient
from tests.conftest import ADMIN_DSN


@pytest.fixture
def backend() -> str:
    return "postgres"


async def test_readiness_follows_the_database(run_service, pg_dsn: str) -> None:
    name = pg_dsn.rsplit("/", 1)[1]
    async with run_service(readiness_interval_s=0.2) as svc:
        assert await svc.client.health() == "SERVING"
        with psycopg.connect(ADMIN_DSN, autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE datname = %s AND pid <> pg_backend_pid()", (name,))
            try:
                down = await _wait_for(svc.client, "NOT_SERVING")
                # Liveness is the process only: a database outage must not
                # make Kubernetes restart the replica.
                live = await svc.client.health()
            finally:
                admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        up = await _wait_for(svc.client, "SERVING")
    assert down and up
    assert live == "SERVING"


async def _wait_for(client: DiwaniyaClient, status: str, within_s: float = 15.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if await client.health("diwaniya.v1.Conversations") == status:
            return True
        await asyncio.sleep(0.1)
    return False
