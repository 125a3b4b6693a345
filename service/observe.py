"""The observing server interceptor: one log line and the metrics of every RPC and turn.

It sits inside OpenTelemetry's gRPC server interceptor (which continues the
caller's ``traceparent``), so its log lines carry the RPC span's trace id, and
it adds the tenant, thread, turn and request ids to that span.

It reads only ids, codes, phase and dialect from the events it passes on —
never their text. One JSON line per RPC, e.g.::

    {"msg": "rpc", "rpc.method": "SendMessage", "rpc.code": "OK", "duration_ms": 41.2,
     "tenant": "default", "thread_id": "9f…", "turn_id": "c1…", "request_id": "r-1"}
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import grpc
from opentelemetry import trace

from service.telemetry import Metrics

log = logging.getLogger("diwaniya.rpc")
TenantOf = Callable[[Iterable[tuple[str, str | bytes]] | None], str]
# Health and reflection RPCs are polled by probes: their lines are DEBUG.
_QUIET_SERVICES = ("/grpc.health.", "/grpc.reflection.")
# The server's copy of a client's deadline starts when the request arrives, so it
# ends a little after the client's own, which cancels the call: a cancel this
# close to the server's deadline is that deadline.
_DEADLINE_SLACK_S = 0.25


def _code_name(context: Any, exc: BaseException | None) -> str:
    if isinstance(exc, asyncio.CancelledError | GeneratorExit):
        # Ended by grpc, not by a status of ours: cancelled, or closed after grpc
        # dropped the stream mid-write (service.closing) — the client cancelled,
        # or its deadline passed. Never UNKNOWN (the session-9 rehearsal's line).
        return "DEADLINE_EXCEEDED" if _deadline_passed(context) else "CANCELLED"
    try:
        code = context.code()
    except Exception:
        code = None
    if isinstance(code, grpc.StatusCode):
        return code.name
    if isinstance(code, int) and code:
        return next((c.name for c in grpc.StatusCode if c.value[0] == code), "UNKNOWN")
    return "UNKNOWN" if exc is not None else "OK"


def _deadline_passed(context: Any) -> bool:
    try:
        remaining = context.time_remaining()
    except Exception:
        return False
    return isinstance(remaining, int | float) and remaining <= _DEADLINE_SLACK_S


def _details(context: Any) -> str:
    try:
        value = context.details()
    except Exception:
        return ""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return str(value or "")[:300]


@dataclass
class _Turn:
    started: float
    request_id: str = ""
    first_seen: bool = False


@dataclass
class _Rpc:
    """What one RPC did, for its log line; turns are timed from their request."""

    method: str
    started: float = field(default_factory=time.monotonic)
    tenant: str = ""
    thread_id: str = ""
    turn_ids: list[str] = field(default_factory=list)
    request_ids: list[str] = field(default_factory=list)
    pending: deque[_Turn] = field(default_factory=deque)
    # Converse answers an undecodable message at once with an error event that
    # is no turn's: it must not end the turn that is running meanwhile.
    undecodable: int = 0
    outcomes: list[str] = field(default_factory=list)


class ObservingInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, metrics: Metrics, tenant_of: TenantOf) -> None:
        self._metrics = metrics
        self._tenant_of = tenant_of

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method: str = handler_call_details.method
        kwargs = {"request_deserializer": handler.request_deserializer,
                  "response_serializer": handler.response_serializer}
        if handler.response_streaming:
            streaming = self._stream(method, handler.stream_stream or handler.unary_stream,
                                     request_streaming=handler.request_streaming)
            factory = (grpc.stream_stream_rpc_method_handler if handler.request_streaming
                       else grpc.unary_stream_rpc_method_handler)
            return factory(streaming, **kwargs)
        unary = self._unary(method, handler.stream_unary or handler.unary_unary)
        factory = (grpc.stream_unary_rpc_method_handler if handler.request_streaming
                   else grpc.unary_unary_rpc_method_handler)
        return factory(unary, **kwargs)

    # ------------------------------------------------------------ wrappers
    def _begin(self, method: str, request: Any, context: Any) -> _Rpc:
        rpc = _Rpc(method=method)
        try:
            rpc.tenant = self._tenant_of(context.invocation_metadata())
        except Exception:
            rpc.tenant = ""  # unauthenticated: the servicer answers it
        if request is not None:
            rpc.thread_id = str(getattr(request, "thread_id", "") or "")
            self._request(rpc, request)
        return rpc

    @staticmethod
    def _request(rpc: _Rpc, request: Any) -> None:
        request_id = str(getattr(request, "request_id", "") or "")
        if request_id:
            rpc.request_ids.append(request_id)
        rpc.pending.append(_Turn(time.monotonic(), request_id))

    def _unary(self, method: str, behavior: Callable[..., Awaitable[Any]]
               ) -> Callable[..., Awaitable[Any]]:
        async def run(request: Any, context: Any) -> Any:
            rpc = self._begin(method, None if _is_iter(request) else request, context)
            rpc.pending.clear()  # no turns on unary RPCs
            exc: BaseException | None = None
            try:
                return await behavior(request, context)
            except BaseException as error:
                exc = error
                raise
            finally:
                self._finish(rpc, context, exc)

        return run

    def _stream(self, method: str, behavior: Callable[..., AsyncIterator[Any]], *,
                request_streaming: bool) -> Callable[..., AsyncIterator[Any]]:
        turns = method.endswith(("/SendMessage", "/Approve", "/Converse"))

        async def run(request: Any, context: Any) -> AsyncIterator[Any]:
            rpc = self._begin(method, None if request_streaming else request, context)
            if not turns:
                rpc.pending.clear()
            if request_streaming and turns:
                request = self._watch_requests(rpc, request)
            self._metrics.active_streams.add(1)
            exc: BaseException | None = None
            try:
                result = behavior(request, context)
                if inspect.isawaitable(result):
                    # A handler that writes through context.write() (grpc_health's
                    # Watch) is a coroutine, not an async iterator.
                    await result
                else:
                    # aclosing: closed here when this stream ends early, not by the GC.
                    async with contextlib.aclosing(
                            cast(AsyncGenerator[Any, None], result)) as responses:
                        async for response in responses:
                            if turns:
                                self._on_event(rpc, response)
                            yield response
            except BaseException as error:
                exc = error
                raise
            finally:
                self._metrics.active_streams.add(-1)
                self._finish(rpc, context, exc)

        return run

    async def _watch_requests(self, rpc: _Rpc, requests: AsyncIterator[Any]
                              ) -> AsyncIterator[Any]:
        """Converse: each message or approval starts a turn; ``cancel`` does not."""
        async for msg in requests:
            if not hasattr(msg, "WhichOneof"):  # service.wire.Undecodable
                rpc.undecodable += 1
                yield msg
                continue
            which = msg.WhichOneof("kind")
            if which in ("message", "approval"):
                inner = getattr(msg, which)
                if not rpc.thread_id:
                    rpc.thread_id = str(inner.thread_id or "")
                self._request(rpc, inner)
            yield msg

    # --------------------------------------------------------------- turns
    def _on_event(self, rpc: _Rpc, event: Any) -> None:
        kind = event.WhichOneof("event")
        if event.thread_id:
            rpc.thread_id = event.thread_id
        if (kind == "error" and rpc.undecodable and not event.turn_id
                and event.error.code == "invalid_argument" and not event.thread_id):
            rpc.undecodable -= 1
            return
        turn = rpc.pending[0] if rpc.pending else None
        if turn is None:
            return
        if not turn.first_seen and kind != "error":
            turn.first_seen = True
            self._metrics.turn_first_event.record(time.monotonic() - turn.started)
        if kind == "turn_completed":
            done = event.turn_completed
            if event.turn_id:
                rpc.turn_ids.append(event.turn_id)
            if not done.replayed:
                self._metrics.turns_by_phase.add(1, {"phase": done.phase or "unknown"})
                self._metrics.turns_by_dialect.add(1, {"dialect": done.dialect or "unknown"})
            self._end_turn(rpc, "completed", event.turn_id)
        elif kind == "error":
            outcome = "cancelled" if event.error.code == "cancelled" else "error"
            self._end_turn(rpc, outcome, event.turn_id, code=event.error.code)

    def _end_turn(self, rpc: _Rpc, outcome: str, turn_id: str = "", code: str = "") -> None:
        turn = rpc.pending.popleft()
        seconds = time.monotonic() - turn.started
        self._metrics.turn_duration.record(seconds, {"outcome": outcome})
        rpc.outcomes.append(outcome)
        if rpc.method.endswith("/Converse"):
            log.info("turn", extra={"diwaniya": {
                "rpc.method": "Converse", "outcome": outcome, "error.code": code,
                "duration_ms": round(seconds * 1000, 1), "tenant": rpc.tenant,
                "thread_id": rpc.thread_id, "turn_id": turn_id,
                "request_id": turn.request_id}})

    def _finish(self, rpc: _Rpc, context: Any, exc: BaseException | None) -> None:
        code = _code_name(context, exc)
        short = rpc.method.rsplit("/", 1)[-1]
        self._metrics.rpcs.add(1, {"method": short, "code": code})
        # A turn the RPC ended without finishing: failed before an event, or abandoned.
        while rpc.pending:
            self._end_turn(rpc, "cancelled" if code == "CANCELLED" else "error")
        seconds = time.monotonic() - rpc.started
        fields: dict[str, Any] = {
            "rpc.method": short, "rpc.service": rpc.method.rsplit("/", 1)[0].strip("/"),
            "rpc.code": code, "duration_ms": round(seconds * 1000, 1), "tenant": rpc.tenant,
            "thread_id": rpc.thread_id, "turn_id": ",".join(rpc.turn_ids),
            "request_id": ",".join(rpc.request_ids),
        }
        if code != "OK":
            # The status details are ours (service.errors): codes, limits and ids, no text.
            fields["rpc.details"] = _details(context)
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attributes({f"diwaniya.{k}": v for k, v in (
                ("tenant", rpc.tenant), ("thread_id", rpc.thread_id),
                ("turn_id", fields["turn_id"]), ("request_id", fields["request_id"])) if v})
        quiet = rpc.method.startswith(_QUIET_SERVICES)
        level = logging.DEBUG if quiet else (logging.INFO if code in ("OK", "CANCELLED")
                                             else logging.WARNING)
        log.log(level, "rpc", extra={"diwaniya": fields})


def _is_iter(request: Any) -> bool:
    return hasattr(request, "__aiter__")
