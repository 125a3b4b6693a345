"""The composition root: the only code that turns settings into objects.

Everything below takes its dependencies in its constructor; this module reads
:class:`~service.settings.Settings` once and wires the product together, for
the server, the CLI and the tests alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
from pydantic import ValidationError

import nlp
from diwaniya.errors import ConfigurationError
from majlis import culture
from majlis.budgets import BudgetPolicy, TurnBudgets, parse_rate
from majlis.compaction import CompactionPolicy
from majlis.config import settings_values
from majlis.engine import ConversationEngine, EngineConfig
from majlis.graph import GraphDeps, build_graph
from majlis.limit_storage import Counters, DatabaseStorage, PostgresCounters, SqliteCounters
from majlis.models import ChatModel, ModelConfig, OfflineResponder
from majlis.models.injection import CanaryGuard
from majlis.persistence import Persistence, PoolOptions, open_postgres, open_sqlite
from majlis.pg_budget import PoolBudget, application_name, split_budget
from majlis.prompt import CANARY
from majlis.retention import RetentionPolicy
from majlis.tenants import Tenant, Tenants
from majlis.tools import WebhookTool, WebhookToolConfig
from majlis.tools.per_turn import TurnTools
from majlis.turn_guard import GuardedEngine
from memory import MemoryStore, RuleFactExtractor, open_store
from memory.kb import UploadLimits
from nlp import KeyFunction
from service.auth import ApiKeyAuth, check_exposure
from service.instrument import instrument
from service.keys import dialect_identifier, search_key_function
from service.knowledge import KnowledgeServicer
from service.opening import Pending
from service.server import Server, ServerOptions, ServerTls
from service.servicer import ConversationsServicer
from service.settings import Settings, TenantSettings
from service.telemetry import Telemetry
from service.warm import warm_up


@dataclass
class App:
    settings: Settings
    engine: ConversationEngine
    persistence: Persistence
    store: MemoryStore
    http: httpx.AsyncClient
    draining: asyncio.Event = field(default_factory=asyncio.Event)
    telemetry: Telemetry | None = None
    # Everything build_app opened, closed in reverse order by close().
    resources: contextlib.AsyncExitStack = field(default_factory=contextlib.AsyncExitStack)
    budgets: TurnBudgets | None = None

    async def ready(self) -> None:
        await self.persistence.ping()

    def server(self, *, listen: str | None = None, reuse_port: bool = False) -> Server:
        return build_server(self.settings, Pending(self), self.draining, self.telemetry,
                            listen=listen, reuse_port=reuse_port)

    async def close(self) -> None:
        """Close everything build_app opened; a second call does nothing."""
        await self.resources.aclose()


def build_server(settings: Settings, app: Pending[App], draining: asyncio.Event,
                 telemetry: Telemetry | None, *, listen: str | None = None,
                 reuse_port: bool = False) -> Server:
    """The gRPC server of ``app``, which may not be open yet (service.opening).

    Until ``app`` is set, every RPC answers UNAVAILABLE with RetryInfo and
    readiness NOT_SERVING; liveness is SERVING from the bind.
    """
    s = settings
    auth = ApiKeyAuth(s.api_keys, keys_file=s.api_keys_file, reload_s=s.api_keys_reload_s)
    check_exposure(listen or s.listen, auth, allow_anonymous=s.allow_anonymous)
    servicer = ConversationsServicer(lambda: app.get().engine, auth, draining)
    knowledge = KnowledgeServicer(
        lambda: app.get().store, auth,
        UploadLimits(max_document_bytes=s.kb_max_document_bytes,
                     max_upload_bytes=s.kb_max_upload_bytes), draining)
    options = ServerOptions.from_settings(
        s, listen=listen or s.listen, reuse_port=reuse_port,
        tls=ServerTls.from_settings(s.tls_cert_file, s.tls_key_file, s.tls_client_ca_file,
                                    s.tls_require_client_cert),
        interceptors=telemetry.interceptors(auth.tenant) if telemetry else (),
    )

    async def ready() -> None:
        await app.get().ready()

    return Server(servicer, ready, options, draining, knowledge)


def model_config(settings: Settings, tenant: TenantSettings | None = None,
                 secrets: Mapping[str, str] | None = None) -> ModelConfig | None:
    """The tenant's model (its overrides over the service's settings); None: offline."""
    s = settings.for_tenant(tenant)
    if not s.model_base_url:
        return None
    key = s.model_api_key.get_secret_value() if s.model_api_key else None
    key_env = tenant.model_api_key_env if tenant else None
    if key_env:
        key = (secrets or {}).get(key_env)
        if key is None:
            raise ConfigurationError(
                f"model_api_key_env {key_env!r} is not set in the environment")
    extra: dict[str, Any] = {"api_key": key} if key else {}
    return ModelConfig(
        base_url=s.model_base_url, model=s.model_name, temperature=s.model_temperature,
        max_tokens=s.model_max_tokens, timeout_s=s.model_timeout_s,
        price_prompt_per_1k=s.model_price_prompt_per_1k,
        price_completion_per_1k=s.model_price_completion_per_1k, **extra)


def build_tenant(settings: Settings, tenant: TenantSettings | None = None, *,
                 http: httpx.AsyncClient, secrets: Mapping[str, str] | None = None,
                 model: ChatModel | None = None,
                 webhooks: list[WebhookToolConfig] | None = None) -> Tenant:
    s = settings.for_tenant(tenant)
    calendar = culture.SeasonCalendar(country_offsets=s.country_offsets,
                                      national_days=s.national_days or None)
    # The calendar carries the national days and offsets; the profile, the voice.
    profile = culture.ToneProfile(**settings_values(
        culture.ToneProfile, s, skip={"national_days", "hijri_offsets"}))
    config = model_config(settings, tenant, secrets)
    if model is None:
        model = (CanaryGuard(hosted_model(config), CANARY) if config
                 else OfflineResponder(keys=nlp.search_keys, expand=nlp.dialect_to_msa,
                                       dialect_cue=nlp.has_dialect_words))
    if webhooks is None:
        webhooks = load_webhooks(s.tools_file)
    tools = tuple(WebhookTool(cfg, http, secrets=secrets) for cfg in webhooks)
    # Only a configured model can fail; the offline responder is its own fallback.
    fallback = (OfflineResponder(keys=nlp.search_keys)
                if config is not None and s.on_model_failure == "offline" else None)
    return Tenant(profile, calendar, model, config.pricing() if config else None, tools,
                  fallback=fallback, handoff_webhook=handoff_webhook(s, http, secrets),
                  pii_to_model=s.pii_to_model,
                  # A model summarises the folded turns; the offline responder cannot.
                  compaction=CompactionPolicy.from_settings(
                      s, by_model=not isinstance(model, OfflineResponder)))


def hosted_model(config: ModelConfig) -> ChatModel:
    """The OpenAI-compatible client for ``config``, imported only when a model is set:
    ``openai`` and ``langchain_openai`` are a third of a ``serve`` start-up otherwise."""
    from majlis.models.openai_compat import OpenAICompatibleModel

    return OpenAICompatibleModel(config)


def handoff_webhook(settings: Settings, http: httpx.AsyncClient,
                    secrets: Mapping[str, str] | None) -> WebhookTool | None:
    """The handoff webhook of (tenant-merged, :meth:`Settings.for_tenant`) settings, or None."""
    if settings.handoff_webhook_url is None:
        return None
    config = WebhookToolConfig(
        name="handoff_webhook", description_ar="إشعار بتحويل محادثة إلى موظف",
        url=settings.handoff_webhook_url, method="POST",
        timeout_s=settings.handoff_webhook_timeout_s,
        auth_header_name=settings.handoff_webhook_auth_header,
        auth_secret_env=settings.handoff_webhook_secret_env)
    return WebhookTool(config, http, secrets=secrets)


def load_webhooks(path: Path | None) -> list[WebhookToolConfig]:
    """The webhook tools declared in ``path``, or ONE line saying what is wrong where."""
    if path is None:
        return []
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot load tools from {path}: {exc}") from exc
    if not isinstance(raw, list):
        raise ConfigurationError(f"cannot load tools from {path}: expected a JSON list of tools")
    tools = []
    for number, item in enumerate(raw, 1):
        try:
            tools.append(WebhookToolConfig.model_validate(item))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'tool'}: {e['msg']}"
                                 for e in exc.errors())
            raise ConfigurationError(
                f"cannot load tools from {path}: tool {number}: {problems}") from None
    return tools


def preflight(settings: Settings, listen: str | None = None, *, workers: int = 1) -> None:
    """Start-up checks before anything opens (exit 2 in the CLI): exposure, keys, TLS, budget."""
    auth = ApiKeyAuth(settings.api_keys, keys_file=settings.api_keys_file,
                      reload_s=settings.api_keys_reload_s)
    check_exposure(listen or settings.listen, auth, allow_anonymous=settings.allow_anonymous)
    tls = ServerTls.from_settings(settings.tls_cert_file, settings.tls_key_file,
                                  settings.tls_client_ca_file, settings.tls_require_client_cert)
    if tls is not None:
        tls.credentials()
    if settings.database_dsn():
        budget = split_budget(settings.pg_max_connections, workers=workers,
                              queries=settings.pool_max_size, locks=settings.pg_lock_pool_max,
                              memory=settings.pg_memory_pool_max)
        # The default minimum is clamped to the share; an explicit one is refused.
        if "pool_min_size" in settings.model_fields_set and settings.pool_min_size > budget.queries:
            raise ConfigurationError(
                f"DIWANIYA_POOL_MIN_SIZE ({settings.pool_min_size}) is larger than the query "
                f"pool's share ({budget.queries}) of DIWANIYA_PG_MAX_CONNECTIONS "
                f"({settings.pg_max_connections}): lower it or raise the budget")
        if settings.pg_lock_pool_min is not None and settings.pg_lock_pool_min > budget.locks:
            raise ConfigurationError(
                f"DIWANIYA_PG_LOCK_POOL_MIN ({settings.pg_lock_pool_min}) is larger than the "
                f"lock pool ({budget.locks} connections of DIWANIYA_PG_MAX_CONNECTIONS "
                f"{settings.pg_max_connections}): lower it or raise the budget")


def pool_budget(settings: Settings) -> PoolBudget:
    """This process's pool sizes within DIWANIYA_PG_MAX_CONNECTIONS (majlis.pg_budget)."""
    return split_budget(settings.pg_max_connections, queries=settings.pool_max_size,
                        locks=settings.pg_lock_pool_max, memory=settings.pg_memory_pool_max)


