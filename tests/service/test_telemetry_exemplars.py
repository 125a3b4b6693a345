"""Exemplars (a measurement's trace link) are kept exactly where a reader can export them."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, AlwaysOnExemplarFilter
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import ValidationError

from service import Settings
from service.app import configure_telemetry
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


def _filter_of(telemetry: Telemetry) -> object:
    """The filter ``telemetry`` chose (the SDK has no public reading of it); closes it."""
    try:
        return telemetry.meter_provider._sdk_config.exemplar_filter
    finally:
        telemetry.close()


def test_prometheus_alone_samples_no_exemplars(monkeypatch: pytest.MonkeyPatch) -> None:
    # The Prometheus reader drops exemplars: sampling them was CPU for nothing.
    monkeypatch.delenv("OTEL_METRICS_EXEMPLAR_FILTER", raising=False)
    chosen = _filter_of(configure_telemetry(Settings(metrics_listen="127.0.0.1:0")))
    assert isinstance(chosen, AlwaysOffExemplarFilter)


def test_the_operators_exemplar_filter_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # The variable reaches the telemetry through the settings the entry point read.
    monkeypatch.setenv("OTEL_METRICS_EXEMPLAR_FILTER", "always_on")
    settings = Settings(metrics_listen="127.0.0.1:0")
    assert settings.otel_metrics_exemplar_filter == "always_on"
    assert isinstance(_filter_of(configure_telemetry(settings)), AlwaysOnExemplarFilter)


def test_telemetry_reads_no_exemplar_filter_from_the_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the entry point reads settings: a variable the caller did not pass in
    # changes nothing below it (the SDK would read it itself if left to choose).
    monkeypatch.setenv("OTEL_METRICS_EXEMPLAR_FILTER", "always_on")
    chosen = _filter_of(Telemetry.configure(environ={}, metrics_listen="127.0.0.1:0"))
    assert isinstance(chosen, AlwaysOffExemplarFilter)


def test_a_passed_reader_keeps_an_operators_filter() -> None:
    chosen = _filter_of(Telemetry.configure(environ={}, metric_readers=[InMemoryMetricReader()],
                                            exemplar_filter="always_off"))
    assert isinstance(chosen, AlwaysOffExemplarFilter)


def test_an_unknown_exemplar_filter_is_refused_with_the_settings(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_METRICS_EXEMPLAR_FILTER", "sometimes")
    with pytest.raises(ValidationError, match="OTEL_METRICS_EXEMPLAR_FILTER"):
        Settings()
