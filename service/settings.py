"""Operator settings, read once by the entry point (``service.cli``).

Every setting is a ``DIWANIYA_*`` environment variable (``DATABASE_URL`` is
also accepted bare, as Kubernetes secrets and PaaS platforms provide it), or a
key in an optional ``.env``-style file named by ``DIWANIYA_SETTINGS_FILE``.
Nothing below the entry point reads the environment: constructors receive the
values they need.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class TenantSettings(BaseModel):
    """One tenant's overrides; anything left unset uses the service-wide value."""

    model_config = ConfigDict(extra="forbid")

    persona_name: str | None = None
    register_policy: Literal["mirror", "msa"] | None = None
    formality_floor: Literal["formal", "neutral", "casual"] | None = None
    greeting_style: Literal["warm", "brief"] | None = None
    religious_greetings: bool | None = None
    national_days: dict[str, list[tuple[int, int, str]]] | None = None
    country_offsets: dict[str, int] | None = None
    model_base_url: str | None = None
    model_name: str | None = None
    # The name of an environment variable holding the API key (never the key itself).
    model_api_key_env: str | None = None
    model_price_prompt_per_1k: float | None = Field(default=None, ge=0)
    model_price_completion_per_1k: float | None = Field(default=None, ge=0)
    # The tenant's own webhook tools (JSON list); unset: the service-wide tools_file.
    tools_file: Path | None = None
    on_model_failure: Literal["error", "offline"] | None = None
    handoff_webhook_url: str | None = Field(default=None, pattern=r"^https?://")
    handoff_webhook_timeout_s: float | None = Field(default=None, gt=0, le=60)
    handoff_webhook_auth_header: str | None = None
    # The name of an environment variable holding the webhook's secret.
    handoff_webhook_secret_env: str | None = None
    pii_to_model: Literal["masked", "raw"] | None = None


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="DIWANIYA_",
        env_file=os.environ.get("DIWANIYA_SETTINGS_FILE"),
        env_file_encoding="utf-8",
        extra="ignore",
        # DIWANIYA_PREPARE_THRESHOLD=none (any optional setting) means None.
        env_parse_none_str="none",
        # Settings(pool_max_size=4) as well as DIWANIYA_PG_POOL_MAX=4.
        populate_by_name=True,
    )

    # --- network -----------------------------------------------------------
    listen: str = "127.0.0.1:50051"
    reflection: bool = True
    max_message_bytes: int = Field(default=1 << 20, ge=4096)
    max_concurrent_streams: int = Field(default=256, ge=1)
    keepalive_time_s: int = Field(default=60, ge=10)
    keepalive_timeout_s: int = Field(default=20, ge=1)
    drain_grace_s: float = Field(default=20.0, ge=0)
    drain_delay_s: float = Field(default=2.0, ge=0)
    readiness_interval_s: float = Field(default=5.0, gt=0)
    default_turn_timeout_s: float = Field(default=120.0, gt=0)
    # Server processes sharing the port (``serve --workers`` overrides it);
    # unset: the CPU quota (cgroup cpu.max, else the usable CPUs). See service.workers.
    workers: int | None = Field(default=None, ge=1)

    # --- auth: API key -> tenant. Empty: open mode, every caller is tenant "default".
    api_keys: dict[str, str] = Field(default_factory=dict)

    # --- persistence -------------------------------------------------------
    database_url: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("DIWANIYA_DATABASE_URL", "DATABASE_URL")
    )
    data_dir: Path = Path("./data")
    pool_min_size: int = Field(default=2, ge=1)
    # DIWANIYA_PG_* (alias kept: DIWANIYA_POOL_MAX_SIZE) — the psycopg pool for
    # checkpoints and thread rows.
    pool_max_size: int = Field(
        default=20, ge=1,
        validation_alias=AliasChoices("DIWANIYA_PG_POOL_MAX", "DIWANIYA_POOL_MAX_SIZE"))
    # One connection per running turn holds its thread's advisory lock.
    pg_lock_pool_max: int = Field(default=64, ge=1)
    # The asyncpg pool of the memory store.
    pg_memory_pool_max: int = Field(default=10, ge=1)
    # How long a call waits for a pooled connection before it fails: a turn
    # with RESOURCE_EXHAUSTED (pool busy) or UNAVAILABLE (database down).
    pg_checkout_timeout_s: float = Field(default=5.0, gt=0)
    # TCP connect + authentication of one new connection.
    pg_connect_timeout_s: float = Field(default=3.0, gt=0)
    # One statement on the memory store (asyncpg command_timeout).
    pg_command_timeout_s: float = Field(default=10.0, gt=0)
    # Callers that may queue for a psycopg connection at once; more fail fast.
    pg_max_waiting: int = Field(default=256, ge=0)
    # How long one reconnection attempt backs off (1 s, 2 s, …) before it gives
    # up and the next demand (a call, the readiness check) starts over at 1 s:
    # this bounds recovery after an outage of any length to a few seconds.
    pg_reconnect_timeout_s: float = Field(default=4.0, gt=0)
    # The Retry-After hint (google.rpc.RetryInfo) sent with UNAVAILABLE.
    retry_after_s: float = Field(default=1.0, ge=0)
    # psycopg prepares a statement after this many uses; None disables
    # prepared statements, which transaction-mode PgBouncer requires.
    prepare_threshold: int | None = 5
    migrate_on_start: bool = True

    # --- search keys (memory and knowledge base) ----------------------------
    # "camel": camel-tools lemmas (extra diwaniya[camel] plus its morphology
    # data).  Index and query keys must come from one function, so changing
    # this means re-ingesting the knowledge base and memories.
    search_keys: Literal["builtin", "camel"] = "builtin"
    # A camel-tools builtin database name, or the path of a morphology .db file.
    camel_db: str = "calima-msa-r13"
    # camel-tools' data folder; unset: CAMELTOOLS_DATA, else ~/.camel_tools.
    camel_data_dir: Path | None = None
    # DIWANIYA_MEMORY_TYPO_STAGE: the memory stores' typo second stage
    # (memory.typo: pg_trgm / FTS5 trigram over the vocabulary) for queries
    # with keys no record holds.  false: exact keys only, and PostgreSQL
    # needs no pg_trgm extension.
    memory_typo_stage: bool = True

    # --- turns -------------------------------------------------------------
    concurrency_policy: Literal["reject", "enqueue"] = "reject"
    enqueue_wait_s: float = Field(default=30.0, ge=0)
    enqueue_max_waiters: int = Field(default=8, ge=1)
    max_text_chars: int = Field(default=4000, ge=1)
    max_token_chars: int = Field(default=200, ge=8)
    # How long a request_id replays its finished turn (and rejects different
    # content); older request records are pruned.
    request_replay_window_s: float = Field(default=86400.0, gt=0)
    long_gap_hours: float = Field(default=6.0, gt=0)

    # --- model (unset base URL: the offline responder) ----------------------
    model_base_url: str | None = None
    model_name: str = "gpt-4o-mini"
    model_api_key: SecretStr | None = None
    model_temperature: float = 0.3
    model_max_tokens: int = 512
    model_timeout_s: float = 60.0
    model_price_prompt_per_1k: float = Field(default=0.0, ge=0)
    model_price_completion_per_1k: float = Field(default=0.0, ge=0)
    # JSON list of webhook tool declarations (majlis.tools.WebhookToolConfig);
    # their auth secrets are named by ``auth_secret_env`` and read from the environment.
    tools_file: Path | None = None
    # When the model fails after its retries: "error" fails the turn UNAVAILABLE
    # (nothing saved, the caller retries); "offline" answers with the offline responder.
    on_model_failure: Literal["error", "offline"] = "error"

    # --- handoff to a person: POSTed once per handoff (JSON: thread, reason, summary) ---
    handoff_webhook_url: str | None = Field(default=None, pattern=r"^https?://")
    handoff_webhook_timeout_s: float = Field(default=5.0, gt=0, le=60)
    handoff_webhook_auth_header: str | None = None
    handoff_webhook_secret_env: str | None = None

    # --- personal data: always masked before storage (cards, IBANs, national IDs,
    # phones, e-mail; see nlp.pii). "raw" lets the turn's own message reach the
    # model as typed; "masked" (default) sends the masked text.
    pii_to_model: Literal["masked", "raw"] = "masked"

    # --- observability: "console" prints one line per finished span (turns) ---
    traces: Literal["off", "console"] = "off"

    # --- tenants: {"acme": {"persona_name": "…", "model_base_url": "…"}} ---
    tenants: dict[str, TenantSettings] = Field(default_factory=dict)

    # --- Majlis -------------------------------------------------------------
    persona_name: str = "ديوانية"
    register_policy: Literal["mirror", "msa"] = "mirror"
    formality_floor: Literal["formal", "neutral", "casual"] = "neutral"
    greeting_style: Literal["warm", "brief"] = "warm"
    # Opt in to worship-specific wishes (Friday, fasting); off: a neutral «رمضان كريم».
    religious_greetings: bool = False
    default_timezone: str = "Asia/Kuwait"
    country_offsets: dict[str, int] = Field(default_factory=dict)
    # Tenant overrides of the national-days table: {"KW": [[2, 25, "اليوم الوطني"]]}.
    national_days: dict[str, list[tuple[int, int, str]]] = Field(default_factory=dict)

    @field_validator("listen")
    @classmethod
    def _check_listen(cls, value: str) -> str:
        host, sep, port = value.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError("listen must look like HOST:PORT, e.g. 0.0.0.0:50051")
        return value

    @field_validator("default_timezone")
    @classmethod
    def _check_timezone(cls, value: str) -> str:
        # Checked at start-up: a typo here would otherwise fail every turn
        # without a client timezone, as INTERNAL.
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"{value!r} is not an IANA time zone such as Asia/Kuwait") from None
        return value

    def database_dsn(self) -> str | None:
        return self.database_url.get_secret_value() if self.database_url else None
