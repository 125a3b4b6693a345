"""The telemetry group of :class:`service.settings.Settings`: traces, metrics, logs.

A mixin, not a nested model: the variables keep their flat names
(``DIWANIYA_METRICS_LISTEN``, ``DIWANIYA_LOG_LEVEL``, ``OTEL_METRICS_EXEMPLAR_FILTER``)
and the entry point still reads one ``Settings`` (``settings.log_level``).
The setup they feed is service.telemetry and service.logs (docs/telemetry.md).

>>> from service.settings import Settings
>>> s = Settings(log_level="debug", metrics_listen="", persona_name="ديوانية")
>>> s.log_level, s.metrics_listen, s.persona_name
('DEBUG', '', 'ديوانية')
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, BaseModel, Field, field_validator


class TelemetrySettings(BaseModel):
    # --- observability: "console" prints one line per finished span (turns) ---
    traces: Literal["off", "console"] = "off"
    # Telemetry (service.telemetry, service.logs); the OTEL_* variables configure
    # OTLP export. The Prometheus endpoint (/metrics) has its own port; "" disables it.
    metrics_listen: str = "127.0.0.1:9464"
    # Which measurements keep an exemplar (a trace link), under OpenTelemetry's
    # own name. Unset: none when only the Prometheus endpoint reads the metrics
    # (it drops exemplars, so sampling them is CPU for nothing), else trace_based.
    otel_metrics_exemplar_filter: Literal["always_on", "always_off", "trace_based"] | None = Field(
        default=None, validation_alias=AliasChoices("OTEL_METRICS_EXEMPLAR_FILTER"))
    log_format: Literal["json", "text"] = "json"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    # The one switch that lets message text into logs (ours and third-party loggers').
    log_message_text: bool = False

    @field_validator("metrics_listen")
    @classmethod
    def _check_metrics_listen(cls, value: str) -> str:
        host, sep, port = value.rpartition(":")
        if value and (not sep or not host or not port.isdigit()):
            raise ValueError("metrics_listen must look like HOST:PORT, e.g. 0.0.0.0:9464, "
                             "or be empty to disable the Prometheus endpoint")
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value
