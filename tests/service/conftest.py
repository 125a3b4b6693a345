"""A real gRPC server on 127.0.0.1:0 over SQLite or a fresh PostgreSQL database."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from majlis.culture import FixedClock
from service import App, DiwaniyaClient, Server, Settings, build_app

# A fixed, ordinary Sunday morning in Kuwait (no season, no national day).
DEFAULT_TIME = datetime(2026, 11, 1, 7, 30, tzinfo=UTC)


@dataclass
class Running:
    app: App
    server: Server
    client: DiwaniyaClient
    settings: Settings

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.server.port}"


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def settings_for(backend: str, tmp_path: Path, request: pytest.FixtureRequest
                 ) -> Callable[..., Settings]:
    dsn = request.getfixturevalue("pg_dsn") if backend == "postgres" else None

    def make(**overrides: Any) -> Settings:
        values: dict[str, Any] = {"data_dir": tmp_path / "data", "listen": "127.0.0.1:0",
                                  "drain_grace_s": 5.0}
        if dsn:
            values["database_url"] = dsn
        values.update(overrides)
        return Settings(**values)

    return make


@asynccontextmanager
async def running(settings: Settings, *, clock: Any = None, model: Any = None,
                  **client_options: Any) -> AsyncIterator[Running]:
    """The app built on ``settings`` (at DEFAULT_TIME unless ``clock``), its server
    started on ``settings.listen`` and a client of it; drained and closed after.
    Also used by the tests that build their own settings (tests/chaos, rich errors)."""
    app = await build_app(settings, clock=clock or FixedClock(DEFAULT_TIME), model=model)
    server = app.server()
    await server.start()
    client = DiwaniyaClient(f"127.0.0.1:{server.port}", **client_options)
    try:
        yield Running(app, server, client, settings)
    finally:
        await client.close()
        await server.drain(0, delay=0)
        await app.close()


@pytest.fixture
def run_service(settings_for: Callable[..., Settings]
                ) -> Callable[..., Any]:
    """``async with run_service(**settings) as svc`` — a started server and a client."""

    def start(*, clock: Any = None, **overrides: Any) -> Any:
        return running(settings_for(**overrides), clock=clock)

    return start


async def collect(call: Any) -> list[Any]:
    return [event async for event in call]


def kinds(events: list[Any]) -> list[str]:
    return [e.WhichOneof("event") for e in events]


def take_over(svc: Running, backend: str, thread_id: str) -> None:
    """Do to the running turn's fencing token what a successor's lock acquisition does
    (docs/fencing.md): a turn that then commits is refused."""
    if backend == "postgres":
        with psycopg.connect(svc.settings.database_dsn(), autocommit=True) as conn:
            conn.execute("UPDATE diwaniya_threads SET lease_epoch = lease_epoch + 1"
                         " WHERE thread_id = %s", (thread_id,))
    else:
        with sqlite3.connect(svc.settings.data_dir / "threads.sqlite3") as conn:
            conn.execute("DELETE FROM diwaniya_thread_leases WHERE thread_id = ?", (thread_id,))
