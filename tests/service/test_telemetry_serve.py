"""``diwaniya serve`` as operators run it: OTEL_* → OTLP, /metrics on its own port, JSON logs.

A real process, a real OTLP/HTTP receiver (protobuf bodies parsed with
opentelemetry-proto), a real Prometheus scrape; the offline responder answers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import grpc
import httpx
import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from diwaniya.v1 import conversations_pb2 as pb
from diwaniya.v1 import conversations_pb2_grpc as pb_grpc
from service.telemetry import exporter_choice, resource_from
from tests.fakes._http import LocalHTTPServer, RecordedRequest
from tests.service._cli import run_cli_with_environ

CANARY = f"CANARY{uuid.uuid4().hex[:10]}"
SECRET_AR = "الزرافة البنفسجية ترقص فوق سطح المكتبة"


def _ok(request: RecordedRequest, handler: BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/x-protobuf")
    handler.send_header("Content-Length", "0")
    handler.end_headers()


def _read_until(proc: subprocess.Popen[str], prefix: str, seen: list[str]) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        seen.append(line)
        if line.startswith(prefix):
            return line.strip()
    raise AssertionError(f"serve ended before printing {prefix!r}: {''.join(seen)}")


def test_serve_exports_otlp_serves_metrics_and_logs_json(tmp_path: Path) -> None:
    receiver = LocalHTTPServer(_ok)
    stderr_path = tmp_path / "stderr"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OTEL_", "DIWANIYA_")) and k != "DATABASE_URL"}
    env.update({
        "DIWANIYA_LISTEN": "127.0.0.1:0", "DIWANIYA_METRICS_LISTEN": "127.0.0.1:0",
        "DIWANIYA_DATA_DIR": str(tmp_path / "data"), "DIWANIYA_WORKERS": "1",
        "DIWANIYA_DRAIN_DELAY_S": "0", "DIWANIYA_DRAIN_GRACE_S": "2",
        "DIWANIYA_LOG_LEVEL": "DEBUG",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_METRICS_EXPORTER": "otlp",
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=test",
    })
    with stderr_path.open("w") as stderr:
        proc = subprocess.Popen([sys.executable, "-m", "service", "serve"], env=env,
                                stdout=subprocess.PIPE, stderr=stderr, text=True)
    seen: list[str] = []
    try:
        target = _read_until(proc, "diwaniya listening on", seen).rsplit(" ", 1)[1]
        # Logged before the gRPC port opens: the port chosen for DIWANIYA_METRICS_LISTEN=:0.
        started = [json.loads(line) for line in stderr_path.read_text("utf-8").splitlines()]
        metrics_port = next(int(r["msg"].rsplit(" ", 1)[1]) for r in started
                            if r["msg"].startswith("metrics on /metrics, port"))
        trace_id, caller = uuid.uuid4().int >> 1, uuid.uuid4().int >> 65 | 1
        with grpc.insecure_channel(target) as channel:
            stub = pb_grpc.ConversationsStub(channel)
            events = list(stub.SendMessage(
                pb.SendMessageRequest(text=f"{SECRET_AR} {CANARY}", user_id="serve-tele"),
                metadata=(("traceparent", f"00-{trace_id:032x}-{caller:016x}-01"),),
                timeout=60))
        assert events[-1].WhichOneof("event") == "turn_completed"
        scrape = httpx.get(f"http://127.0.0.1:{metrics_port}/metrics", timeout=30)
        assert scrape.status_code == 200
        assert 'diwaniya_rpc_total{code="OK",method="SendMessage"' in scrape.text
        assert "diwaniya_turn_duration_seconds_bucket" in scrape.text
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
            threading.Thread(target=receiver.close, daemon=True).start()
    assert code == 0, "".join(seen) + stderr_path.read_text()

    # OTLP: the spans (flushed at shutdown) continue the caller's trace, as "diwaniya".
    traces = [ExportTraceServiceRequest.FromString(r.body) for r in receiver.requests
              if r.path == "/v1/traces"]
    spans = [(rs.resource, s) for req in traces for rs in req.resource_spans
             for ss in rs.scope_spans for s in ss.spans]
    server = [(res, s) for res, s in spans
              if s.name == "/diwaniya.v1.Conversations/SendMessage"]
    assert server, [s.name for _, s in spans]
    resource, span = server[0]
    attrs = {a.key: a.value.string_value for a in resource.attributes}
    assert attrs["service.name"] == "diwaniya"
    assert attrs["deployment.environment.name"] == "test"
    assert span.trace_id == trace_id.to_bytes(16, "big")
    assert span.parent_span_id == caller.to_bytes(8, "big")
    assert {"graph.node respond", "diwaniya.turn"} <= {s.name for _, s in spans}
    metrics = [ExportMetricsServiceRequest.FromString(r.body) for r in receiver.requests
               if r.path == "/v1/metrics"]
    names = {m.name for req in metrics for rm in req.resource_metrics
             for sm in rm.scope_metrics for m in sm.metrics}
    assert {"diwaniya_rpc", "diwaniya_turn_duration"} <= names

    # Logs: JSON lines on stderr, one per RPC, at DEBUG without the customer's words.
    lines = stderr_path.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert any(r["msg"] == "rpc" and r.get("rpc.method") == "SendMessage"
               and r["trace_id"] == f"{trace_id:032x}" for r in records)
    text = stderr_path.read_text(encoding="utf-8") + "".join(seen)
    assert CANARY not in text and SECRET_AR not in text


@pytest.mark.parametrize(("environ", "kind", "expected"), [
    ({}, "traces", "none"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}, "traces", "otlp"),
    ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, "traces", "otlp"),
    ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_TRACES_EXPORTER": "none"},
     "traces", "none"),
    ({"OTEL_METRICS_EXPORTER": "console"}, "metrics", "console"),
])
def test_exporter_choice_follows_the_standard_variables(
        environ: dict[str, str], kind: str, expected: str) -> None:
    assert exporter_choice(kind, environ, "none") == expected


def test_unsupported_exporter_is_a_clear_configuration_error() -> None:
    from diwaniya.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="OTEL_TRACES_EXPORTER='zipkin'"):
        exporter_choice("traces", {"OTEL_TRACES_EXPORTER": "zipkin"}, "none")


def test_service_name_defaults_to_diwaniya_unless_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    assert resource_from({}).attributes["service.name"] == "diwaniya"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "diwaniya-canary")
    named = resource_from({"OTEL_SERVICE_NAME": "diwaniya-canary"})
    assert named.attributes["service.name"] == "diwaniya-canary"


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("DIWANIYA_METRICS_LISTEN", "9464", "DIWANIYA_METRICS_LISTEN"),
    ("DIWANIYA_LOG_LEVEL", "LOUD", "DIWANIYA_LOG_LEVEL"),
    ("DIWANIYA_LOG_FORMAT", "xml", "DIWANIYA_LOG_FORMAT"),
])
def test_bad_telemetry_settings_exit_2_with_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        variable: str, value: str, message: str) -> None:
    # main() in-process, as the console script calls it: the check is main's.
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIWANIYA_")}
    env.update({"DIWANIYA_DATA_DIR": str(tmp_path), variable: value})
    done = run_cli_with_environ(monkeypatch, capsys, env, "migrate")
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_without_an_exporter_spans_are_dropped_but_keep_the_callers_trace_id() -> None:
    """Recording spans nobody exports costs CPU per turn; the trace id must survive for logs."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    from service.telemetry import Telemetry

    trace_id, caller = uuid.uuid4().int >> 1, uuid.uuid4().int >> 65 | 1
    parent = trace.set_span_in_context(NonRecordingSpan(SpanContext(
        trace_id, caller, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))))
    quiet = Telemetry.configure(environ={})
    try:
        with trace.get_tracer("t").start_as_current_span("quiet", context=parent) as span:
            assert not span.is_recording()
            assert span.get_span_context().trace_id == trace_id
    finally:
        quiet.close()
    exported = InMemorySpanExporter()
    loud = Telemetry.configure(environ={}, span_exporter=exported)
    try:
        with trace.get_tracer("t").start_as_current_span("loud", context=parent) as span:
            assert span.is_recording()
    finally:
        loud.close()
    assert [s.name for s in exported.get_finished_spans()] == ["loud"]


