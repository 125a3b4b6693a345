"""The composition root: the only code that turns settings into objects.

Everything below takes its dependencies in its constructor; this module reads
:class:`~service.settings.Settings` once and wires the product together, for
the server, the CLI and the tests alike.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx

import nlp
from diwaniya.errors import ConfigurationError
from majlis import culture
from majlis.engine import ConversationEngine, EngineConfig
from majlis.graph import GraphDeps, build_graph
from majlis.models import ChatModel, ModelConfig, OfflineResponder, OpenAICompatibleModel
from majlis.persistence import Persistence, PoolOptions, open_postgres, open_sqlite
from majlis.requests import Limits
from majlis.tenants import Tenant, Tenants
from majlis.toolkit import TurnTools
from majlis.tools import WebhookTool, WebhookToolConfig
from memory import KeyFunction, MemoryStore, RuleFactExtractor, open_store
from service.auth import ApiKeyAuth
from service.server import Server, ServerOptions
from service.servicer import ConversationsServicer
from service.settings import Settings, TenantSettings


@dataclass
class App:
    settings: Settings
    engine: ConversationEngine
    persistence: Persistence
    store: MemoryStore
    http: httpx.AsyncClient
    draining: asyncio.Event = field(default_factory=asyncio.Event)

    async def ready(self) -> None:
        await self.persistence.ping()

    def server(self, *, listen: str | None = None, reuse_port: bool = False) -> Server:
        s = self.settings
        servicer = ConversationsServicer(self.engine, ApiKeyAuth(s.api_keys), self.draining)
        options = ServerOptions(
            listen=listen or s.listen, reflection=s.reflection,
            max_message_bytes=s.max_message_bytes, max_concurrent_streams=s.max_concurrent_streams,
            keepalive_time_s=s.keepalive_time_s, keepalive_timeout_s=s.keepalive_timeout_s,
            drain_grace_s=s.drain_grace_s, drain_delay_s=s.drain_delay_s,
            readiness_interval_s=s.readiness_interval_s, reuse_port=reuse_port,
        )
        return Server(servicer, self.ready, options, self.draining)

    async def close(self) -> None:
        # First: turns the server cancelled on shutdown still hold thread
        # locks; they give them back before any connection closes.
        await self.persistence.drain()
        await self.http.aclose()
        await self.store.close()
        await self.persistence.close()


def model_config(settings: Settings, tenant: TenantSettings | None = None,
                 secrets: Mapping[str, str] | None = None) -> ModelConfig | None:
    t = tenant or TenantSettings()
    base_url = t.model_base_url or settings.model_base_url
    if not base_url:
        return None
    key = settings.model_api_key.get_secret_value() if settings.model_api_key else None
    if t.model_api_key_env:
        key = (secrets or {}).get(t.model_api_key_env)
        if key is None:
            raise ConfigurationError(
                f"model_api_key_env {t.model_api_key_env!r} is not set in the environment")
    extra: dict[str, Any] = {"api_key": key} if key else {}
    return ModelConfig(
        base_url=base_url, model=t.model_name or settings.model_name,
        temperature=settings.model_temperature, max_tokens=settings.model_max_tokens,
        timeout_s=settings.model_timeout_s,
        price_prompt_per_1k=_first(t.model_price_prompt_per_1k,
                                   settings.model_price_prompt_per_1k),
        price_completion_per_1k=_first(t.model_price_completion_per_1k,
                                       settings.model_price_completion_per_1k),
        **extra,
    )


def _first(value: Any, default: Any) -> Any:
    return default if value is None else value


def build_tenant(settings: Settings, tenant: TenantSettings | None = None, *,
                 http: httpx.AsyncClient, secrets: Mapping[str, str] | None = None,
                 model: ChatModel | None = None,
                 webhooks: list[WebhookToolConfig] | None = None) -> Tenant:
    t = tenant or TenantSettings()
    offsets = {**settings.country_offsets, **(t.country_offsets or {})}
    days = {**settings.national_days, **(t.national_days or {})}
    calendar = culture.SeasonCalendar(country_offsets=offsets, national_days=days or None)
    profile = culture.ToneProfile(
        persona_name=_first(t.persona_name, settings.persona_name),
        register_policy=_first(t.register_policy, settings.register_policy),
        formality_floor=_first(t.formality_floor, settings.formality_floor),
        greeting_style=_first(t.greeting_style, settings.greeting_style),
        religious_greetings=_first(t.religious_greetings, settings.religious_greetings))
    config = model_config(settings, t, secrets)
    if model is None:
        model = (OpenAICompatibleModel(config) if config
                 else OfflineResponder(keys=nlp.search_keys, expand=nlp.dialect_to_msa,
                                       dialect_cue=nlp.has_dialect_words))
    if webhooks is None:
        webhooks = load_webhooks(t.tools_file or settings.tools_file)
    tools = tuple(WebhookTool(cfg, http, secrets=secrets) for cfg in webhooks)
    # Only a configured model can fail; the offline responder is its own fallback.
    on_failure = _first(t.on_model_failure, settings.on_model_failure)
    fallback = (OfflineResponder(keys=nlp.search_keys)
                if config is not None and on_failure == "offline" else None)
    return Tenant(profile, calendar, model, config.pricing() if config else None, tools,
                  fallback=fallback, handoff_webhook=handoff_webhook(settings, t, http, secrets),
                  pii_to_model=t.pii_to_model or settings.pii_to_model)


def handoff_webhook(settings: Settings, tenant: TenantSettings, http: httpx.AsyncClient,
                    secrets: Mapping[str, str] | None) -> WebhookTool | None:
    """The tenant's handoff webhook (its own, else the service-wide one), or None."""
    own = tenant.handoff_webhook_url is not None
    url = tenant.handoff_webhook_url if own else settings.handoff_webhook_url
    if url is None:
        return None
    header = tenant.handoff_webhook_auth_header if own else settings.handoff_webhook_auth_header
    secret_env = (tenant.handoff_webhook_secret_env if own
                  else settings.handoff_webhook_secret_env)
    config = WebhookToolConfig(
        name="handoff_webhook", description_ar="إشعار بتحويل محادثة إلى موظف",
        url=url, method="POST",
        timeout_s=_first(tenant.handoff_webhook_timeout_s, settings.handoff_webhook_timeout_s),
        auth_header_name=header, auth_secret_env=secret_env)
    return WebhookTool(config, http, secrets=secrets)


