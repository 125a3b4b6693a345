"""Operator settings, read once by the entry point (``service.cli``).

Every setting is a ``DIWANIYA_*`` environment variable (``DATABASE_URL`` is
also accepted bare, as Kubernetes secrets and PaaS platforms provide it), or a
key in an optional ``.env``-style file named by ``DIWANIYA_SETTINGS_FILE``.
Nothing below the entry point reads the environment: constructors receive the
values they need.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Literal, Self
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from diwaniya.errors import ConfigurationError
from service.settings_telemetry import TelemetrySettings

PREFIX = "DIWANIYA_"
# DIWANIYA_* variables read outside Settings: the settings file itself, the
# CLI client's key, the supervisor's worker number (service.workers), the test
# and bench databases, and the telemetry setup (docs: agreed telemetry names).
OTHER_VARIABLES = frozenset({
    "DIWANIYA_SETTINGS_FILE", "DIWANIYA_API_KEY", "DIWANIYA_WORKER_INDEX",
    "DIWANIYA_TEST_PG_ADMIN", "DIWANIYA_BENCH_PG",
    "DIWANIYA_METRICS_LISTEN", "DIWANIYA_LOG_FORMAT", "DIWANIYA_LOG_MESSAGE_TEXT",
})
_DSN_SCHEMES = ("postgresql://", "postgres://")
_HTTP = r"^https?://"


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
    model_base_url: str | None = Field(default=None, pattern=_HTTP)
    model_name: str | None = None
    # The name of an environment variable holding the API key (never the key itself).
    model_api_key_env: str | None = None
    model_price_prompt_per_1k: float | None = Field(default=None, ge=0)
    model_price_completion_per_1k: float | None = Field(default=None, ge=0)
    # The tenant's own webhook tools (JSON list); unset: the service-wide tools_file.
    tools_file: Path | None = None
    on_model_failure: Literal["error", "offline"] | None = None

    @field_validator("tools_file")
    @classmethod
    def _check_tools(cls, value: Path | None) -> Path | None:
        return _tools_file(value)
    handoff_webhook_url: str | None = Field(default=None, pattern=r"^https?://")
    handoff_webhook_timeout_s: float | None = Field(default=None, gt=0, le=60)
    handoff_webhook_auth_header: str | None = None
    # The name of an environment variable holding the webhook's secret.
    handoff_webhook_secret_env: str | None = None
    pii_to_model: Literal["masked", "raw"] | None = None
    # Budgets and rate limits (see Settings); unset: the service-wide value.
    rate_limit: str | None = None
    tenant_token_budget: int | None = Field(default=None, ge=0)
    thread_token_budget: int | None = Field(default=None, ge=0)
    tenant_cost_budget_usd: float | None = Field(default=None, ge=0)
    thread_cost_budget_usd: float | None = Field(default=None, ge=0)
    budget_window_s: int | None = Field(default=None, ge=1)
    injection_policy: Literal["flag", "block"] | None = None
    compaction_tokens: int | None = Field(default=None, ge=0)
    compaction_keep_turns: int | None = Field(default=None, ge=1)
    # Idle expiry of this tenant's threads (see Settings); 0: never.
    thread_idle_ttl_s: float | None = Field(default=None, ge=0)


class Settings(BaseSettings, TelemetrySettings):
    """Every setting, as one object; the telemetry group is TelemetrySettings' fields."""

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
    # Run each RPC's start ahead of turns already under way (service.priority's
    # two-lane loop); false: the stock asyncio loop, first in first out.
    front_lane_loop: bool = True

    # --- security (lane s5-secure; docs/security.md, docs/connections.md) ----
    # API key -> tenant. Keys may be given as "sha256:<hex>" (preferred) or in
    # plain text (hashed at load, with a warning). Empty and no keys file: open
    # mode, every caller is tenant "default" — allowed only on loopback or with
    # allow_anonymous (service.auth.check_exposure).
    api_keys: dict[str, str] = Field(default_factory=dict)
    # A JSON file of the same shape (a mounted Secret); re-read when it changes.
    api_keys_file: Path | None = None
    # How often (at most) the keys file is checked for a change, in seconds.
    api_keys_reload_s: float = Field(default=5.0, ge=0)
    allow_anonymous: bool = False
    # Server TLS: cert + key; a client CA verifies client certificates (mTLS).
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    tls_client_ca_file: Path | None = None
    tls_require_client_cert: bool = False
    # The CLI's (chat, thread) side of TLS: the CA to trust, its own cert/key.
    client_tls_ca_file: Path | None = None
    client_tls_cert_file: Path | None = None
    client_tls_key_file: Path | None = None
    reflection: bool = False
    # Plaintext grpc.health.v1 only, for kubelet gRPC probes when TLS is on
    # (they speak no TLS), e.g. 0.0.0.0:8081. Unset: health on `listen` only.
    health_listen: str | None = None
    # GOAWAY after this long (grpc adds ±10% jitter) so clients reconnect and
    # spread over new replicas; open streams then get the grace to finish.
    # None: connections live forever.
    max_connection_age_s: float | None = Field(default=300.0, gt=0)
    max_connection_age_grace_s: float = Field(default=150.0, ge=0)
    # How long a call that reached gRPC may wait for the event loop to take it
    # (grpc.server_max_unrequested_time_in_server). Past it gRPC cancels the call
    # unseen: the client gets CANCELLED with no events and nothing is logged —
    # gRPC's own 30 s did that to 56–161 of 200 streams on an overloaded
    # machine. Kept above every client deadline, a call the loop is late for is
    # served late or ends at the client's own DEADLINE_EXCEEDED, which is the truth.
    accept_timeout_s: int = Field(default=600, ge=1)
    # A replica's PostgreSQL connections across every pool (split in
    # majlis.pg_budget; divided between `serve --workers` processes).
    pg_max_connections: int = Field(default=30, ge=3)
    # pg_stat_activity.application_name of this replica's connections; unset:
    # "diwaniya@<hostname>" (the pod name in Kubernetes).
    pg_application_name: str | None = None

    # --- persistence -------------------------------------------------------
    database_url: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("DIWANIYA_DATABASE_URL", "DATABASE_URL")
    )
    data_dir: Path = Path("./data")
    pool_min_size: int = Field(default=2, ge=1)
    # DIWANIYA_PG_* (alias kept: DIWANIYA_POOL_MAX_SIZE) — the psycopg pool for
    # checkpoints and thread rows.
    # Unset: derived from pg_max_connections (majlis.pg_budget); set, it is
    # taken as is and counted against that budget.
    pool_max_size: int | None = Field(
        default=None, ge=1,
        validation_alias=AliasChoices("DIWANIYA_PG_POOL_MAX", "DIWANIYA_POOL_MAX_SIZE"))
    # One connection per running turn holds its thread's advisory lock.
    pg_lock_pool_max: int | None = Field(default=None, ge=1)
    # Lock connections opened at start and never closed for idling. Unset: the
    # whole lock pool, so a burst of turns never waits for connects one after
    # another (docs/connections.md); they are counted in the budget either way.
    pg_lock_pool_min: int | None = Field(default=None, ge=1)
    # The asyncpg pool of the memory store.
    pg_memory_pool_max: int | None = Field(default=None, ge=1)
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

    # --- knowledge base uploads (diwaniya.v1.Knowledge), UTF-8 bytes of text ---
    # One document's text; more: INVALID_ARGUMENT (split the document).
    kb_max_document_bytes: int = Field(default=1 << 20, ge=1)
    # One UpsertDocuments call's text; more: RESOURCE_EXHAUSTED, nothing written.
    kb_max_upload_bytes: int = Field(default=16 << 20, ge=1)

    # --- turns -------------------------------------------------------------
    concurrency_policy: Literal["reject", "enqueue"] = "reject"
    enqueue_wait_s: float = Field(default=30.0, ge=0)
    enqueue_max_waiters: int = Field(default=8, ge=1)
    max_text_chars: int = Field(default=4000, ge=1)
    max_token_chars: int = Field(default=200, ge=8)
    # How long a request_id replays its finished turn (and rejects different
    # content); older request records are pruned.
    request_replay_window_s: float = Field(default=86400.0, gt=0)
    # A turn that arrives while others of this process have not sent their
    # first event yet says ``queued`` (reason ``starting``) at once, before its
    # own database round trips (majlis.queueing.Starting). false: it does not.
    queued_while_starting: bool = True
    # Build the tables a turn parses on first use (service.warm) before the
    # replica reports ready, not inside its first turns. false: on first use.
    warm_on_start: bool = True
    # ResumeTurn's per-turn event log (majlis.turn_log): rows expire after
    # this many seconds; at most this many events per turn are kept.
    turn_events_ttl_s: float = Field(default=600.0, gt=0)
    turn_events_max: int = Field(default=2000, ge=1)
    # --- retention (majlis.retention, `diwaniya gc`): keep each thread's latest
    # N checkpoints (0: all); a thread with no turn for this long is erased with
    # its memories and reads NOT_FOUND (0: never; per tenant in ``tenants``).
    checkpoints_kept: int = Field(default=0, ge=0)
    thread_idle_ttl_s: float = Field(default=0.0, ge=0)
    long_gap_hours: float = Field(default=6.0, gt=0)

    # --- model (unset base URL: the offline responder) ----------------------
    model_base_url: str | None = Field(default=None, pattern=_HTTP)
    model_name: str = Field(default="gpt-4o-mini", min_length=1)
    model_api_key: SecretStr | None = None
    model_temperature: float = Field(default=0.3, ge=0, le=2)
    model_max_tokens: int = Field(default=512, ge=1)
    model_timeout_s: float = Field(default=60.0, gt=0)
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

    # --- budgets and rate limits, per tenant (overridable in ``tenants``); unset: none.
    # Counted in the database, so they hold across replicas. rate_limit is the
    # ``limits`` notation for the tenant's turns: "2/second;60/minute".
    rate_limit: str | None = None
    # Tokens (prompt + completion) and USD per budget window, per tenant and per thread.
    tenant_token_budget: int | None = Field(default=None, ge=0)
    thread_token_budget: int | None = Field(default=None, ge=0)
    tenant_cost_budget_usd: float | None = Field(default=None, ge=0)
    thread_cost_budget_usd: float | None = Field(default=None, ge=0)
    budget_window_s: int = Field(default=86400, ge=1)

    # --- prompt injection in the customer's message (Arabic, English, Arabizi;
    # majlis.models.injection): "flag" marks the turn (TurnCompleted.safety_flags)
    # and answers as usual; "block" answers a polite refusal without calling the model.
    injection_policy: Literal["flag", "block"] = "flag"

    # --- compaction (majlis.compaction), per tenant overridable: when a thread's
    # history passes this many estimated tokens, the turns before the latest
    # compaction_keep_turns fold into a running summary (by the model when one
    # is configured, else extractively) and leave the checkpoint. 0: never.
    compaction_tokens: int = Field(default=0, ge=0)
    compaction_keep_turns: int = Field(default=4, ge=1)

    # --- observability: service.settings_telemetry (TelemetrySettings) ---

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

    @field_validator("database_url")
    @classmethod
    def _check_dsn(cls, value: SecretStr | None) -> SecretStr | None:
        # Checked here, not by the first connection attempt: a MySQL URL must
        # not cost ten seconds of retries to report. Never echo the URL (password).
        if value is not None and not value.get_secret_value().startswith(_DSN_SCHEMES):
            scheme = value.get_secret_value().partition(":")[0][:20]
            raise ValueError(f"the scheme {scheme!r} is not supported; use a PostgreSQL URL "
                             "(postgresql://user@host:5432/db), or unset it for SQLite")
        return value

    @field_validator("tools_file")
    @classmethod
    def _check_tools(cls, value: Path | None) -> Path | None:
        return _tools_file(value)

    @model_validator(mode="after")
    def _check_ranges(self) -> Self:
        if self.pool_max_size is not None and self.pool_min_size > self.pool_max_size:
            raise ValueError(
                f"DIWANIYA_POOL_MIN_SIZE ({self.pool_min_size}) is larger than "
                f"DIWANIYA_PG_POOL_MAX ({self.pool_max_size})")
        if self.pool_min_size > self.pg_max_connections:
            # The exact query-pool share is checked by service.app.preflight.
            raise ValueError(
                f"DIWANIYA_POOL_MIN_SIZE ({self.pool_min_size}) is larger than "
                f"DIWANIYA_PG_MAX_CONNECTIONS ({self.pg_max_connections})")
        return self

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

    def for_tenant(self, tenant: TenantSettings | None) -> Settings:
        """These settings with the tenant's SET fields laid over them, as data.

        Dict-valued ones (``country_offsets``, ``national_days``) merge key by
        key. A tenant with its own handoff webhook gets none of the service-wide
        webhook's auth (header, secret): another party's credentials must never
        be sent to the tenant's URL.

        >>> s = Settings(persona_name="ديوانية", country_offsets={"KW": 1})
        >>> t = s.for_tenant(TenantSettings(persona_name="مساعد", country_offsets={"SA": -1}))
        >>> t.persona_name, t.country_offsets, t.greeting_style
        ('مساعد', {'KW': 1, 'SA': -1}, 'warm')
        """
        if tenant is None:
            return self
        update = tenant.model_dump(exclude_unset=True, exclude_none=True,
                                   exclude={"model_api_key_env"})
        for name in ("country_offsets", "national_days"):
            if name in update:
                update[name] = {**getattr(self, name), **update[name]}
        if "handoff_webhook_url" in update:
            update.setdefault("handoff_webhook_auth_header", None)
            update.setdefault("handoff_webhook_secret_env", None)
        return self.model_copy(update=update)

    def database_dsn(self) -> str | None:
        return self.database_url.get_secret_value() if self.database_url else None


