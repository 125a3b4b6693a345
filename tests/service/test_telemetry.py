"""Telemetry over a real server on 127.0.0.1:0: traces, metrics, Prometheus, logs.

In-memory span exporter and metric reader (service.telemetry accepts them in
place of OTLP); the model is the scripted OpenAI-compatible server.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import grpc
import httpx
import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from diwaniya.v1 import conversations_pb2 as pb
from diwaniya.v1 import conversations_pb2_grpc as pb_grpc
from majlis.culture import FixedClock
from service import App, Server, Settings, build_app
from service.logs import THIRD_PARTY, configure_logging
from service.telemetry import Telemetry
from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import DEFAULT_TIME

USER = f"tele-{uuid.uuid4().hex[:8]}"
MODEL = f"tele-model-{uuid.uuid4().hex[:6]}"
# What must never leave the process: a distinctive Arabic sentence and a Latin
# canary (bytes reprs of SQL parameters escape Arabic but show ASCII as is).
CANARY = f"CANARY{uuid.uuid4().hex[:10]}"
SECRET_AR = "الزرافة البنفسجية ترقص فوق سطح المكتبة"
REPLY_CANARY = f"REPLYCANARY{uuid.uuid4().hex[:8]}"
NEEDLES = (CANARY, SECRET_AR, "الزرافة البنفسجية", REPLY_CANARY)

METRICS = {  # Prometheus name → OpenTelemetry instrument, allowed labels
    "diwaniya_turn_duration_seconds": ("diwaniya_turn_duration", {"outcome"}),
    "diwaniya_turn_first_event_seconds": ("diwaniya_turn_first_event", set()),
    "diwaniya_model_tokens_total": ("diwaniya_model_tokens", {"kind", "model"}),
    "diwaniya_model_cost_usd_total": ("diwaniya_model_cost_usd", {"model"}),
    "diwaniya_rpc_total": ("diwaniya_rpc", {"method", "code"}),
    "diwaniya_active_streams": ("diwaniya_active_streams", set()),
    "diwaniya_model_failures_total": ("diwaniya_model_failures", {"reason"}),
    "diwaniya_db_pool_connections": ("diwaniya_db_pool_connections", {"pool", "state"}),
    "diwaniya_db_pool_wait_seconds": ("diwaniya_db_pool_wait", {"pool"}),
    "diwaniya_turns_by_phase_total": ("diwaniya_turns_by_phase", {"phase"}),
    "diwaniya_turns_by_dialect_total": ("diwaniya_turns_by_dialect", {"dialect"}),
    "diwaniya_lease_heartbeat_failures_total": ("diwaniya_lease_heartbeat_failures", set()),
}


@dataclass
class Observed:
    app: App
    server: Server
    stub: pb_grpc.ConversationsStub
    spans: InMemorySpanExporter
    reader: InMemoryMetricReader
    telemetry: Telemetry


@pytest.fixture
def observed(settings_for: Callable[..., Settings]) -> Callable[..., Any]:
    @asynccontextmanager
    async def start(**overrides: Any) -> AsyncIterator[Observed]:
        settings = settings_for(metrics_listen="127.0.0.1:0", **overrides)
        spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
        telemetry = Telemetry.configure(environ={}, metrics_listen=settings.metrics_listen,
                                        span_exporter=spans, metric_readers=[reader])
        app = await build_app(settings, clock=FixedClock(DEFAULT_TIME), telemetry=telemetry)
        server = app.server()
        await server.start()
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{server.port}")
        try:
            yield Observed(app, server, pb_grpc.ConversationsStub(channel), spans, reader,
                           telemetry)
        finally:
            await channel.close()
            await server.drain(0, delay=0)
            await app.close()

    return start


def _traceparent() -> tuple[str, int, int]:
    trace_id, span_id = uuid.uuid4().int >> 1, uuid.uuid4().int >> 65 | 1
    return f"00-{trace_id:032x}-{span_id:016x}-01", trace_id, span_id


async def _turn(stub: pb_grpc.ConversationsStub, text: str, *, traceparent: str = "",
                thread_id: str = "") -> list[pb.TurnEvent]:
    metadata = (("traceparent", traceparent),) if traceparent else ()
    call = stub.SendMessage(pb.SendMessageRequest(text=text, user_id=USER, country="KW",
                                                  thread_id=thread_id),
                            metadata=metadata, timeout=60)
    return [e async for e in call]


async def _finished(spans: InMemorySpanExporter, trace_id: int, name: str
                    ) -> list[ReadableSpan]:
    """The trace's spans once ``name`` (the RPC's server span) has ended.

    The client sees the stream end a moment before the server span is
    exported: wait for that event (generously), not for a fixed time.
    """
    async with asyncio.timeout(30):
        while True:
            mine = [s for s in spans.get_finished_spans() if s.context.trace_id == trace_id]
            if any(s.name == name for s in mine):
                return mine
            await asyncio.sleep(0.02)


def _reply(usage: tuple[int, int] = (12, 5)) -> ScriptedReply:
    return ScriptedReply.text(f"أهلاً وسهلاً {REPLY_CANARY} كيف أخدمك", usage=usage, model=MODEL)


# ------------------------------------------------------------------ traces
async def test_a_turn_is_one_span_tree_continuing_the_callers_traceparent(
    observed: Callable[..., Any], openai_server: ScriptedOpenAIServer
) -> None:
    openai_server.push(_reply())
    header, trace_id, caller_span = _traceparent()
    async with observed(model_base_url=openai_server.base_url, model_name=MODEL) as obs:
        events = await _turn(obs.stub, "السلام عليكم، وين طلبي؟", traceparent=header)
        spans = await _finished(obs.spans, trace_id, "/diwaniya.v1.Conversations/SendMessage")
    assert events[-1].WhichOneof("event") == "turn_completed"
    by_id = {s.context.span_id: s for s in spans}
    by_name: dict[str, list[ReadableSpan]] = {}
    for s in spans:
        by_name.setdefault(s.name, []).append(s)
    (rpc,) = by_name["/diwaniya.v1.Conversations/SendMessage"]
    # The server span continues the caller's trace: its parent is the caller's span.
    assert rpc.kind == SpanKind.SERVER
    assert rpc.parent is not None and rpc.parent.is_remote
    assert rpc.parent.span_id == caller_span and rpc.context.trace_id == trace_id
    # One tree: every other span's parent is a span of this trace, up to the RPC span.
    for s in spans:
        if s is not rpc:
            assert s.parent is not None and s.parent.span_id in by_id, s.name

    def parent(span: ReadableSpan) -> ReadableSpan:
        assert span.parent is not None
        return by_id[span.parent.span_id]

    nodes = {n: by_name[f"graph.node {n}"][0]
             for n in ("analyse", "phase", "recall", "respond", "remember")}
    for node in nodes.values():
        assert parent(node) is rpc or parent(parent(node)) is rpc
    (model,) = by_name[f"chat {MODEL}"]
    assert parent(model) is nodes["respond"]
    assert model.kind == SpanKind.CLIENT
    assert model.attributes["gen_ai.request.model"] == MODEL
    assert model.attributes["gen_ai.usage.input_tokens"] == 12
    assert model.attributes["gen_ai.usage.output_tokens"] == 5
    (search,) = [s for s in by_name["memory.search"] if parent(s) is nodes["recall"]]
    assert isinstance(search.attributes["diwaniya.hits"], int)
    assert parent(by_name["thread.lock acquire"][0]) is rpc
    assert "checkpoint.get" in by_name
    assert "thread.commit" in by_name
    turn = by_name["diwaniya.turn"][0]
    assert turn.attributes["diwaniya.turn_id"] == events[-1].turn_id
    # The RPC span carries the ids (never as metric labels).
    assert rpc.attributes["diwaniya.thread_id"] == events[-1].thread_id
    assert rpc.attributes["diwaniya.turn_id"] == events[-1].turn_id


# ----------------------------------------------------------------- metrics
def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    out: dict[str, list[Any]] = {}
    for rm in data.resource_metrics if data else ():
        for sm in rm.scope_metrics:
            for metric in sm.metrics:
                out.setdefault(metric.name, []).extend(metric.data.data_points)
    return out


def _value(points: Iterable[Any], **labels: str) -> float:
    return sum(getattr(p, "value", None) if hasattr(p, "value") else p.count
               for p in points if all(p.attributes.get(k) == v for k, v in labels.items()))


async def _points_once(reader: InMemoryMetricReader, name: str,
                       **labels: str) -> dict[str, list[Any]]:
    """The points once ``name{labels}`` is recorded: a unary RPC's interceptor
    counts it just after its status left, which a fast client can beat."""
    for _ in range(100):
        points = _points(reader)
        if _value(points.get(name, ()), **labels):
            return points
        await asyncio.sleep(0.02)
    return points


@pytest.mark.parametrize("backend", ["postgres"])
async def test_the_listed_metrics_after_one_turn(
    observed: Callable[..., Any], openai_server: ScriptedOpenAIServer
) -> None:
    openai_server.push(_reply(usage=(100, 20)))
    openai_server.push(*(ScriptedReply.error(500, "upstream exploded") for _ in range(4)))
    async with observed(model_base_url=openai_server.base_url, model_name=MODEL,
                        model_price_prompt_per_1k=1.0, model_price_completion_per_1k=2.0,
                        on_model_failure="offline") as obs:
        events = await _turn(obs.stub, "السلام عليكم")
        one_turn = _points(obs.reader)
        # A second turn whose model fails after its retries: the offline responder answers.
        await _turn(obs.stub, "وين طلبي؟", thread_id=events[-1].thread_id)
        after = _points(obs.reader)
    missing = [prom for prom, (name, _) in METRICS.items()
               if name not in one_turn and prom not in (
                   "diwaniya_model_failures_total", "diwaniya_lease_heartbeat_failures_total")]
    assert not missing, missing
    assert _value(one_turn["diwaniya_model_tokens"], kind="prompt", model=MODEL) == 100
    assert _value(one_turn["diwaniya_model_tokens"], kind="completion", model=MODEL) == 20
    assert _value(one_turn["diwaniya_model_cost_usd"], model=MODEL) == pytest.approx(0.14)
    assert _value(one_turn["diwaniya_rpc"], method="SendMessage", code="OK") == 1
    assert _value(one_turn["diwaniya_turn_duration"], outcome="completed") == 1
    assert _value(one_turn["diwaniya_turn_first_event"]) == 1
    assert _value(one_turn["diwaniya_turns_by_phase"]) == 1
    assert _value(one_turn["diwaniya_turns_by_dialect"]) == 1
    assert _value(one_turn["diwaniya_active_streams"]) == 0
    pools = {p.attributes["pool"] for p in one_turn["diwaniya_db_pool_connections"]}
    assert pools == {"checkpoints", "locks", "memory"}
    assert {p.attributes["pool"] for p in one_turn["diwaniya_db_pool_wait"]} >= {
        "checkpoints", "locks", "memory"}
    assert _value(after["diwaniya_model_failures"], reason="http_500") == 1
    # No tenant, user, thread or turn ids as labels: only the agreed ones.
    for prom, (name, allowed) in METRICS.items():
        for point in after.get(name, []):
            assert set(point.attributes) <= allowed, (prom, dict(point.attributes))


async def test_prometheus_endpoint_of_a_live_server(
    observed: Callable[..., Any], openai_server: ScriptedOpenAIServer
) -> None:
    openai_server.push(_reply())
    async with observed(model_base_url=openai_server.base_url, model_name=MODEL) as obs:
        port = obs.telemetry.serve_metrics()
        assert port and port != obs.server.port
        await _turn(obs.stub, "هلا")
        async with httpx.AsyncClient() as http:
            reply = await http.get(f"http://127.0.0.1:{port}/metrics", timeout=30)
    assert reply.status_code == 200
    body = reply.text
    assert 'service_name="diwaniya"' in body  # target_info: the resource
    for name in ("diwaniya_turn_duration_seconds_bucket", "diwaniya_turn_first_event_seconds",
                 "diwaniya_active_streams", "diwaniya_turns_by_phase_total",
                 "diwaniya_turns_by_dialect_total"):
        assert name in body, name
    assert f'diwaniya_model_tokens_total{{kind="prompt",model="{MODEL}"' in body
    lines = [line for line in body.splitlines() if line.startswith("diwaniya_rpc_total{")]
    assert any('code="OK"' in line and 'method="SendMessage"' in line for line in lines)


# ---------------------------------------------------------- no message text
def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _span_texts(spans: Iterable[ReadableSpan]) -> Iterable[str]:
    for s in spans:
        yield s.name
        if s.status.description:
            yield s.status.description
        for v in (s.attributes or {}).values():
            yield from _strings(v)
        for event in s.events:
            yield event.name
            for v in (event.attributes or {}).values():
                yield from _strings(v)


@asynccontextmanager
async def _debug_logs(message_text: bool = False) -> AsyncIterator[io.StringIO]:
    """DEBUG everywhere, third-party loggers too, as an operator chasing a bug would set."""
    buffer = io.StringIO()
    handler = configure_logging(format="json", level="DEBUG", message_text=message_text,
                                stream=buffer)
    levels = {name: logging.getLogger(name).level for name in THIRD_PARTY}
    for name in THIRD_PARTY:  # someone turned them up after configuration
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        yield buffer
    finally:
        logging.getLogger().removeHandler(handler)
        logging.getLogger().setLevel(logging.WARNING)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


async def _leaky_traffic(obs: Observed, openai_server: ScriptedOpenAIServer) -> None:
    """A turn, a follow-up on Converse, and a rejected request, all with the secret text."""
    openai_server.push(_reply(), _reply())
    text = f"{SECRET_AR} {CANARY}"
    header, _, _ = _traceparent()
    events = await _turn(obs.stub, text, traceparent=header)
    thread_id = events[-1].thread_id

    async def messages() -> AsyncIterator[pb.ClientMessage]:
        yield pb.ClientMessage(message=pb.SendMessageRequest(
            text=f"{CANARY} مرة ثانية {SECRET_AR}", user_id=USER, thread_id=thread_id))

    got = [e async for e in obs.stub.Converse(messages(), timeout=60)]
    assert got[-1].WhichOneof("event") == "turn_completed"
    with pytest.raises(grpc.aio.AioRpcError) as rejected:
        await _turn(obs.stub, f"{SECRET_AR} {CANARY} " + "ك" * 5000)  # over max_text_chars
    assert rejected.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_no_message_text_in_spans_metrics_or_logs_at_debug(
    observed: Callable[..., Any], openai_server: ScriptedOpenAIServer
) -> None:
    async with _debug_logs() as logs, observed(
            model_base_url=openai_server.base_url, model_name=MODEL) as obs:
        await _leaky_traffic(obs, openai_server)
        spans = list(obs.spans.get_finished_spans())
        points = _points(obs.reader)
        logging.getLogger("aiosqlite").debug("executing %s", f"INSERT … {CANARY}")
    lines = logs.getvalue().splitlines()
    records = [json.loads(line) for line in lines]
    # The test is not vacuous: DEBUG was on, and the RPC lines are there.
    assert any(r["level"] == "DEBUG" for r in records)
    rpc_lines = [r for r in records if r["msg"] == "rpc" and r.get("rpc.method") == "SendMessage"]
    assert {r["rpc.code"] for r in rpc_lines} == {"OK", "INVALID_ARGUMENT"}
    ok = next(r for r in rpc_lines if r["rpc.code"] == "OK")
    assert ok["tenant"] == "default" and ok["thread_id"] and ok["turn_id"] and ok["trace_id"]
    assert any(r["msg"] == "turn" and r.get("rpc.method") == "Converse" for r in records)
    texts = [*_span_texts(spans), *lines]
    texts += [str(v) for pts in points.values() for p in pts for v in p.attributes.values()]
    for needle in NEEDLES:
        leaks = [t for t in texts if needle in t]
        assert not leaks, (needle, leaks[:3])


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_the_debug_switch_is_what_lets_text_through(
    observed: Callable[..., Any], openai_server: ScriptedOpenAIServer
) -> None:
    """The control for the test above: with DIWANIYA_LOG_MESSAGE_TEXT=true aiosqlite's
    DEBUG lines do carry the canary, so its absence there is the filter's doing."""
    async with _debug_logs(message_text=True) as logs, observed(
            model_base_url=openai_server.base_url, model_name=MODEL) as obs:
        await _leaky_traffic(obs, openai_server)
    assert CANARY in logs.getvalue()


