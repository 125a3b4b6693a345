"""A module-level tracer that reaches the installed provider's tracer directly.

``trace.get_tracer(name)`` at import time — before the service installs its
tracer provider (service.telemetry) — returns OpenTelemetry's ``ProxyTracer``
for good. Its ``start_as_current_span`` is a generator context manager around
the real tracer's: about ten Python calls more a span, ten spans a turn, and
it hides the service's no-op path for spans nobody exports (service.telemetry's
``_QuietTracer``) behind that wrapper. :class:`DeferredTracer` asks the provider
for the real tracer at first use once one is installed, and keeps it; until
then it is the proxy, as before.

>>> _tracer = DeferredTracer("diwaniya.majlis.graph")
>>> with _tracer.start_as_current_span("graph.node analyse"):   # doctest: +SKIP
...     ...
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace


class DeferredTracer(trace.Tracer):
    __slots__ = ("_name", "_proxy", "_real")

    def __init__(self, name: str) -> None:
        self._name = name
        self._proxy = trace.get_tracer(name)
        self._real: trace.Tracer | None = None

    def _tracer(self) -> trace.Tracer:
        real = self._real
        if real is None:
            if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
                return self._proxy  # none installed yet: the proxy follows when one is
            real = self._real = trace.get_tracer(self._name)
        return real

    def start_span(self, name: str, *args: Any, **kwargs: Any) -> trace.Span:
        return self._tracer().start_span(name, *args, **kwargs)

    def start_as_current_span(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self._tracer().start_as_current_span(name, *args, **kwargs)