def _tools_file(value: Path | None) -> Path | None:
    """A tools file must exist and hold a JSON list, checked before anything starts."""
    if value is None:
        return None
    try:
        raw = json.loads(value.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read the tools file {str(value)!r}: {exc.strerror}") from None
    except ValueError as exc:
        raise ValueError(f"the tools file {str(value)!r} is not valid JSON ({exc})") from None
    if not isinstance(raw, list):
        raise ValueError(f"the tools file {str(value)!r} must hold a JSON list of tools")
    return value


def env_names() -> frozenset[str]:
    """Every environment variable :class:`Settings` reads."""
    names: set[str] = set()
    for name, info in Settings.model_fields.items():
        alias = info.validation_alias
        if isinstance(alias, AliasChoices):
            names.update(str(choice).upper() for choice in alias.choices)
        else:
            names.add(f"{PREFIX}{name.upper()}")
    return frozenset(names)


def _named_by(settings: Settings) -> Iterator[str]:
    """Variables that settings name as holding secrets (``*_env`` values)."""
    yield from filter(None, [settings.handoff_webhook_secret_env])
    for tenant in settings.tenants.values():
        yield from filter(None, [tenant.model_api_key_env, tenant.handoff_webhook_secret_env])


def unknown_variables(settings: Settings, environ: Mapping[str, str]) -> list[str]:
    """One warning per ``DIWANIYA_*`` variable nothing reads, with the closest valid name.

    >>> unknown_variables(Settings(), {"DIWANIYA_POOL_MAX_SIZ": "4", "DIWANIYA_LISTEN": "x"})
    ['DIWANIYA_POOL_MAX_SIZ is not a setting and is ignored; did you mean DIWANIYA_POOL_MAX_SIZE?']
    """
    known = env_names() | OTHER_VARIABLES | set(_named_by(settings))
    warnings = []
    for name in sorted(environ):
        if not name.upper().startswith(PREFIX) or name.upper() in known:
            continue
        # Compared without the shared prefix, which would make every name "close".
        stems = {k.removeprefix(PREFIX): k for k in known}
        close = difflib.get_close_matches(name.upper().removeprefix(PREFIX), sorted(stems),
                                          n=1, cutoff=0.6)
        hint = f"; did you mean {stems[close[0]]}?" if close else ""
        warnings.append(f"{name} is not a setting and is ignored{hint}")
    return warnings


def _where(loc: tuple[int | str, ...]) -> str:
    """The variable a validation error is about: ``DIWANIYA_TENANTS (acme.persona_name)``."""
    if not loc:
        return ""
    head = str(loc[0])
    name = head.upper() if head.upper().startswith(PREFIX) or head == "DATABASE_URL" else (
        f"{PREFIX}{head.upper()}")
    rest = ".".join(str(part) for part in loc[1:])
    return f"{name} ({rest}): " if rest else f"{name}: "


def load_settings() -> Settings:
    """The operator's settings from the environment, or a :class:`ConfigurationError`
    of ONE line naming every bad variable (no traceback, no secret values echoed),
    e.g. ``invalid settings — DIWANIYA_MODEL_TIMEOUT_S: Input should be greater than 0``.
    """
    settings_file = os.environ.get("DIWANIYA_SETTINGS_FILE")
    if settings_file and not Path(settings_file).is_file():
        raise ConfigurationError(
            f"invalid settings — DIWANIYA_SETTINGS_FILE: {settings_file!r} is not a file")
    try:
        return Settings(_env_file=settings_file)  # type: ignore[call-arg]
    except SettingsError as exc:
        field = re.search(r'field "(\w+)"', str(exc))
        name = f"{PREFIX}{field.group(1).upper()}" if field else "a setting"
        raise ConfigurationError(
            f"invalid settings — {name}: not valid JSON ({exc.__cause__ or exc}); "
            'write it as JSON, e.g. {"key": "tenant"}') from None
    except ValidationError as exc:
        problems = "; ".join(
            f"{_where(e['loc'])}{e['msg'].removeprefix('Value error, ')}" for e in exc.errors())
        raise ConfigurationError(f"invalid settings — {problems}") from None
