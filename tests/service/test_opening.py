"""A server whose app is not open yet (service.opening.Pending): live, not ready, UNAVAILABLE.

In process, on a real gRPC server (127.0.0.1:0) with a plaintext health port
beside it: before the app is set every service answers UNAVAILABLE with
RetryInfo and reason STORE_UNAVAILABLE — Conversations and Knowledge alike —
and both ports say "" SERVING, readiness NOT_SERVING; once the app is set,
readiness is SERVING and a turn («السلام عليكم») runs. The real start-up with
PostgreSQL down is tests/chaos/test_start_without_db.py.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from diwaniya.v1 import knowledge_pb2, knowledge_pb2_grpc
from majlis.culture import FixedClock
from service import App, DiwaniyaClient, Settings, build_app
from service.app import build_server
from service.opening import Pending
from tests.service.conftest import DEFAULT_TIME, collect

READINESS = "diwaniya.v1.Conversations"


def _reason_and_delay(err: grpc.aio.AioRpcError) -> tuple[str, float | None]:
    status = rpc_status.from_call(err)
    reason, delay = "", None
    for detail in status.details if status else []:
        info, retry = error_details_pb2.ErrorInfo(), error_details_pb2.RetryInfo()
        if detail.Unpack(info):
            reason = info.reason
        elif detail.Unpack(retry):
            delay = retry.retry_delay.ToMilliseconds() / 1000
    return reason, delay


async def test_before_the_app_opens_everything_is_unavailable_and_only_liveness_serves(
    tmp_path: Path,
) -> None:
    settings = Settings(data_dir=tmp_path / "data", listen="127.0.0.1:0",
                        health_listen="127.0.0.1:0", drain_grace_s=1.0, retry_after_s=1.5)
    pending: Pending[App] = Pending(retry_after_s=settings.retry_after_s)
    server = build_server(settings, pending, asyncio.Event(), None)
    await server.start(opening=True)
    app: App | None = None
    client = DiwaniyaClient(f"127.0.0.1:{server.port}", timeout_s=10)
    probes = DiwaniyaClient(f"127.0.0.1:{server.health_port}", timeout_s=10)
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
    try:
        for health in (client, probes):
            assert await health.health() == "SERVING"
            assert await health.health(READINESS) == "NOT_SERVING"
        knowledge = knowledge_pb2_grpc.KnowledgeStub(channel)
        failures = []
        for call in (collect(client.send("السلام عليكم", user_id="u1")),
                     client.get_thread("t-1", user_id="u1"),
                     client.list_threads(user_id="u1"),
                     knowledge.ListDocuments(knowledge_pb2.ListDocumentsRequest(), timeout=10),
                     knowledge.Search(knowledge_pb2.SearchRequest(query="الإرجاع"), timeout=10)):
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await call
            failures.append(caught.value)
        for err in failures:
            assert err.code() == grpc.StatusCode.UNAVAILABLE, (err.code(), err.details())
            assert _reason_and_delay(err) == ("STORE_UNAVAILABLE", 1.5)
            assert "retry" in (err.details() or "")

        app = await build_app(settings, clock=FixedClock(DEFAULT_TIME))
        pending.set(app)
        await server.check_ready()
        assert await probes.health(READINESS) == "SERVING"
        events = await collect(client.send("السلام عليكم", user_id="u1"))
        assert events[-1].HasField("turn_completed")
    finally:
        await channel.close()
        await client.close()
        await probes.close()
        await server.drain(0, delay=0)
        if app is not None:
            await app.close()


async def test_an_unreachable_database_is_reported_before_any_pool_is_opened(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The first attempt probes too: a refused connect is reported at once.

    Before, attempt 1 went straight to the pools' open, which waits out its
    open timeout (about 10 s) before failing — so the one WARNING, and
    ``--workers``' hand-over line, came 10 s late. The probe is the real
    one (majlis.pg_probe) against a loopback port nothing listens on.
    """
    from majlis.pg_probe import probe_postgres
    from service.opening import open_when_reachable
    from tests.chaos.conftest import free_port

    dsn = f"postgresql://127.0.0.1:{free_port()}/diwaniya"
    opened: list[str] = []
    stop = asyncio.Event()
    waiting = asyncio.Event()

    async def open_() -> str:
        opened.append("pools")  # must never run while the probe fails
        return "app"

    async def probe() -> None:
        await probe_postgres(dsn, connect_timeout_s=2.0, application_name="test")

    with caplog.at_level("WARNING", logger="diwaniya.opening"):
        task = asyncio.create_task(open_when_reachable(
            open_, probe=probe, stop=stop, where="127.0.0.1", on_waiting=waiting.set))
        await asyncio.wait_for(waiting.wait(), timeout=30)
        stop.set()
        assert await asyncio.wait_for(task, timeout=30) is None
    assert opened == []
    assert [r.getMessage() for r in caplog.records if "is not reachable" in r.getMessage()]
