"""``diwaniya serve`` started while its PostgreSQL is down: live, not ready, and back by itself.

Before, serve blocked ~10 s in the pool's open with no port bound and exited 2
("cannot open PostgreSQL: pool initialization incomplete") — in Kubernetes a
crash loop with growing back-off, not "live but not ready". Now the port is
bound first: health ``""`` SERVING, readiness NOT_SERVING, RPCs UNAVAILABLE
with RetryInfo, and the open is retried until the database answers.

The database is a PostgreSQL this test creates itself (initdb in a temporary
folder on a free port), stopped before serve starts; the shared one is never
touched. Real processes, loopback only; every wait has a bound.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest

from service import DiwaniyaClient
from service.workers import WAITING_PREFIX
from tests.chaos._poll import wait_until
from tests.chaos._rpc import retry_delay_s, rpc_error
from tests.chaos.conftest import PrivatePostgres, ServeProcess, free_port

READINESS = "diwaniya.v1.Conversations"
CLIENT_DEADLINE_S = 10.0  # a hang shows as DEADLINE_EXCEEDED, not UNAVAILABLE
OPEN_WITHIN_S = 30.0  # a bound on the wait, not a speed target (bench/ measures speed)
EXIT_WITHIN_S = 20.0


def _env(tmp_path: Path, dsn: str) -> dict[str, str]:
    # The offline responder: a turn needs no model, only the database.
    return {"DATABASE_URL": dsn, "DIWANIYA_DATA_DIR": str(tmp_path / "data"),
            "DIWANIYA_DRAIN_DELAY_S": "0",
            "DIWANIYA_DRAIN_GRACE_S": "2", "DIWANIYA_READINESS_INTERVAL_S": "0.5",
            "DIWANIYA_PG_CONNECT_TIMEOUT_S": "2", "DIWANIYA_PG_MAX_CONNECTIONS": "12",
            "DIWANIYA_MIGRATE_ON_START": "true"}


async def _collect(events: Any) -> list[Any]:
    return [event async for event in events]


def _sigterm(proc: ServeProcess) -> int:
    assert proc.proc is not None
    os.killpg(proc.proc.pid, signal.SIGTERM)
    try:
        return proc.proc.wait(timeout=EXIT_WITHIN_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"serve did not exit within {EXIT_WITHIN_S:.0f}s of SIGTERM") from None


async def _live_not_ready_unavailable(client: DiwaniyaClient) -> None:
    assert await client.health() == "SERVING"
    assert await client.health(READINESS) == "NOT_SERVING"
    errors = [await rpc_error(_collect(client.send("السلام عليكم", user_id="u1"))),
              await rpc_error(client.get_thread("t-404", user_id="u1")),
              await rpc_error(client.list_threads(user_id="u1"))]
    for err in errors:
        # Not UNKNOWN/INTERNAL, not DEADLINE_EXCEEDED (a hang): UNAVAILABLE, retry.
        assert err.code() == grpc.StatusCode.UNAVAILABLE, (err.code(), err.details())
        assert "retry" in (err.details() or "")
        assert retry_delay_s(err) == pytest.approx(1.0)


@pytest.mark.parametrize("workers", [1, 2], ids=["one_process", "workers_2"])
async def test_serve_with_postgres_down_is_live_not_ready_and_opens_when_it_comes_up(
    private_pg: PrivatePostgres, tmp_path: Path, serve_processes: list[ServeProcess],
    workers: int,
) -> None:
    await asyncio.to_thread(private_pg.stop)  # nothing listens on its port now
    proc = ServeProcess(_env(tmp_path, private_pg.dsn), tmp_path / "serve.log")
    serve_processes.append(proc)
    # The old serve never printed this line: it exited 2 after the pool's open timeout.
    target = await asyncio.to_thread(
        proc.start, until=(WAITING_PREFIX,),
        args=("--workers", str(workers)) if workers > 1 else ())
    async with DiwaniyaClient(target, timeout_s=CLIENT_DEADLINE_S) as client:
        await _live_not_ready_unavailable(client)
        await asyncio.sleep(3)  # a few retries later: still waiting, still live
        await _live_not_ready_unavailable(client)
        assert proc.proc is not None and proc.proc.poll() is None

        await asyncio.to_thread(private_pg.start)
        up_at = time.monotonic()

        async def turn_ok() -> bool:
            events = await _collect(client.send("عندي مشكلة في الطلب", user_id="u1"))
            return events[-1].HasField("turn_completed")

        async def ready() -> bool:
            # With two workers the kernel spreads connections: ask a fresh one each time.
            async with DiwaniyaClient(target, timeout_s=CLIENT_DEADLINE_S) as probe:
                return await probe.health(READINESS) == "SERVING"

        assert await wait_until(ready, OPEN_WITHIN_S, every_s=0.2), "readiness never came back"
        assert await wait_until(turn_ok, OPEN_WITHIN_S, every_s=0.2), "no turn succeeded"
        print(f"workers={workers}: ready and a turn served {time.monotonic() - up_at:.2f}s "
              "after PostgreSQL started")
        assert await client.health() == "SERVING"
    # Migrated by whoever opened (the process itself, or the workers).
    with psycopg.connect(private_pg.dsn) as conn:
        row = conn.execute("SELECT count(*) FROM diwaniya_threads").fetchone()
    assert row is not None and row[0] >= 1
    assert _sigterm(proc) == 0
    log = (tmp_path / "serve.log").read_text(encoding="utf-8")
    # One warning for the whole wait (per process), naming what to check.
    assert log.count("is not reachable") == workers + (1 if workers > 1 else 0), log[-3000:]
    assert "Check DATABASE_URL" in log


async def test_sigterm_while_waiting_for_postgres_exits_0_promptly(
    tmp_path: Path, serve_processes: list[ServeProcess],
) -> None:
    nowhere = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"  # nothing listens
    proc = ServeProcess(_env(tmp_path, nowhere), tmp_path / "serve.log")
    serve_processes.append(proc)
    target = await asyncio.to_thread(proc.start, until=(WAITING_PREFIX,))
    async with DiwaniyaClient(target, timeout_s=CLIENT_DEADLINE_S) as client:
        assert await client.health() == "SERVING"
    assert _sigterm(proc) == 0
