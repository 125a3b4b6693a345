"""Spans and metrics at the seams: models, checkpoints, memory search, thread locks, pools.

The domain packages stay free of metrics plumbing: the composition root wraps
what it built (:func:`instrument`). Model calls are counted by a wrapper
:class:`ChatModel`; database seams are wrapped per instance (the objects
are ours, built a few lines earlier in ``build_app``), never by patching a class.

Span attributes are ids, sizes and counts only: never a query, a message or SQL.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from opentelemetry.trace import SpanKind, Status, StatusCode

from diwaniya.errors import DeadlineExceeded, ModelError
from majlis.models import ChatModel, ModelOutput, ModelRequest, Pricing, UsageReport
from majlis.persistence import Persistence
from majlis.tenants import Tenant, Tenants
from majlis.tracing import DeferredTracer
from memory import MemoryStore
from service.telemetry import Metrics, Telemetry

_tracer = DeferredTracer("diwaniya.db")
log = logging.getLogger("diwaniya.telemetry")
_HTTP_STATUS = re.compile(r"HTTP (\d{3})")


def failure_reason(exc: BaseException) -> str:
    """A bounded label for a failed model call: ``deadline``, ``http_503``, ``connection``…"""
    if isinstance(exc, DeadlineExceeded):
        return "deadline"
    text = str(getattr(exc, "message", "") or exc)
    if (m := _HTTP_STATUS.search(text)) is not None:
        return f"http_{m.group(1)}"
    if "connection" in text:
        return "connection"
    if "malformed" in text:
        return "malformed"
    return "error" if isinstance(exc, ModelError) else type(exc).__name__


class MeteredModel:
    """A :class:`ChatModel` that counts tokens, cost and failures of the model it wraps.

    Counting here rather than from the turn's events means a replayed turn
    (a repeated request_id) is never counted twice.
    """

    def __init__(self, inner: ChatModel, metrics: Metrics, prices: Pricing | None) -> None:
        self.inner = inner
        self.name = inner.name
        self._metrics = metrics
        self._prices = prices

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelOutput]:
        try:
            async for output in self.inner.stream(request):
                if isinstance(output, UsageReport):
                    self._count(output)
                yield output
        except (ModelError, DeadlineExceeded) as exc:
            self._metrics.model_failures.add(1, {"reason": failure_reason(exc)})
            raise

    def _count(self, usage: UsageReport) -> None:
        model = usage.model or self.name
        self._metrics.model_tokens.add(usage.prompt_tokens, {"kind": "prompt", "model": model})
        self._metrics.model_tokens.add(usage.completion_tokens,
                                       {"kind": "completion", "model": model})
        if self._prices is not None:
            self._metrics.model_cost.add(
                self._prices.cost_usd(usage.prompt_tokens, usage.completion_tokens),
                {"model": model})


def _metered(tenant: Tenant, metrics: Metrics) -> Tenant:
    fallback = tenant.fallback and MeteredModel(tenant.fallback, metrics, None)
    return dataclasses.replace(tenant, model=MeteredModel(tenant.model, metrics, tenant.prices),
                               fallback=fallback)


def metered_tenants(tenants: Tenants, metrics: Metrics) -> Tenants:
    return Tenants(default=_metered(tenants.default, metrics),
                   overrides={k: _metered(t, metrics) for k, t in tenants.overrides.items()})


# ------------------------------------------------------------------ db spans
def _wrap_async(obj: Any, name: str, span_name: str, attrs: dict[str, Any],
                result_attrs: Callable[[Any], dict[str, Any]] | None = None) -> None:
    inner = getattr(obj, name, None)
    if inner is None:
        return

    @functools.wraps(inner)
    async def traced(*args: Any, **kwargs: Any) -> Any:
        with _tracer.start_as_current_span(span_name, kind=SpanKind.CLIENT,
                                           attributes=attrs) as span:
            result = await inner(*args, **kwargs)
            if result_attrs is not None:
                span.set_attributes(result_attrs(result))
            return result

    # LangGraph asks for the saver's ``aput_writes`` signature on every run
    # (pregel's put_writes_accepts_task_path, once a turn); through
    # functools.wraps that is an unwrap and a Signature built from the
    # function each time (~10x the cost of reading a stored one). The wrapper
    # takes exactly the inner method's parameters: store its signature once.
    traced.__signature__ = inspect.signature(inner)  # type: ignore[attr-defined]
    _set(obj, name, traced)


def _set(obj: Any, name: str, value: Any) -> None:
    try:
        setattr(obj, name, value)
    except (AttributeError, TypeError):  # __slots__: this seam goes untraced
        log.debug("cannot instrument %s.%s", type(obj).__name__, name)


def _wrap_lock(threads: Any, attrs: dict[str, Any]) -> None:
    """``threads.lock(...)``: a span for acquiring the thread lock (not for holding it)."""
    inner = getattr(threads, "lock", None)
    if inner is None:
        return

    @contextlib.asynccontextmanager
    async def lock(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        cm = inner(*args, **kwargs)
        with _tracer.start_as_current_span("thread.lock acquire", kind=SpanKind.CLIENT,
                                           attributes=attrs) as span:
            try:
                lease = await cm.__aenter__()
            except BaseException as exc:
                span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
                raise
            epoch = getattr(lease, "epoch", None)
            if isinstance(epoch, int):  # PostgreSQL's lease epoch (SQLite has none)
                span.set_attribute("diwaniya.fencing_token", epoch)
        try:
            yield lease
        except BaseException as exc:
            if not await cm.__aexit__(type(exc), exc, exc.__traceback__):
                raise
        else:
            await cm.__aexit__(None, None, None)

    _set(threads, "lock", lock)


def _time_psycopg_pool(pool: Any, name: str, metrics: Metrics) -> None:
    getconn = getattr(pool, "getconn", None)
    if getconn is None:
        return

    @functools.wraps(getconn)
    async def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.monotonic()
        try:
            return await getconn(*args, **kwargs)
        finally:
            metrics.pool_wait.record(time.monotonic() - started, {"pool": name})

    _set(pool, "getconn", timed)


def _time_store_conn(store: Any, metrics: Metrics) -> None:
    """The asyncpg pool has __slots__: time the store's own checkout seam instead."""
    conn = getattr(store, "_conn", None)
    if conn is None:
        return

    @contextlib.asynccontextmanager
    async def timed() -> AsyncIterator[Any]:
        started = time.monotonic()
        cm = conn()
        try:
            c = await cm.__aenter__()
        finally:
            metrics.pool_wait.record(time.monotonic() - started, {"pool": "memory"})
        try:
            yield c
        except BaseException as exc:
            if not await cm.__aexit__(type(exc), exc, exc.__traceback__):
                raise
        else:
            await cm.__aexit__(None, None, None)

    _set(store, "_conn", timed)