async def open_persistence(settings: Settings) -> Persistence:
    dsn = settings.database_dsn()
    if dsn:
        budget = pool_budget(settings)
        return await open_postgres(
            dsn, prepare_threshold=settings.prepare_threshold, migrate=settings.migrate_on_start,
            max_waiters=settings.enqueue_max_waiters,
            options=PoolOptions(
                # With --workers the share shrinks: min never above max.
                min_size=min(settings.pool_min_size, budget.queries), max_size=budget.queries,
                lock_pool_size=budget.locks,
                lock_pool_min=budget.locks if settings.pg_lock_pool_min is None
                else min(settings.pg_lock_pool_min, budget.locks),
                application_name=application_name(settings.pg_application_name),
                checkout_timeout_s=settings.pg_checkout_timeout_s,
                connect_timeout_s=settings.pg_connect_timeout_s,
                reconnect_timeout_s=settings.pg_reconnect_timeout_s,
                max_waiting=settings.pg_max_waiting, retry_after_s=settings.retry_after_s,
            ),
            turn_log=turn_log_bounds(settings), retention=retention_policy(settings),
        )
    return await open_sqlite(settings.data_dir, max_waiters=settings.enqueue_max_waiters,
                             turn_log=turn_log_bounds(settings),
                             retention=retention_policy(settings))