async def test_a_model_failure_is_a_warning_and_a_rejected_request_is_logged(
    observed: Callable[..., Any], openai_server: ScriptedOpenAIServer
) -> None:
    openai_server.push(*(ScriptedReply.error(503, "overloaded") for _ in range(4)))
    async with _debug_logs() as logs, observed(model_base_url=openai_server.base_url,
                                               model_name=MODEL) as obs:
        with pytest.raises(grpc.aio.AioRpcError) as failed:
            await _turn(obs.stub, "هلا")
        with pytest.raises(grpc.aio.AioRpcError) as unknown:
            await obs.stub.GetThread(pb.GetThreadRequest(thread_id="f" * 32, user_id=USER))
        points = await _points_once(obs.reader, "diwaniya_rpc", method="GetThread",
                                    code="NOT_FOUND")
    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert unknown.value.code() == grpc.StatusCode.NOT_FOUND
    records = [json.loads(line) for line in logs.getvalue().splitlines()]
    warnings = [r for r in records if r["level"] == "WARNING"]
    assert any(r["logger"] == "diwaniya.majlis" and "model failed" in r["msg"] for r in warnings)
    rejected = [r for r in warnings if r["msg"] == "rpc"]
    assert {(r["rpc.method"], r["rpc.code"]) for r in rejected} >= {
        ("SendMessage", "UNAVAILABLE"), ("GetThread", "NOT_FOUND")}
    assert all(r.get("rpc.details") for r in rejected)
    assert _value(points["diwaniya_model_failures"], reason="http_503") == 1
    assert _value(points["diwaniya_turn_duration"], outcome="error") == 1
    assert _value(points["diwaniya_rpc"], method="GetThread", code="NOT_FOUND") == 1