def test_the_services_own_spans_are_not_made_while_nothing_exports() -> None:
    """diwaniya.* tracers skip the SDK's span while nobody exports: the caller's span
    stays current (log lines keep its trace id); with an exporter they record again."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    from service.telemetry import Telemetry

    trace_id, caller = uuid.uuid4().int >> 1, uuid.uuid4().int >> 65 | 1
    rpc = NonRecordingSpan(SpanContext(trace_id, caller, is_remote=True,
                                       trace_flags=TraceFlags(TraceFlags.SAMPLED)))
    own = trace.get_tracer("diwaniya.test")
    quiet = Telemetry.configure(environ={})
    try:
        with trace.use_span(rpc), own.start_as_current_span("graph.node x") as span:
            assert not span.is_recording()
            assert trace.get_current_span() is rpc
        loose = own.start_span("diwaniya.turn")
        assert not loose.is_recording()
        loose.end()
    finally:
        quiet.close()
    exported = InMemorySpanExporter()
    loud = Telemetry.configure(environ={}, span_exporter=exported)
    try:
        with trace.use_span(rpc), own.start_as_current_span("graph.node y") as span:
            assert span.is_recording()
            assert trace.get_current_span() is span
            assert span.get_span_context().trace_id == trace_id
        own.start_span("diwaniya.turn").end()
    finally:
        loud.close()
    assert [s.name for s in exported.get_finished_spans()] == ["graph.node y", "diwaniya.turn"]