def _psycopg_reading(pool: Any) -> Callable[[], tuple[int, int]]:
    def read() -> tuple[int, int]:
        stats = pool.get_stats()
        size, idle = int(stats.get("pool_size", 0)), int(stats.get("pool_available", 0))
        return size - idle, idle
    return read


def _asyncpg_reading(pool: Any) -> Callable[[], tuple[int, int]]:
    def read() -> tuple[int, int]:
        size, idle = int(pool.get_size()), int(pool.get_idle_size())
        return size - idle, idle
    return read


def instrument(telemetry: Telemetry, tenants: Tenants, persistence: Persistence,
               store: MemoryStore) -> Tenants:
    """Wrap the seams of what ``build_app`` built; returns the metered tenants to use."""
    metrics = telemetry.metrics
    db = {"db.system.name": "postgresql" if persistence.backend == "postgres" else "sqlite"}
    saver = persistence.checkpointer
    _wrap_async(saver, "aget_tuple", "checkpoint.get", db,
                lambda r: {"diwaniya.found": r is not None})
    _wrap_async(saver, "aput", "checkpoint.put", db)
    _wrap_async(saver, "aput_writes", "checkpoint.put_writes", db)
    threads = persistence.threads
    _wrap_lock(threads, db)
    for method, span_name in (("commit_turn", "thread.commit"), ("create", "thread.create"),
                              ("get", "thread.get"), ("list", "thread.list"),
                              ("delete", "thread.delete"), ("turn_saved", "thread.turn_saved"),
                              ("claim_request", "request.claim"),
                              ("get_request", "request.get")):
        _wrap_async(threads, method, span_name, db)
    mem = {"db.system.name": "postgresql" if hasattr(store, "_pool") else "sqlite"}
    _wrap_async(store, "search", "memory.search", mem, lambda hits: {"diwaniya.hits": len(hits)})
    # PostgreSQL's recall: the user's facts and the search in one statement (memory.recall).
    _wrap_async(store, "facts_and_search", "memory.search", mem,
                lambda found: {"diwaniya.hits": len(found[1])})
    _wrap_async(store, "put", "memory.put", mem, lambda recs: {"diwaniya.records": len(recs)})
    if hasattr(threads, "on_heartbeat_failure"):  # SQLite's lease heartbeat
        threads.on_heartbeat_failure = lambda: metrics.lease_heartbeat_failures.add(1)
    # Pools (PostgreSQL only): the private attributes are read, not changed.
    if persistence.pool is not None:
        telemetry.watch_pool("checkpoints", _psycopg_reading(persistence.pool))
        _time_psycopg_pool(persistence.pool, "checkpoints", metrics)
    lock_pool = getattr(threads, "_lock_pool", None)
    if lock_pool is not None:
        telemetry.watch_pool("locks", _psycopg_reading(lock_pool))
        _time_psycopg_pool(lock_pool, "locks", metrics)
    mem_pool = getattr(store, "_pool", None)
    if mem_pool is not None and hasattr(mem_pool, "get_idle_size"):
        telemetry.watch_pool("memory", _asyncpg_reading(mem_pool))
        _time_store_conn(store, metrics)
    return metered_tenants(tenants, metrics)
