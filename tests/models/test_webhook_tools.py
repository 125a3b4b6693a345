"""Webhook tools against a real local HTTP server, and the built-in tools."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import httpx
import pytest
from pydantic import SecretStr, ValidationError

from diwaniya.errors import ConfigurationError
from majlis.events import Handoff
from majlis.models import Recalled
from majlis.tools import (
    ToolContext,
    WebhookTool,
    WebhookToolConfig,
    handoff_tool,
    kb_search_tool,
    remember_fact_tool,
)
from tests.fakes import WebhookReply, WebhookServer

SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string", "pattern": "^[0-9]{3,10}$"}},
    "required": ["order_id"],
    "additionalProperties": False,
}
CTX = ToolContext(tenant="t1", user_id="u1", thread_id="th1", turn_id="tu1")


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as c:
        yield c


def order_tool(url: str, client: httpx.AsyncClient, **extra: object) -> WebhookTool:
    config = WebhookToolConfig.model_validate(
        {
            "name": "order_status",
            "description_ar": "حالة الطلب",
            "description_en": "order status",
            "parameters": SCHEMA,
            "url": url,
            # Far above a local reply on a starved CPU (0.5 s was not: a 404 came
            # back after it once); the timeout tests set their own.
            "timeout_s": 10,
            "auth_header_name": "X-Api-Key",
            "auth_secret": "s3cret",
            **extra,
        }
    )
    return WebhookTool(config, client)


async def test_success_posts_json_with_auth(
    webhook_server: WebhookServer, client: httpx.AsyncClient
) -> None:
    url = webhook_server.route("/orders", WebhookReply(json_body={"status": "في الطريق"}))
    outcome = await order_tool(url, client).run({"order_id": "4411"}, CTX)
    assert outcome.ok and outcome.content == {"status": "في الطريق"}
    (request,) = webhook_server.requests
    assert request.method == "POST"
    assert request.json() == {"order_id": "4411"}
    assert request.headers["x-api-key"] == "s3cret"
    assert request.headers["x-diwaniya-thread"] == "th1"


async def test_get_sends_query_parameters(
    webhook_server: WebhookServer, client: httpx.AsyncClient
) -> None:
    url = webhook_server.route("/orders", WebhookReply(json_body={"status": "وصل"}))
    outcome = await order_tool(url, client, method="GET").run({"order_id": "777"}, CTX)
    assert outcome.ok
    assert webhook_server.requests[0].path == "/orders?order_id=777"


async def test_timeout_is_an_error_outcome(
    webhook_server: WebhookServer, client: httpx.AsyncClient
) -> None:
    # The reply is due long after the 0.5 s timeout, so the bound tells "gave up
    # at the timeout" from "waited for the reply" even on a starved CPU.
    url = webhook_server.route("/slow", WebhookReply(json_body={}, delay_s=10))
    started = time.monotonic()
    outcome = await order_tool(url, client, timeout_s=0.5).run({"order_id": "4411"}, CTX)
    assert not outcome.ok and "did not answer within 0.5s" in (outcome.error or "")
    assert time.monotonic() - started < 8


async def test_deadline_shortens_the_timeout(
    webhook_server: WebhookServer, client: httpx.AsyncClient
) -> None:
    # 2 s, not 0.2 s, of turn left: a starved CPU used up 0.2 s before the
    # request went out ("no time left before the turn deadline"), and the
    # request must be sent for its wait to be cut short. The reply and the
    # tool's own timeout are both far beyond it.
    url = webhook_server.route("/slow", WebhookReply(json_body={}, delay_s=30))
    started = time.monotonic()
    ctx = ToolContext("t1", "u1", "th1", "tu1", deadline=started + 2.0)
    outcome = await order_tool(url, client, timeout_s=20).run({"order_id": "4411"}, ctx)
    assert not outcome.ok and "did not answer" in (outcome.error or "")
    assert time.monotonic() - started < 15  # the deadline ended the wait, not the timeout
    assert len(webhook_server.requests) == 1


async def test_500_is_an_error_outcome(
    webhook_server: WebhookServer, client: httpx.AsyncClient
) -> None:
    url = webhook_server.route("/err", WebhookReply(status=500, json_body={"detail": "db down"}))
    outcome = await order_tool(url, client).run({"order_id": "4411"}, CTX)
    assert not outcome.ok
    assert "HTTP 500" in (outcome.error or "") and "db down" in (outcome.error or "")


async def test_404_is_a_rejection(webhook_server: WebhookServer, client: httpx.AsyncClient) -> None:
    outcome = await order_tool(f"{webhook_server.url}/missing", client).run(
        {"order_id": "1234"}, CTX
    )
    assert not outcome.ok and "rejected the request (HTTP 404)" in (outcome.error or "")


async def test_invalid_json_is_an_error_outcome(
    webhook_server: WebhookServer, client: httpx.AsyncClient
) -> None:
    url = webhook_server.route("/bad", WebhookReply(raw_body=b"<html>oops"))
    outcome = await order_tool(url, client).run({"order_id": "4411"}, CTX)
    assert not outcome.ok and "invalid JSON" in (outcome.error or "")


@pytest.mark.parametrize(
    ("arguments", "where"),
    [
        ({"order_id": 4411}, "order_id"),  # wrong type
        ({"order_id": "طلبي"}, "order_id"),  # fails the pattern
        ({}, "(arguments)"),  # missing required
        ({"order_id": "4411", "drop": "table"}, "(arguments)"),  # unexpected property
    ],
)
async def test_schema_invalid_arguments_never_reach_the_backend(
    webhook_server: WebhookServer,
    client: httpx.AsyncClient,
    arguments: dict[str, object],
    where: str,
) -> None:
    url = webhook_server.route("/orders", WebhookReply(json_body={"status": "x"}))
    outcome = await order_tool(url, client).run(arguments, CTX)
    assert not outcome.ok
    assert (outcome.error or "").startswith(f"invalid arguments at {where}:")
    assert webhook_server.requests == []


async def test_secret_from_injected_mapping(
    webhook_server: WebhookServer, client: httpx.AsyncClient
) -> None:
    url = webhook_server.route("/orders", WebhookReply(json_body={}))
    config = WebhookToolConfig(
        name="order_status",
        description_ar="حالة الطلب",
        parameters=SCHEMA,
        url=url,
        auth_header_name="Authorization",
        auth_secret_env="ORDERS_TOKEN",
    )
    tool = WebhookTool(config, client, secrets={"ORDERS_TOKEN": "Bearer abc"})
    assert (await tool.run({"order_id": "4411"}, CTX)).ok
    assert webhook_server.requests[0].headers["authorization"] == "Bearer abc"
    with pytest.raises(ConfigurationError, match="ORDERS_TOKEN"):
        WebhookTool(config, client, secrets={})


def test_config_rejects_bad_schema_and_regex() -> None:
    base = {"name": "x", "description_ar": "س", "url": "http://127.0.0.1/x"}
    with pytest.raises(ValidationError, match="JSON Schema"):
        WebhookToolConfig.model_validate({**base, "parameters": {"type": "objekt"}})
    with pytest.raises(ValidationError, match="regex"):
        WebhookToolConfig.model_validate({**base, "parameter_patterns": {"id": "([0-9"}})
    with pytest.raises(ValidationError, match="go together"):
        WebhookToolConfig.model_validate({**base, "auth_secret": SecretStr("k")})


async def test_builtin_tools_report_instead_of_raising() -> None:
    async def search(query: str, k: int) -> list[Recalled]:
        return [Recalled("kb-1", "kb", "الدوام", "الدوام من ٨ إلى ٤", "من ٨ إلى ٤", 0.9)][:k]

    async def remember(fact: str) -> str:
        raise RuntimeError("store offline")

    hits = await kb_search_tool(search).run({"query": "ساعات الدوام"}, CTX)
    assert hits.ok and hits.content[0]["id"] == "kb-1"
    assert not (await kb_search_tool(search).run({"query": "  "}, CTX)).ok
    failed = await remember_fact_tool(remember).run({"fact": "اسمي خالد"}, CTX)
    assert not failed.ok and "store offline" in (failed.error or "")
    handed = await handoff_tool(lambda: "اللهجة: gulf").run({"reason": "يصر"}, CTX)
    assert handed.events == (Handoff(summary_ar="اللهجة: gulf", reason="يصر"),)