def load_webhooks(path: Path | None) -> list[WebhookToolConfig]:
    if path is None:
        return []
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return [WebhookToolConfig.model_validate(item) for item in raw]
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot load tools from {path}: {exc}") from exc


async def open_persistence(settings: Settings) -> Persistence:
    dsn = settings.database_dsn()
    if dsn:
        return await open_postgres(
            dsn, prepare_threshold=settings.prepare_threshold, migrate=settings.migrate_on_start,
            max_waiters=settings.enqueue_max_waiters,
            options=PoolOptions(
                min_size=settings.pool_min_size, max_size=settings.pool_max_size,
                lock_pool_size=settings.pg_lock_pool_max,
                checkout_timeout_s=settings.pg_checkout_timeout_s,
                connect_timeout_s=settings.pg_connect_timeout_s,
                reconnect_timeout_s=settings.pg_reconnect_timeout_s,
                max_waiting=settings.pg_max_waiting, retry_after_s=settings.retry_after_s,
            ),
        )
    return await open_sqlite(settings.data_dir, max_waiters=settings.enqueue_max_waiters)


async def open_memory(settings: Settings, keys: KeyFunction | None) -> MemoryStore:
    return await open_store(
        settings.database_dsn(), sqlite_path=settings.data_dir / "memory.sqlite3", keys=keys,
        pool_max=settings.pg_memory_pool_max, connect_timeout_s=settings.pg_connect_timeout_s,
        command_timeout_s=settings.pg_command_timeout_s,
        acquire_timeout_s=settings.pg_checkout_timeout_s, typo=settings.memory_typo_stage,
    )


def search_key_function(settings: Settings,
                        environ: Mapping[str, str] | None = None) -> KeyFunction | None:
    """The memory key function the operator chose; None: the store's built-in default.

    Selecting camel-tools without its package or data fails here, at startup,
    with what to install and which setting to change.  Loading a full
    morphology database takes seconds: call it off the event loop.
    """
    if settings.search_keys == "builtin":
        return None
    data_dir = settings.camel_data_dir
    env_dir = (environ or {}).get("CAMELTOOLS_DATA")
    if data_dir is None and env_dir:
        data_dir = Path(env_dir).expanduser()
    try:
        return nlp.camel_lemma_keys(nlp.require_camel_morphology(settings.camel_db, data_dir))
    except ConfigurationError as exc:
        raise ConfigurationError(
            f"DIWANIYA_SEARCH_KEYS=camel cannot start: {exc.message}. Install the extra "
            f"(pip install 'diwaniya[camel]') and its data, point DIWANIYA_CAMEL_DATA_DIR / "
            f"DIWANIYA_CAMEL_DB at installed data, or set DIWANIYA_SEARCH_KEYS=builtin"
        ) from exc


async def build_app(
    settings: Settings, *, clock: culture.Clock | None = None, model: ChatModel | None = None,
    webhooks: list[WebhookToolConfig] | None = None,
) -> App:
    # Before anything is opened: a bad key backend must not leak a pool.
    keys = await asyncio.to_thread(search_key_function, settings, os.environ)
    persistence = await open_persistence(settings)
    try:
        store = await open_memory(settings, keys)
    except BaseException:
        await persistence.close()
        raise
    http = httpx.AsyncClient()
    # The composition root is the one place allowed to read the environment.
    secrets = dict(os.environ)
    tenants = Tenants(
        default=build_tenant(settings, http=http, secrets=secrets, model=model,
                             webhooks=webhooks),
        overrides={name: build_tenant(settings, t, http=http, secrets=secrets)
                   for name, t in settings.tenants.items()},
    )
    tools = TurnTools(store, tenants)
    deps = GraphDeps(
        identifier=nlp.load_dialect_identifier(),
        tenants=tenants,
        store=store,
        extractor=RuleFactExtractor(),
        tools=tools,
        long_gap=timedelta(hours=settings.long_gap_hours),
    )
    graph = build_graph(deps, persistence.checkpointer)
    engine = ConversationEngine(
        graph, persistence, store, tenants, clock or culture.SystemClock(),
        EngineConfig(
            limits=Limits(max_text_chars=settings.max_text_chars,
                          max_token_chars=settings.max_token_chars),
            policy=settings.concurrency_policy, enqueue_wait_s=settings.enqueue_wait_s,
            turn_timeout_s=settings.default_turn_timeout_s,
            default_timezone=settings.default_timezone,
            replay_window_s=settings.request_replay_window_s,
        ),
        tools=tools,
    )
    return App(settings, engine, persistence, store, http)


