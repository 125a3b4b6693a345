"""Exemplars (a measurement's trace link) are kept exactly where a reader can export them."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from service.telemetry import Telemetry


def test_a_passed_reader_gets_the_trace_of_a_measurement_made_in_a_span() -> None:
    # OTLP, console and tests' readers are passed in: their exemplars must stay.
    reader = InMemoryMetricReader()
    telemetry = Telemetry.configure(environ={}, span_exporter=InMemorySpanExporter(),
                                    metric_readers=[reader])
    try:
        tracer = telemetry.tracer_provider.get_tracer("diwaniya.test")
        with tracer.start_as_current_span("turn") as span:
            telemetry.metrics.turn_duration.record(0.25, {"outcome": "completed"})
        data = reader.get_metrics_data()
    finally:
        telemetry.close()
    assert data is not None
    points = [p for rm in data.resource_metrics for sm in rm.scope_metrics
              for m in sm.metrics if m.name == "diwaniya_turn_duration" for p in m.data.data_points]
    assert [e.trace_id for p in points for e in p.exemplars] == [span.get_span_context().trace_id]


def test_prometheus_alone_samples_no_exemplars(monkeypatch: pytest.MonkeyPatch) -> None:
    # The Prometheus reader drops exemplars: sampling them was CPU for nothing.
    # (The SDK has no public reading of its filter.)
    monkeypatch.delenv("OTEL_METRICS_EXEMPLAR_FILTER", raising=False)
    telemetry = Telemetry.configure(environ={}, metrics_listen="127.0.0.1:0")
    try:
        chosen = telemetry.meter_provider._sdk_config.exemplar_filter
    finally:
        telemetry.close()
    assert isinstance(chosen, AlwaysOffExemplarFilter)


def test_the_operators_exemplar_filter_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_METRICS_EXEMPLAR_FILTER", "always_on")
    telemetry = Telemetry.configure(environ={}, metrics_listen="127.0.0.1:0")
    try:
        chosen = telemetry.meter_provider._sdk_config.exemplar_filter
    finally:
        telemetry.close()
    assert not isinstance(chosen, AlwaysOffExemplarFilter)