def retention_policy(settings: Settings) -> RetentionPolicy:
    """DIWANIYA_CHECKPOINTS_KEPT and the idle TTLs (service-wide, and the tenants' own)."""
    return RetentionPolicy(
        checkpoints_kept=settings.checkpoints_kept, idle_ttl_s=settings.thread_idle_ttl_s,
        tenant_idle_ttl_s={name: t.thread_idle_ttl_s for name, t in settings.tenants.items()
                           if t.thread_idle_ttl_s is not None})


def turn_log_bounds(settings: Settings) -> dict[str, float]:
    """DIWANIYA_TURN_EVENTS_TTL_S / _MAX as majlis.turn_log.TurnLog keywords."""
    return {"ttl_s": settings.turn_events_ttl_s, "max_events": settings.turn_events_max}


def budget_policy(settings: Settings, tenant: TenantSettings | None = None) -> BudgetPolicy:
    """The tenant's budgets and rate: its own values, else the service-wide ones."""
    s = settings.for_tenant(tenant)
    return BudgetPolicy(
        rate=parse_rate(s.rate_limit), tenant_tokens=s.tenant_token_budget,
        thread_tokens=s.thread_token_budget, tenant_cost_usd=s.tenant_cost_budget_usd,
        thread_cost_usd=s.thread_cost_budget_usd, window_s=s.budget_window_s)


async def open_budgets(settings: Settings, persistence: Persistence) -> TurnBudgets | None:
    """Budgets counted in the service's database; None when no tenant has any limit."""
    default = budget_policy(settings)
    overrides = {name: budget_policy(settings, t) for name, t in settings.tenants.items()}
    if not default.enabled and not any(p.enabled for p in overrides.values()):
        return None
    counters: Counters
    if persistence.pool is not None:
        pg = PostgresCounters(persistence.pool)
        if settings.migrate_on_start:  # else `diwaniya migrate` created the table
            with persistence.errors():
                await pg.migrate()
        counters = pg
    else:
        counters = await SqliteCounters.open(settings.data_dir / "limits.sqlite3")
    return TurnBudgets(DatabaseStorage(counters), default, overrides)


