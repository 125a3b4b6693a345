"""The composition root: the only code that turns settings into objects.

Everything below takes its dependencies in its constructor; this module reads
:class:`~service.settings.Settings` once and wires the product together, for
the server, the CLI and the tests alike.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import httpx

import nlp
from diwaniya.errors import ConfigurationError
from majlis import culture
from majlis.engine import ConversationEngine, EngineConfig
from majlis.graph import GraphDeps, build_graph
from majlis.models import ChatModel, ModelConfig, OfflineResponder, OpenAICompatibleModel
from majlis.persistence import Persistence, open_postgres, open_sqlite
from majlis.requests import Limits
from majlis.toolkit import TurnTools
from majlis.tools import WebhookTool, WebhookToolConfig
from memory import MemoryStore, RuleFactExtractor, open_store
from service.auth import ApiKeyAuth
from service.server import Server, ServerOptions
from service.servicer import ConversationsServicer
from service.settings import Settings


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

    def server(self, *, listen: str | None = None) -> Server:
        s = self.settings
        servicer = ConversationsServicer(self.engine, ApiKeyAuth(s.api_keys), self.draining)
        options = ServerOptions(
            listen=listen or s.listen, reflection=s.reflection,
            max_message_bytes=s.max_message_bytes, max_concurrent_streams=s.max_concurrent_streams,
            keepalive_time_s=s.keepalive_time_s, keepalive_timeout_s=s.keepalive_timeout_s,
            drain_grace_s=s.drain_grace_s, drain_delay_s=s.drain_delay_s,
        )
        return Server(servicer, self.ready, options, self.draining)

    async def close(self) -> None:
        await self.http.aclose()
        await self.store.close()
        await self.persistence.close()


def model_config(settings: Settings) -> ModelConfig | None:
    if not settings.model_base_url:
        return None
    extra: dict[str, Any] = {"api_key": settings.model_api_key} if settings.model_api_key else {}
    return ModelConfig(
        base_url=settings.model_base_url, model=settings.model_name,
        temperature=settings.model_temperature, max_tokens=settings.model_max_tokens,
        timeout_s=settings.model_timeout_s,
        price_prompt_per_1k=settings.model_price_prompt_per_1k,
        price_completion_per_1k=settings.model_price_completion_per_1k, **extra,
    )


def build_model(settings: Settings) -> ChatModel:
    config = model_config(settings)
    if config is None:
        return OfflineResponder(keys=nlp.search_keys)
    return OpenAICompatibleModel(config)


def load_webhooks(settings: Settings) -> list[WebhookToolConfig]:
    if settings.tools_file is None:
        return []
    try:
        raw = json.loads(settings.tools_file.read_text(encoding="utf-8"))
        return [WebhookToolConfig.model_validate(item) for item in raw]
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot load tools from {settings.tools_file}: {exc}") from exc


async def open_persistence(settings: Settings) -> Persistence:
    dsn = settings.database_dsn()
    if dsn:
        return await open_postgres(
            dsn, min_size=settings.pool_min_size, max_size=settings.pool_max_size,
            prepare_threshold=settings.prepare_threshold, migrate=settings.migrate_on_start,
            max_waiters=settings.enqueue_max_waiters,
        )
    return await open_sqlite(settings.data_dir, max_waiters=settings.enqueue_max_waiters)


async def build_app(
    settings: Settings, *, clock: culture.Clock | None = None, model: ChatModel | None = None,
    webhooks: list[WebhookToolConfig] | None = None,
) -> App:
    persistence = await open_persistence(settings)
    try:
        store = await open_store(settings.database_dsn(),
                                 sqlite_path=settings.data_dir / "memory.sqlite3")
    except BaseException:
        await persistence.close()
        raise
    http = httpx.AsyncClient()
    calendar = culture.SeasonCalendar(country_offsets=settings.country_offsets,
                                      national_days=settings.national_days or None)
    profile = culture.ToneProfile(
        persona_name=settings.persona_name, register_policy=settings.register_policy,
        formality_floor=settings.formality_floor, greeting_style=settings.greeting_style)
    # The composition root is the one place allowed to read the environment.
    secrets = dict(os.environ)
    hooks = [WebhookTool(cfg, http, secrets=secrets)
             for cfg in (webhooks if webhooks is not None else load_webhooks(settings))]
    config = model_config(settings)
    deps = GraphDeps(
        identifier=nlp.load_dialect_identifier(),
        calendar=calendar,
        profile=profile,
        store=store,
        extractor=RuleFactExtractor(),
        model=model or build_model(settings),
        tools=TurnTools(store, hooks),
        prices=config.pricing() if config else None,
        long_gap=timedelta(hours=settings.long_gap_hours),
    )
    graph = build_graph(deps, persistence.checkpointer)
    engine = ConversationEngine(
        graph, persistence, store, calendar, clock or culture.SystemClock(),
        EngineConfig(
            limits=Limits(max_text_chars=settings.max_text_chars,
                          max_token_chars=settings.max_token_chars),
            policy=settings.concurrency_policy, enqueue_wait_s=settings.enqueue_wait_s,
            turn_timeout_s=settings.default_turn_timeout_s,
            default_timezone=settings.default_timezone,
        ),
    )
    return App(settings, engine, persistence, store, http)


