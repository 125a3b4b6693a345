"""One connection budget: a replica never holds more than DIWANIYA_PG_MAX_CONNECTIONS.

A real server on a fresh PostgreSQL database with a budget of 6 (3 lock, 2
query, 1 memory connection), a scripted model slow enough for turns to pile
up, 60 concurrent turns and 40 concurrent readers. A sampler counts the
replica's sessions in ``pg_stat_activity`` by its ``application_name`` the
whole time, start-up included.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest
from pydantic import SecretStr

from diwaniya.errors import ConfigurationError
from majlis.culture import FixedClock
from majlis.persistence import check_session_pooling
from majlis.pg_budget import split_budget
from service import DiwaniyaClient, Settings, build_app
from service.app import open_persistence, preflight
from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import DEFAULT_TIME, collect

BUDGET = 6
REPO = Path(__file__).resolve().parents[2]
ALLOWED = {"OK", "ABORTED", "RESOURCE_EXHAUSTED"}


@pytest.fixture
def model() -> Iterator[ScriptedOpenAIServer]:
    server = ScriptedOpenAIServer()
    yield server
    server.close()


class Sampler:
    """Counts the sessions named ``name`` in pg_stat_activity until stopped."""

    def __init__(self, dsn: str, name: str) -> None:
        self._dsn, self._name = dsn, name
        self.peak = 0
        self.samples = 0
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Sampler:
        conn = await psycopg.AsyncConnection.connect(
            self._dsn, autocommit=True, application_name="budget-sampler")
        self._task = asyncio.create_task(self._run(conn))
        return self

    async def _run(self, conn: psycopg.AsyncConnection[Any]) -> None:
        async with conn:
            while not self._stop.is_set():
                cur = await conn.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                    (self._name,))
                row = await cur.fetchone()
                self.peak = max(self.peak, row[0] if row else 0)
                self.samples += 1
                await asyncio.sleep(0.005)

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._task is not None
        await self._task


async def _outcome(call: Any) -> str:
    try:
        await collect(call)
    except grpc.aio.AioRpcError as err:
        return err.code().name
    return "OK"


async def test_a_replica_never_exceeds_its_connection_budget_under_load(
    pg_dsn: str, tmp_path: Path, model: ScriptedOpenAIServer
) -> None:
    name = f"diwaniya-budget-{uuid.uuid4().hex[:8]}"
    model.push(*[ScriptedReply.text("أبشر، طلبك قيد التنفيذ الحين", event_delay_s=0.05)
                 for _ in range(80)])
    settings = Settings(
        database_url=SecretStr(pg_dsn), data_dir=tmp_path / "data", listen="127.0.0.1:0",
        model_base_url=model.base_url, drain_grace_s=1.0, pool_min_size=1,
        pg_max_connections=BUDGET, pg_application_name=name, pg_checkout_timeout_s=5.0)
    tag = uuid.uuid4().hex[:6]
    async with Sampler(pg_dsn, name) as sampler:
        app = await build_app(settings, clock=FixedClock(DEFAULT_TIME))
        server = app.server()
        await server.start()
        client = DiwaniyaClient(f"127.0.0.1:{server.port}", timeout_s=90)
        try:
            seeded = await collect(client.send("هلا والله", user_id=f"b-{tag}-r"))
            thread_id = seeded[0].thread_id
            stop_reading = asyncio.Event()

            async def reader() -> int:
                reads = 0
                while not stop_reading.is_set():
                    await client.get_thread(thread_id, user_id=f"b-{tag}-r")
                    await client.list_threads(user_id=f"b-{tag}-r")
                    reads += 1
                return reads

            readers = [asyncio.create_task(reader()) for _ in range(40)]
            turns = await asyncio.gather(*(_outcome(client.send(
                f"السلام عليكم، سؤال {i}", user_id=f"b-{tag}-{i}")) for i in range(60)))
            stop_reading.set()
            reads = await asyncio.gather(*readers)
        finally:
            await client.close()
            await server.drain(0, delay=0)
            await app.close()
    codes = Counter(turns)
    assert set(codes) <= ALLOWED, codes
    assert codes["OK"] > 0 and sum(reads) > 0
    assert sampler.samples > 10
    assert sampler.peak <= BUDGET, f"{sampler.peak} sessions named {name} > budget {BUDGET}"
    # The load really pressed on the pools: more than the three lock connections.
    assert sampler.peak > 3, sampler.peak


def test_the_split_never_exceeds_the_budget() -> None:
    for total in range(3, 200):
        for workers in (1, 2, 3, 4):
            if total // workers < 3:
                with pytest.raises(ConfigurationError, match="at least 3"):
                    split_budget(total, workers=workers)
                continue
            b = split_budget(total, workers=workers)
            assert min(b.queries, b.locks, b.memory) >= 1
            assert b.total == total // workers
            assert b.total * workers <= total
    assert split_budget(30, locks=20) == split_budget(30, locks=20)
    fixed = split_budget(30, locks=20)
    assert fixed.locks == 20 and fixed.total == 30
    with pytest.raises(ConfigurationError, match="exceeds"):
        split_budget(10, queries=4, locks=4, memory=4)


def test_preflight_refuses_a_budget_too_small_for_the_workers(pg_dsn: str, tmp_path: Path
                                                              ) -> None:
    settings = Settings(database_url=SecretStr(pg_dsn), data_dir=tmp_path,
                        pg_max_connections=8)
    preflight(settings, workers=2)
    with pytest.raises(ConfigurationError, match="raise it to 9 or run fewer workers"):
        preflight(settings, workers=3)


def test_preflight_refuses_a_min_pool_above_the_query_share(pg_dsn: str, tmp_path: Path
                                                            ) -> None:
    # 30 connections: locks 18, memory 4, queries 8; two workers halve it.
    settings = Settings(database_url=SecretStr(pg_dsn), data_dir=tmp_path,
                        pg_max_connections=30, pool_min_size=8)
    preflight(settings, workers=1)
    with pytest.raises(ConfigurationError, match=r"DIWANIYA_POOL_MIN_SIZE \(8\) is larger"):
        preflight(settings, workers=2)


def test_preflight_refuses_a_lock_minimum_above_the_lock_share(pg_dsn: str, tmp_path: Path
                                                               ) -> None:
    # 30 connections: locks 18 for one process, 9 each for two.
    settings = Settings(database_url=SecretStr(pg_dsn), data_dir=tmp_path,
                        pg_max_connections=30, pg_lock_pool_min=12)
    preflight(settings, workers=1)
    with pytest.raises(ConfigurationError, match=r"DIWANIYA_PG_LOCK_POOL_MIN \(12\) is larger"):
        preflight(settings, workers=2)


@pytest.mark.parametrize(("lock_min", "locks_open"), [(None, 6), (2, 2)])
async def test_the_lock_pool_is_open_before_the_first_turn(
        pg_dsn: str, tmp_path: Path, lock_min: int | None, locks_open: int) -> None:
    """A budget of 10: locks 6, memory 1, queries 3 (2 at start). Unset, the
    whole lock pool is open when the store is (a burst of turns waits for no
    connect); DIWANIYA_PG_LOCK_POOL_MIN lowers it. (The suite's servers run
    with 1, tests/conftest.py: an explicit None here is the product default.)"""
    settings = Settings(database_url=SecretStr(pg_dsn), data_dir=tmp_path,
                        pg_max_connections=10, pg_lock_pool_min=lock_min)
    db = await open_persistence(settings)
    try:
        # The pool's own count: pg_stat_activity may still list the closed
        # connections of the start-up checks for a moment.
        locks = db.threads._lock_pool  # type: ignore[attr-defined]
        assert (locks.get_stats()["pool_size"], locks.max_size) == (locks_open, 6)
    finally:
        await db.close()


async def test_direct_postgres_passes_the_session_pooling_check(pg_dsn: str) -> None:
    await check_session_pooling(pg_dsn)


async def test_workers_share_the_replica_budget(pg_dsn: str, tmp_path: Path) -> None:
    """``serve --workers 2`` with a budget of 6: each child gets 3, the pod never more than 6."""
    name = f"diwaniya-workers-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DIWANIYA_") and k != "DATABASE_URL"}
    env.update({"DATABASE_URL": pg_dsn, "DIWANIYA_DATA_DIR": str(tmp_path / "data"),
                "DIWANIYA_PG_MAX_CONNECTIONS": "6", "DIWANIYA_PG_APPLICATION_NAME": name,
                "DIWANIYA_DRAIN_DELAY_S": "0", "DIWANIYA_DRAIN_GRACE_S": "5",
                "DIWANIYA_METRICS_LISTEN": "127.0.0.1:0",  # 9464 would collide (xdist)
                "DIWANIYA_LOG_LEVEL": "WARNING", "PYTHONPATH": str(REPO)})
    tag = uuid.uuid4().hex[:6]
    async with Sampler(pg_dsn, name) as sampler:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "service", "serve", "--listen", "127.0.0.1:0",
            "--workers", "2", env=env, cwd=REPO, stdout=asyncio.subprocess.PIPE)
        try:
            assert proc.stdout is not None
            line = (await asyncio.wait_for(proc.stdout.readline(), 120)).decode()
            assert "listening on" in line, line
            target = line.strip().rsplit(" ", 1)[-1]
            # Clients of their own connection, so both children get work.
            clients = [DiwaniyaClient(target, own_connection=True, timeout_s=90)
                       for _ in range(8)]
            try:
                turns = await asyncio.gather(*(_outcome(clients[i % 8].send(
                    f"السلام عليكم {i}", user_id=f"w-{tag}-{i}")) for i in range(40)))
            finally:
                for c in clients:
                    await c.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.wait(), 60)
    assert set(Counter(turns)) <= ALLOWED and "OK" in turns
    assert sampler.peak <= 6, sampler.peak
    assert sampler.peak > 3, sampler.peak  # both children held connections


@pytest.mark.parametrize("module", ["majlis.pg_budget", "service.auth"])
def test_docstring_examples_hold(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module))
    assert result.attempted > 0 and result.failed == 0
