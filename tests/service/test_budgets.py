"""Budgets and rate limits over gRPC: RESOURCE_EXHAUSTED with QuotaFailure + RetryInfo,
refused before any model call, counted in the database (one server and two)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from service import DiwaniyaClient
from tests.chaos.conftest import ServeProcess, serve_env
from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import collect, kinds

REPLY = "أهلاً وسهلاً، كيف أقدر أساعدك؟"


def _details(exc: grpc.aio.AioRpcError) -> tuple[error_details_pb2.QuotaFailure,
                                                  error_details_pb2.RetryInfo]:
    status = rpc_status.from_call(exc)  # type: ignore[arg-type]
    assert status is not None, "RESOURCE_EXHAUSTED without grpc-status-details-bin"
    quota, retry = error_details_pb2.QuotaFailure(), error_details_pb2.RetryInfo()
    found = set()
    for detail in status.details:
        if detail.Is(quota.DESCRIPTOR):
            detail.Unpack(quota)
            found.add("quota")
        elif detail.Is(retry.DESCRIPTOR):
            detail.Unpack(retry)
            found.add("retry")
    assert found == {"quota", "retry"}, found
    return quota, retry


def _tenant_keys() -> tuple[str, str]:
    suffix = uuid.uuid4().hex[:10]
    return f"key-{suffix}", f"t-{suffix}"


async def _refused(client: DiwaniyaClient, **send: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await collect(client.send(**send))
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, refused.value.details()
    return refused.value


async def test_rate_limit_refuses_with_quota_and_retry_before_the_model(
    run_service: Callable[..., Any], openai_server: ScriptedOpenAIServer,
) -> None:
    key, tenant = _tenant_keys()
    openai_server.push(ScriptedReply.text(REPLY), ScriptedReply.text(REPLY))
    async with run_service(model_base_url=openai_server.base_url, api_keys={key: tenant},
                           rate_limit="2/hour") as svc:
        client = DiwaniyaClient(svc.target, api_key=key)
        try:
            user = f"rate-{uuid.uuid4().hex[:8]}"
            for _ in range(2):
                assert "turn_completed" in kinds(await collect(client.send("مرحبا", user_id=user)))
            exc = await _refused(client, text="مرحبا", user_id=user)
        finally:
            await client.close()
    assert len(openai_server.requests) == 2, "the refused turn reached the model"
    quota, retry = _details(exc)
    (violation,) = quota.violations
    assert violation.subject == f"tenant:{tenant}"
    assert violation.quota_id == "turns_per_1_hour" and violation.quota_value == 2
    assert 0 < retry.retry_delay.seconds <= 3600
    assert "retry in" in (exc.details() or "")


async def test_thread_token_budget_overshoots_by_at_most_one_turn(
    run_service: Callable[..., Any], openai_server: ScriptedOpenAIServer,
) -> None:
    key, tenant = _tenant_keys()
    # 15 tokens a turn against 20: turn 2 is admitted at 15 (< 20) and ends at 30,
    # turn 3 is refused. Another thread of the tenant is not affected.
    openai_server.push(*(ScriptedReply.text(REPLY, usage=(10, 5)) for _ in range(3)))
    async with run_service(model_base_url=openai_server.base_url, api_keys={key: tenant},
                           thread_token_budget=20) as svc:
        client = DiwaniyaClient(svc.target, api_key=key)
        try:
            user = f"tok-{uuid.uuid4().hex[:8]}"
            first = await collect(client.send("مرحبا", user_id=user))
            thread = first[0].thread_id
            await collect(client.send("عندي سؤال", user_id=user, thread_id=thread))
            exc = await _refused(client, text="وسؤال ثاني", user_id=user, thread_id=thread)
            other = await collect(client.send("مرحبا", user_id=user))
        finally:
            await client.close()
    assert "turn_completed" in kinds(other) and other[0].thread_id != thread
    assert len(openai_server.requests) == 3
    quota, retry = _details(exc)
    (violation,) = quota.violations
    assert violation.subject == f"thread:{thread}"
    assert violation.quota_id == "thread_tokens_per_1_day" and violation.quota_value == 20
    assert "30 tokens used" in violation.description
    assert retry.retry_delay.seconds > 0


async def test_tenant_cost_budget_and_per_tenant_override(
    run_service: Callable[..., Any], openai_server: ScriptedOpenAIServer,
) -> None:
    key, tenant = _tenant_keys()
    free_key, free_tenant = _tenant_keys()
    # 1000 + 1000 tokens at 0.01 USD per 1k each: 0.02 USD a turn; the budget is 0.01.
    openai_server.push(*(ScriptedReply.text(REPLY, usage=(1000, 1000)) for _ in range(3)))
    async with run_service(
        model_base_url=openai_server.base_url, api_keys={key: tenant, free_key: free_tenant},
        model_price_prompt_per_1k=0.01, model_price_completion_per_1k=0.01,
        tenants={tenant: {"tenant_cost_budget_usd": 0.01}},
    ) as svc:
        client = DiwaniyaClient(svc.target, api_key=key)
        free = DiwaniyaClient(svc.target, api_key=free_key)
        try:
            user = f"cost-{uuid.uuid4().hex[:8]}"
            await collect(client.send("مرحبا", user_id=user))
            exc = await _refused(client, text="مرحبا", user_id=user)
            # Only the overridden tenant has a budget.
            for _ in range(2):
                assert "turn_completed" in kinds(await collect(free.send("مرحبا", user_id=user)))
        finally:
            await client.close()
            await free.close()
    quota, _ = _details(exc)
    (violation,) = quota.violations
    assert violation.subject == f"tenant:{tenant}"
    assert violation.quota_id == "tenant_usd_micros_per_1_day"
    assert violation.quota_value == 10_000  # 0.01 USD in micro-USD
    assert len(openai_server.requests) == 3


# ------------------------------------------------ two processes, one PostgreSQL

@pytest.fixture
def serve_processes() -> Iterator[list[ServeProcess]]:
    started: list[ServeProcess] = []
    yield started
    for proc in started:
        proc.kill()


def _start_two(tmp_path: Path, dsn: str, model: ScriptedOpenAIServer, started: list[ServeProcess],
               **limits: str) -> tuple[str, str, str]:
    key, tenant = _tenant_keys()
    env = serve_env(tmp_path, dsn=dsn, model_base_url=model.base_url)
    env["DIWANIYA_API_KEYS"] = json.dumps({key: tenant})
    env.update({f"DIWANIYA_{name.upper()}": value for name, value in limits.items()})
    procs = [ServeProcess(env, tmp_path / f"serve-{n}.log") for n in (1, 2)]
    started.extend(procs)
    # Both start at once: each start-up is seconds of imports on a loaded machine.
    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(ServeProcess.start, procs)
    return key, first, second


async def test_rate_limit_holds_in_total_across_two_processes(
    tmp_path: Path, pg_dsn: str, openai_server: ScriptedOpenAIServer,
    serve_processes: list[ServeProcess],
) -> None:
    key, a, b = _start_two(tmp_path, pg_dsn, openai_server, serve_processes,
                           rate_limit="3/hour")
    openai_server.push(*(ScriptedReply.text(REPLY) for _ in range(3)))
    user = f"rate2-{uuid.uuid4().hex[:8]}"
    async with DiwaniyaClient(a, api_key=key, timeout_s=60) as ca, \
            DiwaniyaClient(b, api_key=key, timeout_s=60) as cb:
        for client in (ca, cb, ca):
            assert "turn_completed" in kinds(await collect(client.send("مرحبا", user_id=user)))
        refusals = [await _refused(c, text="مرحبا", user_id=user) for c in (cb, ca)]
    assert len(openai_server.requests) == 3
    for exc in refusals:
        quota, retry = _details(exc)
        assert quota.violations[0].quota_value == 3
        assert retry.retry_delay.seconds > 0


async def test_token_budget_spent_on_one_process_is_enforced_by_the_other(
    tmp_path: Path, pg_dsn: str, openai_server: ScriptedOpenAIServer,
    serve_processes: list[ServeProcess],
) -> None:
    key, a, b = _start_two(tmp_path, pg_dsn, openai_server, serve_processes,
                           tenant_token_budget="15", budget_window_s="3600")
    openai_server.push(ScriptedReply.text(REPLY, usage=(10, 5)))
    user = f"tok2-{uuid.uuid4().hex[:8]}"
    async with DiwaniyaClient(a, api_key=key, timeout_s=60) as ca, \
            DiwaniyaClient(b, api_key=key, timeout_s=60) as cb:
        assert "turn_completed" in kinds(await collect(ca.send("مرحبا", user_id=user)))
        exc = await _refused(cb, text="مرحبا", user_id=user)
    assert len(openai_server.requests) == 1
    quota, retry = _details(exc)
    (violation,) = quota.violations
    assert violation.quota_id == "tenant_tokens_per_1_hour" and violation.quota_value == 15
    assert "15 tokens used" in violation.description
    assert 0 < retry.retry_delay.seconds <= 3600


# ------------------------------------------------------------- the storage itself

async def test_postgres_counters_are_exact_under_concurrent_increments_from_two_pools(
    pg_dsn: str,
) -> None:
    """Two pools stand for two replicas: 2 × 100 concurrent upserts, no lost update."""
    import asyncio

    from psycopg_pool import AsyncConnectionPool

    from majlis.limit_storage import PostgresCounters

    pools = [AsyncConnectionPool(pg_dsn, min_size=1, max_size=8, open=False) for _ in range(2)]
    for pool in pools:
        await pool.open(wait=True)
    try:
        counters = [PostgresCounters(pool) for pool in pools]
        await counters[0].migrate()
        key = f"test/{uuid.uuid4().hex}"
        results = await asyncio.gather(*(counters[i % 2].incr(key, 3600, 1) for i in range(200)))
        values = sorted(value for value, _ in results)
        assert values == list(range(1, 201))  # each increment saw a distinct total
        assert len({expires for _, expires in results}) == 1  # one window
        assert (await counters[1].get(key))[0] == 200
        # A window that has passed restarts at the increment (same statement).
        short = f"test/{uuid.uuid4().hex}"
        await counters[0].incr(short, 0, 5)
        assert (await counters[0].incr(short, 3600, 2))[0] == 2
    finally:
        for pool in pools:
            await pool.close()


async def test_sqlite_counters_window_and_clear(tmp_path: Path) -> None:
    from majlis.limit_storage import SqliteCounters

    counters = await SqliteCounters.open(tmp_path / "limits.sqlite3")
    try:
        assert (await counters.incr("a", 3600, 3))[0] == 3
        assert (await counters.incr("a", 3600, 4))[0] == 7
        await counters.incr("gone", 0, 9)
        assert (await counters.get("gone"))[0] == 0
        assert await counters.prune() == 1
        assert await counters.clear("a") == 1 and (await counters.get("a"))[0] == 0
    finally:
        await counters.close()


def test_a_malformed_rate_limit_is_a_configuration_error() -> None:
    from diwaniya.errors import ConfigurationError
    from majlis.budgets import parse_rate

    with pytest.raises(ConfigurationError, match="2/second"):
        parse_rate("twice a minute")
    assert [str(item) for item in parse_rate("2/second;30/minute")] == [
        "2 per 1 second", "30 per 1 minute"]


async def test_converse_reports_a_refused_turn_and_the_stream_stays_open(
    run_service: Callable[..., Any], openai_server: ScriptedOpenAIServer,
) -> None:
    from diwaniya.v1 import conversations_pb2 as pb

    key, tenant = _tenant_keys()
    openai_server.push(ScriptedReply.text(REPLY))
    async with run_service(model_base_url=openai_server.base_url, api_keys={key: tenant},
                           rate_limit="1/hour") as svc:
        client = DiwaniyaClient(svc.target, api_key=key)
        user = f"conv-{uuid.uuid4().hex[:8]}"
        try:
            async def messages() -> Any:
                for _ in range(2):
                    yield pb.ClientMessage(message=pb.SendMessageRequest(text="مرحبا",
                                                                         user_id=user))
            events = await collect(client.converse(messages()))
        finally:
            await client.close()
    errors = [e.error for e in events if e.HasField("error")]
    assert kinds(events).count("turn_completed") == 1
    assert [e.code for e in errors] == ["resource_exhausted"] and errors[0].retryable
    assert "turns per 1 hour" in errors[0].message and "retry in" in errors[0].message
    assert len(openai_server.requests) == 1