async def test_converse_times_each_turn_and_a_cancelled_one(
    observed: Callable[..., Any], openai_server: ScriptedOpenAIServer
) -> None:
    slow = "كلمة " * 40
    openai_server.push(_reply(), ScriptedReply.text(slow, model=MODEL, event_delay_s=0.2))
    inbox: asyncio.Queue[pb.ClientMessage | None] = asyncio.Queue()

    async def messages() -> AsyncIterator[pb.ClientMessage]:
        while (msg := await inbox.get()) is not None:
            yield msg

    def say(text: str) -> pb.ClientMessage:
        return pb.ClientMessage(message=pb.SendMessageRequest(text=text, user_id=USER))

    async with observed(model_base_url=openai_server.base_url, model_name=MODEL) as obs:
        call = obs.stub.Converse(messages(), timeout=60)
        await inbox.put(say("هلا"))
        kinds: list[str] = []
        async for event in call:
            kinds.append(event.WhichOneof("event"))
            if kinds[-1] == "turn_completed":
                await inbox.put(say("وين طلبي؟"))
            elif (kinds[-1] == "text_delta" and kinds.count("turn_completed") == 1
                  and inbox.qsize() == 0 and "cancel" not in kinds):
                kinds.append("cancel")  # sent once
                await inbox.put(pb.ClientMessage(cancel=pb.Cancel(turn_id=event.turn_id)))
                await inbox.put(None)
        points = _points(obs.reader)
    assert kinds.count("turn_completed") == 1 and kinds.count("cancel") == 1
    assert kinds[-1] == "error"
    assert _value(points["diwaniya_turn_duration"], outcome="completed") == 1
    assert _value(points["diwaniya_turn_duration"], outcome="cancelled") == 1
    assert _value(points["diwaniya_turn_first_event"]) == 2
    assert _value(points["diwaniya_rpc"], method="Converse", code="OK") == 1
    assert _value(points["diwaniya_active_streams"]) == 0
