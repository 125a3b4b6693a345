"""OpenTelemetry for the service: tracing, metrics, and where they are exported.

Only the entry point (``service.app.build_app``, ``diwaniya serve``) calls
:meth:`Telemetry.configure`; everything below it uses the OpenTelemetry *API*
(``trace.get_tracer``) or receives the instruments (:class:`Metrics`).

Configuration is the standard ``OTEL_*`` environment:

* ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES`` (``service.name`` is
  ``diwaniya`` unless one of them names it);
* ``OTEL_TRACES_EXPORTER`` = ``otlp`` | ``console`` | ``none``; unset: ``otlp``
  when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``…_TRACES_ENDPOINT``) is set, else
  ``DIWANIYA_TRACES`` (``console`` | ``off``);
* ``OTEL_METRICS_EXPORTER`` likewise (``otlp`` | ``console`` | ``none``);
  the Prometheus endpoint (``DIWANIYA_METRICS_LISTEN``) is separate and always on
  unless that setting is empty;
* ``OTEL_EXPORTER_OTLP_PROTOCOL`` = ``grpc`` (default) | ``http/protobuf``; the
  exporters read their own ``OTEL_EXPORTER_OTLP_*`` endpoint, headers, timeouts;
* ``OTEL_TRACES_SAMPLER``, ``OTEL_BSP_*``, ``OTEL_METRIC_EXPORT_INTERVAL``: the SDK's;
* ``OTEL_METRICS_EXEMPLAR_FILTER`` is a setting (``Settings.otel_metrics_exemplar_filter``),
  passed in: the default depends on which readers there are.

Invariant: no span attribute, metric label or log field carries message text;
names in docs/operations.md and briefs' metrics list, ids only as span attributes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from opentelemetry import trace
from opentelemetry.metrics import CallbackOptions, Meter, Observation
from opentelemetry.sdk.metrics import (
    AlwaysOffExemplarFilter,
    AlwaysOnExemplarFilter,
    ExemplarFilter,
    MeterProvider,
    TraceBasedExemplarFilter,
)
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricReader,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from prometheus_client import CollectorRegistry

from diwaniya.errors import ConfigurationError

DEFAULT_SERVICE_NAME = "diwaniya"
# OTEL_METRICS_EXEMPLAR_FILTER's values (the SDK's names).
ExemplarFilterName = Literal["always_on", "always_off", "trace_based"]
_EXEMPLAR_FILTERS: dict[str, Callable[[], ExemplarFilter]] = {
    "always_on": AlwaysOnExemplarFilter, "always_off": AlwaysOffExemplarFilter,
    "trace_based": TraceBasedExemplarFilter}
# Seconds: turns stream for up to minutes; pool waits are milliseconds to seconds.
SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
                   120.0)


@dataclass(frozen=True)
class Metrics:
    """The instruments; Prometheus names in the comments (agreed with the k8s lane)."""

    turn_duration: Any         # diwaniya_turn_duration_seconds{outcome}
    turn_first_event: Any      # diwaniya_turn_first_event_seconds
    model_tokens: Any          # diwaniya_model_tokens_total{kind, model}
    model_cost: Any            # diwaniya_model_cost_usd_total{model}
    rpcs: Any                  # diwaniya_rpc_total{method, code}
    active_streams: Any        # diwaniya_active_streams
    model_failures: Any        # diwaniya_model_failures_total{reason}
    pool_wait: Any             # diwaniya_db_pool_wait_seconds{pool}
    turns_by_phase: Any        # diwaniya_turns_by_phase_total{phase}
    turns_by_dialect: Any      # diwaniya_turns_by_dialect_total{dialect}
    lease_heartbeat_failures: Any  # diwaniya_lease_heartbeat_failures_total

    @classmethod
    def create(cls, meter: Meter) -> Metrics:
        return cls(
            turn_duration=meter.create_histogram(
                "diwaniya_turn_duration", unit="s",
                description="Turn wall time, from the request to its last event"),
            turn_first_event=meter.create_histogram(
                "diwaniya_turn_first_event", unit="s",
                description="From the request to the turn's first event (queued or started)"),
            model_tokens=meter.create_counter(
                "diwaniya_model_tokens", description="Model tokens by kind (prompt|completion)"),
            model_cost=meter.create_counter(
                "diwaniya_model_cost_usd", description="Model cost in USD at configured prices"),
            rpcs=meter.create_counter(
                "diwaniya_rpc", description="Finished RPCs by method and gRPC status code"),
            active_streams=meter.create_up_down_counter(
                "diwaniya_active_streams", description="Open streaming RPCs"),
            model_failures=meter.create_counter(
                "diwaniya_model_failures",
                description="Model calls that failed after their retries, by reason"),
            pool_wait=meter.create_histogram(
                "diwaniya_db_pool_wait", unit="s",
                description="Time waited for a pooled database connection"),
            turns_by_phase=meter.create_counter(
                "diwaniya_turns_by_phase", description="Completed turns by Majlis phase"),
            turns_by_dialect=meter.create_counter(
                "diwaniya_turns_by_dialect", description="Completed turns by thread dialect"),
            lease_heartbeat_failures=meter.create_counter(
                "diwaniya_lease_heartbeat_failures",
                description="Failed renewals of a running turn's thread lease (SQLite)"),
        )


# One pool's "used" and "idle" connection counts, read on each collection.
PoolReading = Callable[[], tuple[int, int]]


class _Forward(SpanProcessor):
    """The process-wide span processor: forwards to each live Telemetry's processors.

    The global tracer provider can be set once per process, but an App (and
    its exporters) is built per process in production and per test in tests.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._targets: tuple[SpanProcessor, ...] = ()

    def add(self, processor: SpanProcessor) -> None:
        with self._lock:
            self._targets = (*self._targets, processor)

    def remove(self, processor: SpanProcessor) -> None:
        with self._lock:
            self._targets = tuple(p for p in self._targets if p is not processor)

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        for p in self._targets:
            p.on_start(span, parent_context=parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        for p in self._targets:
            p.on_end(span)

    def shutdown(self) -> None:
        for p in self._targets:
            p.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return all(p.force_flush(timeout_millis) for p in self._targets)


    @property
    def exporting(self) -> bool:
        return bool(self._targets)


_FORWARD = _Forward()
_INSTALL_LOCK = threading.Lock()
_installed: TracerProvider | None = None


class _WhenExported(Sampler):
    """The configured sampler while spans are exported; otherwise DROP.

    A dropped span still carries its trace id (the caller's, from
    ``traceparent``), so log lines keep correlating; but nothing is recorded
    for nobody — measured at ~2 ms of CPU per turn (bench/load.py).
    """

    def __init__(self, inner: Sampler) -> None:
        self._inner = inner

    def should_sample(self, parent_context: Any, trace_id: int, name: str, kind: Any = None,
                      attributes: Any = None, links: Any = None, trace_state: Any = None
                      ) -> SamplingResult:
        if not _FORWARD.exporting:
            return SamplingResult(Decision.DROP)
        return self._inner.should_sample(parent_context, trace_id, name, kind, attributes,
                                         links, trace_state)

    def get_description(self) -> str:
        return f"WhenExported{{{self._inner.get_description()}}}"


class _Unrecorded:
    """``start_as_current_span`` of a span nobody records: the context is left as it is.

    The span the SDK would make is dropped by :class:`_WhenExported` anyway;
    only its making (a random span id, the sampler, a context attach and detach,
    three generator context managers) is skipped. The current span — the RPC's,
    which carries the caller's trace id for the log lines — stays current.
    """

    __slots__ = ()

    def __enter__(self) -> trace.Span:
        return trace.INVALID_SPAN

    def __exit__(self, *exc: object) -> None:
        return None


_UNRECORDED = _Unrecorded()


class _QuietTracer(trace.Tracer):
    """The service's own tracer (``diwaniya.*``): the SDK's while spans are exported,
    and no span at all while they are not (about ten spans a turn)."""

    def __init__(self, inner: trace.Tracer) -> None:
        self._inner = inner

    def start_span(self, name: str, *args: Any, **kwargs: Any) -> trace.Span:
        if _FORWARD.exporting:
            return self._inner.start_span(name, *args, **kwargs)
        return trace.INVALID_SPAN

    def start_as_current_span(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if _FORWARD.exporting:
            return self._inner.start_as_current_span(name, *args, **kwargs)
        return _UNRECORDED


class _Provider(TracerProvider):
    def get_tracer(self, instrumenting_module_name: str, *args: Any,
                   **kwargs: Any) -> trace.Tracer:
        tracer = super().get_tracer(instrumenting_module_name, *args, **kwargs)
        # Only the service's tracers: the gRPC interceptor's server span must be made
        # (dropped or not) — it carries the caller's traceparent into the RPC's context.
        if instrumenting_module_name.startswith("diwaniya."):
            return _QuietTracer(tracer)
        return tracer


def _global_tracer_provider(resource: Resource) -> TracerProvider:
    """Install (once) the SDK tracer provider every ``trace.get_tracer`` resolves to."""
    global _installed
    with _INSTALL_LOCK:
        if _installed is None:
            # The SDK's own choice from OTEL_TRACES_SAMPLER / _ARG (default parentbased_always_on).
            configured = TracerProvider(shutdown_on_exit=False).sampler
            _installed = _Provider(resource=resource, sampler=_WhenExported(configured))
            _installed.add_span_processor(_FORWARD)
            trace.set_tracer_provider(_installed)
        return _installed


def resource_from(environ: Mapping[str, str]) -> Resource:
    """The SDK's resource from OTEL_* (its detector), ``service.name`` defaulting to diwaniya."""
    named = environ.get("OTEL_SERVICE_NAME") or "service.name=" in environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", "")
    base = Resource.create({})  # OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME (process env)
    if named:
        return base
    return base.merge(Resource({"service.name": DEFAULT_SERVICE_NAME}))


def exporter_choice(kind: str, environ: Mapping[str, str], fallback: str) -> str:
    """``otlp`` | ``console`` | ``none`` for ``traces`` or ``metrics``."""
    raw = environ.get(f"OTEL_{kind.upper()}_EXPORTER", "").strip().lower()
    if raw:
        if raw not in ("otlp", "console", "none"):
            raise ConfigurationError(
                f"OTEL_{kind.upper()}_EXPORTER={raw!r} is not supported: use otlp, console "
                "or none (Prometheus is DIWANIYA_METRICS_LISTEN)")
        return raw
    if environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get(
            f"OTEL_EXPORTER_OTLP_{kind.upper()}_ENDPOINT"):
        return "otlp"
    return fallback


def _protocol(kind: str, environ: Mapping[str, str]) -> str:
    raw = (environ.get(f"OTEL_EXPORTER_OTLP_{kind.upper()}_PROTOCOL")
           or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") or "grpc").strip().lower()
    if raw not in ("grpc", "http/protobuf"):
        raise ConfigurationError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={raw!r} is not supported: use grpc or http/protobuf")
    return raw


def _otlp_span_exporter(environ: Mapping[str, str]) -> SpanExporter:
    # The exporters read OTEL_EXPORTER_OTLP_* (endpoint, headers, timeout) themselves.
    if _protocol("traces", environ) == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        return OTLPSpanExporter()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
        OTLPSpanExporter as HTTPSpanExporter,
    )
    return HTTPSpanExporter()


def _otlp_metric_reader(environ: Mapping[str, str]) -> MetricReader:
    if _protocol("metrics", environ) == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        return PeriodicExportingMetricReader(OTLPMetricExporter())
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HTTPMetricExporter,
    )
    return PeriodicExportingMetricReader(HTTPMetricExporter())


class Telemetry:
    """One App's exporters, meter provider and instruments; ``close()`` flushes them."""

    def __init__(self, *, resource: Resource, span_processors: Sequence[SpanProcessor],
                 metric_readers: Sequence[MetricReader], metrics_listen: str,
                 exemplar_filter: ExemplarFilterName | None = None) -> None:
        self.resource = resource
        self.tracer_provider = _global_tracer_provider(resource)
        self._span_processors = tuple(span_processors)
        for p in self._span_processors:
            _FORWARD.add(p)
        self.registry = CollectorRegistry()
        readers = list(metric_readers)
        if metrics_listen:
            from opentelemetry.exporter.prometheus import PrometheusMetricReader

            # Its own registry, not prometheus_client's global one: one App, one endpoint.
            readers.append(PrometheusMetricReader(registry=self.registry))
        self.metrics_listen = metrics_listen
        views = [View(instrument_name=name, aggregation=ExplicitBucketHistogramAggregation(
            SECONDS_BUCKETS)) for name in ("diwaniya_turn_duration", "diwaniya_turn_first_event",
                                           "diwaniya_db_pool_wait")]
        # Exemplars (a measurement's trace link) reach only a reader passed in
        # (OTLP, console, a test's): the Prometheus reader drops them. With no
        # such reader the SDK's default filter still asks for the current span
        # at each of a turn's ~12 recordings, for nothing (bench/cpu_turn.py).
        # ``exemplar_filter`` (OTEL_METRICS_EXEMPLAR_FILTER, from the settings),
        # when set, is the operator's choice. Always passed: the SDK would
        # otherwise read the process environment itself.
        chosen = exemplar_filter or ("trace_based" if metric_readers else "always_off")
        self.meter_provider = MeterProvider(
            metric_readers=readers, resource=resource, views=views,
            exemplar_filter=_EXEMPLAR_FILTERS[chosen]())
        self.meter = self.meter_provider.get_meter("diwaniya.service")
        self.metrics = Metrics.create(self.meter)
        self._pools: dict[str, PoolReading] = {}
        self.meter.create_observable_gauge(
            "diwaniya_db_pool_connections", callbacks=[self._observe_pools],
            description="Pooled database connections by pool and state (used|idle)")
        self._http: Any = None
        self.metrics_port = 0

    @classmethod
    def configure(cls, *, environ: Mapping[str, str], traces: str = "off",
                  metrics_listen: str = "", span_exporter: SpanExporter | None = None,
                  metric_readers: Sequence[MetricReader] = (),
                  exemplar_filter: ExemplarFilterName | None = None) -> Telemetry:
        """From the OTEL_* environment (exporters) and the settings (``traces``,
        ``metrics_listen``, ``exemplar_filter``); tests pass an in-memory exporter and
        reader."""
        processors: list[SpanProcessor] = []
        chosen = exporter_choice("traces", environ, "console" if traces == "console" else "none")
        if chosen == "otlp":
            processors.append(BatchSpanProcessor(_otlp_span_exporter(environ)))
        elif chosen == "console":
            processors.append(SimpleSpanProcessor(ConsoleSpanExporter(
                formatter=lambda span: span.to_json(indent=None) + "\n")))
        if span_exporter is not None:
            processors.append(SimpleSpanProcessor(span_exporter))
        readers = list(metric_readers)
        metrics_choice = exporter_choice("metrics", environ, "none")
        if metrics_choice == "otlp":
            readers.append(_otlp_metric_reader(environ))
        elif metrics_choice == "console":
            readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter()))
        return cls(resource=resource_from(environ), span_processors=processors,
                   metric_readers=readers, metrics_listen=metrics_listen,
                   exemplar_filter=exemplar_filter)

    def interceptors(self, tenant_of: Any) -> list[Any]:
        """The server interceptors, outermost first: the trace (continuing the caller's
        ``traceparent``), then the RPC log line and metrics, inside that span."""
        from opentelemetry.instrumentation.grpc import aio_server_interceptor

        from service.closing import InnerClosing
        from service.observe import ObservingInterceptor

        # OpenTelemetry's stream wrapper drops, unclosed, the generator it iterates
        # when it is closed early: InnerClosing has it closed first (service.closing).
        return [aio_server_interceptor(tracer_provider=self.tracer_provider), InnerClosing(),
                ObservingInterceptor(self.metrics, tenant_of)]

    # ----------------------------------------------------------------- pools
    def watch_pool(self, name: str, reading: PoolReading) -> None:
        """Report ``reading() -> (used, idle)`` as diwaniya_db_pool_connections{pool=name}."""
        self._pools[name] = reading

    def _observe_pools(self, _options: CallbackOptions) -> Iterable[Observation]:
        out = []
        for name, reading in list(self._pools.items()):
            try:
                used, idle = reading()
            except Exception:  # a closed pool: nothing to report this time
                continue
            out.append(Observation(used, {"pool": name, "state": "used"}))
            out.append(Observation(idle, {"pool": name, "state": "idle"}))
        return out

    # ------------------------------------------------------- Prometheus HTTP
    def serve_metrics(self, listen: str | None = None) -> int:
        """Start the Prometheus endpoint (``/metrics``) on its own port; returns the port."""
        listen = self.metrics_listen if listen is None else listen
        if not listen:
            return 0
        if self._http is not None:
            return self.metrics_port
        from prometheus_client import start_http_server

        host, _, port = listen.rpartition(":")
        try:
            server, _thread = start_http_server(int(port), addr=host or "127.0.0.1",
                                                registry=self.registry)
        except OSError as exc:
            raise ConfigurationError(
                f"DIWANIYA_METRICS_LISTEN={listen}: cannot listen ({exc}); choose a free "
                "port, or set it empty to disable the Prometheus endpoint") from exc
        self._http = server
        self.metrics_port = int(server.server_port)
        return self.metrics_port

    def close(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
        for p in self._span_processors:
            p.force_flush()
            _FORWARD.remove(p)
            p.shutdown()
        self.meter_provider.shutdown()