async def open_memory(settings: Settings, keys: KeyFunction) -> MemoryStore:
    return await open_store(
        settings.database_dsn(), sqlite_path=settings.data_dir / "memory.sqlite3", keys=keys,
        pool_max=pool_budget(settings).memory, connect_timeout_s=settings.pg_connect_timeout_s,
        command_timeout_s=settings.pg_command_timeout_s,
        application_name=application_name(settings.pg_application_name),
        acquire_timeout_s=settings.pg_checkout_timeout_s, typo=settings.memory_typo_stage,
    )


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The verifying TLS context of every app's HTTP client (models, webhooks), one per process.

    httpx builds one per client by default (certifi's bundle: ~20 ms CPU), and
    a process that builds several apps (the test suite) paid it each time. The
    same default, made once: ``httpx.create_ssl_context()`` (SSL_CERT_FILE /
    SSL_CERT_DIR honoured, as the client's own ``trust_env`` does); a context
    is not changed after it is made, so clients may share it.
    """
    return httpx.create_ssl_context()


async def build_app(
    settings: Settings, *, clock: culture.Clock | None = None, model: ChatModel | None = None,
    webhooks: list[WebhookToolConfig] | None = None, telemetry: Telemetry | None = None,
) -> App:
    """Open and wire everything; a failure part-way closes what was already opened.

    Every resource is entered on one :class:`contextlib.AsyncExitStack` as soon
    as it exists, so a missing tools file (say) closes the pools and the
    aiosqlite threads before the error reaches the caller — the process then
    exits instead of hanging on live non-daemon threads.
    """
    async with contextlib.AsyncExitStack() as stack:
        # Before anything is opened: a bad key backend must not leak a pool.
        keys = await asyncio.to_thread(search_key_function, settings, os.environ)
        # OTEL_* from the environment; a bad exporter name fails here, before any pool opens.
        given = telemetry is not None
        telemetry = telemetry or configure_telemetry(settings)
        built = False

        def close_telemetry() -> None:
            # A telemetry passed in outlives a failed build (serve retries the open
            # with it, service.opening); once built, App.close closes it either way.
            if built or not given:
                telemetry.close()

        stack.callback(close_telemetry)
        persistence = await open_persistence(settings)
        stack.push_async_callback(persistence.close)
        store = await open_memory(settings, keys)
        stack.push_async_callback(store.close)
        http = await stack.enter_async_context(httpx.AsyncClient(verify=_tls_context()))
        budgets = await open_budgets(settings, persistence)
        if budgets is not None:
            stack.push_async_callback(budgets.storage.counters.close)
        # Last in, first out: turns the server cancelled on shutdown still hold
        # thread locks; they give them back before any connection closes.
        stack.push_async_callback(persistence.drain)
        # The composition root is the one place allowed to read the environment.
        secrets = dict(os.environ)
        tenants = Tenants(
            default=build_tenant(settings, http=http, secrets=secrets, model=model,
                                 webhooks=webhooks),
            overrides={name: build_tenant(settings, t, http=http, secrets=secrets)
                       for name, t in settings.tenants.items()},
        )
        # Spans at the database seams; models metered (tokens, cost, failures).
        tenants = instrument(telemetry, tenants, persistence, store)
        tools = TurnTools(store, tenants)
        deps = GraphDeps(
            identifier=dialect_identifier(),
            tenants=tenants,
            store=store,
            extractor=RuleFactExtractor(),
            tools=tools,
            long_gap=timedelta(hours=settings.long_gap_hours),
        )
        graph = build_graph(deps, persistence.checkpointer)
        if settings.warm_on_start:
            # Before the engine exists, so before readiness (service.warm).
            warm_up()
        engine = GuardedEngine(
            graph, persistence, store, tenants, clock or culture.SystemClock(),
            EngineConfig.from_settings(settings), budgets=budgets,
            injection_policy={"": settings.injection_policy, **{
                name: t.injection_policy for name, t in settings.tenants.items()
                if t.injection_policy is not None}},
        )
        # Built: from here on the App owns the resources (App.close).
        built = True
        return App(settings, engine, persistence, store, http, telemetry=telemetry,
                   resources=stack.pop_all(), budgets=budgets)
    raise AssertionError("unreachable")  # mypy: async with may swallow exceptions


def configure_telemetry(settings: Settings) -> Telemetry:
    """Tracing and metrics from OTEL_* and the settings (one per process)."""
    return Telemetry.configure(environ=os.environ, traces=settings.traces,
                               metrics_listen=settings.metrics_listen,
                               exemplar_filter=settings.otel_metrics_exemplar_filter)
