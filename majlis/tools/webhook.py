"""Tenant webhook tools: the tenant's own backends (orders, bookings…) as tools.

Declared in configuration, called over HTTP with an injected ``httpx.AsyncClient``.
Arguments are validated against the declared JSON Schema *before* any request,
and every failure — schema, timeout, 4xx/5xx, unreachable, invalid JSON —
becomes ``ToolOutcome(ok=False, error=...)`` in plain words. ``run`` never raises.

Example: ``order_status`` with ``{"order_id": "4411"}`` → ``GET …?order_id=4411``
→ ``ToolOutcome(ok=True, content={"status": "في الطريق"})``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import httpx
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from diwaniya.errors import ConfigurationError
from majlis.models.types import ToolSpec
from majlis.tools.base import ToolContext, ToolOutcome

__all__ = ["WebhookTool", "WebhookToolConfig"]

_MAX_ERROR_BODY = 200  # characters of a failing backend's body worth showing


class WebhookToolConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")  # what OpenAI accepts as a name
    description_ar: str
    description_en: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    url: str = Field(pattern=r"^https?://")
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "POST"
    auth_header_name: str | None = None
    auth_secret: SecretStr | None = None
    auth_secret_env: str | None = None  # resolved by the caller via `secrets=`
    timeout_s: float = Field(default=5.0, gt=0, le=120)
    requires_approval: bool = False
    examples: list[str] = Field(default_factory=list)
    parameter_patterns: dict[str, str] = Field(default_factory=dict)

    @field_validator("parameters")
    @classmethod
    def _schema_is_valid(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            Draft202012Validator.check_schema(value)
        except SchemaError as exc:
            raise ValueError(f"parameters is not a valid JSON Schema: {exc.message}") from exc
        return value

    @field_validator("parameter_patterns")
    @classmethod
    def _patterns_compile(cls, value: dict[str, str]) -> dict[str, str]:
        for name, pattern in value.items():
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"parameter_patterns[{name!r}] is not a regex: {exc}") from exc
        return value

    @model_validator(mode="after")
    def _auth_is_complete(self) -> WebhookToolConfig:
        has_secret = self.auth_secret is not None or self.auth_secret_env is not None
        if has_secret != (self.auth_header_name is not None):
            raise ValueError("auth_header_name and auth_secret(_env) go together")
        return self

    def to_spec(self) -> ToolSpec:
        description = self.description_ar
        if self.description_en:
            description = f"{self.description_ar} / {self.description_en}"
        return ToolSpec(
            name=self.name,
            description=description,
            parameters=self.parameters,
            examples=tuple(self.examples),
            parameter_patterns=dict(self.parameter_patterns),
        )


def _validation_error(validator: Draft202012Validator, arguments: Any) -> str | None:
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
    if not errors:
        return None
    first = errors[0]
    where = "/".join(str(p) for p in first.path) or "(arguments)"
    return f"invalid arguments at {where}: {first.message}"


class WebhookTool:
    """A :class:`~majlis.tools.base.Tool` backed by one HTTP endpoint."""

    def __init__(
        self,
        config: WebhookToolConfig,
        client: httpx.AsyncClient,
        *,
        secrets: Mapping[str, str] | None = None,
        clock: Any = time.monotonic,
    ) -> None:
        self.config = config
        self.spec = config.to_spec()
        self.requires_approval = config.requires_approval
        self._client = client
        self._clock = clock
        self._validator = Draft202012Validator(config.parameters)
        self._headers: dict[str, str] = {}
        if config.auth_header_name is not None:
            secret = config.auth_secret.get_secret_value() if config.auth_secret else None
            if secret is None and config.auth_secret_env is not None:
                secret = (secrets or {}).get(config.auth_secret_env)
            if not secret:
                raise ConfigurationError(
                    f"webhook tool {config.name!r}: secret {config.auth_secret_env!r} is not set"
                )
            self._headers[config.auth_header_name] = secret

    @property
    def examples(self) -> Sequence[str]:
        return self.config.examples

    def _timeout(self, ctx: ToolContext) -> float | None:
        timeout = self.config.timeout_s
        if ctx.deadline is not None:
            timeout = min(timeout, ctx.deadline - self._clock())
        return timeout if timeout > 0 else None

    async def run(self, arguments: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        problem = _validation_error(self._validator, arguments)
        if problem is not None:
            return ToolOutcome(ok=False, error=problem)
        timeout = self._timeout(ctx)
        if timeout is None:
            return ToolOutcome(ok=False, error="no time left before the turn deadline")
        headers = {
            **self._headers,
            "X-Diwaniya-Tenant": ctx.tenant,
            "X-Diwaniya-Thread": ctx.thread_id,
            "X-Diwaniya-Turn": ctx.turn_id,
        }
        payload = dict(arguments)
        try:
            response = await self._client.request(
                self.config.method,
                self.config.url,
                params=payload if self.config.method == "GET" else None,
                json=None if self.config.method == "GET" else payload,
                headers=headers,
                timeout=timeout,
            )
        except httpx.TimeoutException:
            return ToolOutcome(ok=False, error=f"the backend did not answer within {timeout:.1f}s")
        except httpx.HTTPError as exc:
            return ToolOutcome(ok=False, error=f"could not reach the backend: {exc!r}")
        if response.status_code >= 400:
            kind = "rejected the request" if response.status_code < 500 else "failed"
            body = response.text[:_MAX_ERROR_BODY]
            return ToolOutcome(
                ok=False, error=f"the backend {kind} (HTTP {response.status_code}): {body}"
            )
        if not response.content:
            return ToolOutcome(ok=True, content=None)
        try:
            return ToolOutcome(ok=True, content=response.json())
        except ValueError:
            return ToolOutcome(
                ok=False,
                error=f"the backend returned invalid JSON (HTTP {response.status_code})",
            )
