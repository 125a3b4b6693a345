"""The outermost server interceptor: every streaming handler is closed, in its own task.

grpc.aio drives a response-streaming handler (an async generator) from the
RPC's task and awaits each write there. When that task is cancelled during a
write — the client cancelled, or its deadline passed, while HTTP/2 flow
control held the write — the CancelledError lands in grpc's own ``await``,
grpc drops the handler's generator without closing it, and the chain inside it
(OpenTelemetry's span, the RPC log line, the servicer, the engine, the graph,
the thread lock) is left to the garbage collector. Its finaliser then closes
each generator of the chain in a task of its own, in a context that is not the
chain's: OpenTelemetry logs "Failed to detach context" (GeneratorExit), the
later tasks find generators that the first is still closing ("aclose():
asynchronous generator is already running", "Task exception was never
retrieved"), and the turn's lock is held until a collection happens to run
(the session-9 CI rehearsal; tests/service/test_blocked_writes.py).

Here the handler's generator runs in a task of its own, which advances it one
response at a time, only when grpc asks for the next one — so the handler
keeps exactly the pace, the cancellations and the exceptions (grpc's
AbortError included, the same object) it had — and which closes it (``aclose``)
when the RPC ends however it ends: a done callback of the RPC
cancels that task while it waits for grpc's next request. The chain is then
closed at once, in the task and context it ran in. Only a response-streaming
handler that is an async generator is wrapped; anything else passes through.

A layer that does not close the generator it iterates (OpenTelemetry's
stream wrapper drops it) would still leave what is below it to the
collector; :class:`InnerClosing`, placed just inside such a layer, records
the generator below it, and the task closes those first, innermost first,
before the outermost one.

When the client cancels (or its deadline passes) while a write is blocked,
grpc's write fails in core and, if it has not yet seen the cancellation (a
race it loses most of the time here), grpc logs "ExecuteBatchError raised in
core by servicer method" at ERROR with a traceback. That is the expected end
of a cancelled RPC, whose own line (service.observe) already says CANCELLED or
DEADLINE_EXCEEDED: :class:`CancelledWriteFilter` turns it into one INFO line
of ours saying so.

>>> interceptors = (ClosingInterceptor(), *telemetry.interceptors(tenant_of))  # doctest: +SKIP
>>> # «السلام عليكم»'s stream, cancelled mid-write, releases its thread at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import logging
import re
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, cast

import grpc

from service import priority

# grpc has no public name for the two things CancelledWriteFilter needs: the
# error its core raises for a write to an RPC that has already ended, and the
# logger grpc.aio reports it on. Both are its private Cython module's
# (grpc._cython.cygrpc, grpc 1.85). Resolved once, guarded: should a grpc
# release move them, the filter lets every record through (grpc's ERROR line
# comes back, nothing else changes) and says so once when installed, rather
# than the service failing to import; test_cancelled_writes.py's
# test_grpc_still_has_the_private_names_the_filter_needs fails loudly, naming
# the one that moved.
try:
    from grpc._cython import cygrpc as _cygrpc
except ImportError:  # grpc moved its core module
    _cygrpc = None
EXECUTE_BATCH_ERROR: type[Exception] | None = getattr(_cygrpc, "ExecuteBatchError", None)

_END = object()
# The generators InnerClosing opened in this RPC's handler task: closed first.
_OPEN: contextvars.ContextVar[list[AsyncGenerator[Any, None]]] = contextvars.ContextVar(
    "diwaniya_open_streams")
log = logging.getLogger("diwaniya.service")
# grpc.aio's own logger, and the method in its "... by servicer method [/pkg.Svc/Method]".
GRPC_LOGGER = "grpc._cython.cygrpc"
_METHOD = re.compile(r"servicer method \[([^\]]*)\]")


class CancelledWriteFilter(logging.Filter):
    """On grpc's logger: its ERROR for a write that failed because the RPC had
    already ended (ExecuteBatchError) becomes an INFO line of ours that says so.

    grpc drops such a failure silently when it has already noticed the client's
    cancellation; it logs it when the failure wins the race. Either way no
    response was lost that the client still wanted, and the status is the
    client's own (CANCELLED, DEADLINE_EXCEEDED): an error here was noise that
    hid real ones. Every other record passes unchanged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if EXECUTE_BATCH_ERROR is None or not isinstance(exc, EXECUTE_BATCH_ERROR):
            return True
        found = _METHOD.search(record.getMessage())
        log.info("a write to %s failed in grpc core after the RPC had ended (the client "
                 "cancelled, its deadline passed or it went away): expected, the RPC's own "
                 "line has its status", found.group(1) if found else "an RPC")
        return False


def quiet_cancelled_writes() -> None:
    """Install :class:`CancelledWriteFilter` on grpc's logger, once per process."""
    grpc_log = logging.getLogger(GRPC_LOGGER)
    if not any(isinstance(f, CancelledWriteFilter) for f in grpc_log.filters):
        if EXECUTE_BATCH_ERROR is None:
            log.warning("grpc %s has no grpc._cython.cygrpc.ExecuteBatchError: its ERROR "
                        "for a write after a cancelled RPC is left as it is", grpc.__version__)
        grpc_log.addFilter(CancelledWriteFilter())


class _Steps:
    """One handler generator, advanced in its own task, one step per request."""

    def __init__(self, responses: AsyncGenerator[Any, None]) -> None:
        self._responses = responses
        self._asks: asyncio.Queue[asyncio.Future[Any]] = asyncio.Queue()
        # A copy of the RPC's context, kept: the RPC's task follows its lane (below).
        self.context = contextvars.copy_context()
        self._opened: list[AsyncGenerator[Any, None]] = []
        self._stopped = False
        self.context.run(_OPEN.set, self._opened)
        self._task = asyncio.get_running_loop().create_task(self._run(), context=self.context)

    async def _run(self) -> None:
        ask: asyncio.Future[Any] | None = None
        try:
            while True:
                # Cancelled here (the RPC ended, grpc asks no more): the chain is
                # closed below, now, in this task and its context.
                ask = await self._asks.get()
                try:
                    response = await anext(self._responses, _END)
                except Exception as exc:
                    # Handed over as it is: grpc checks its AbortError by identity.
                    if not ask.done():
                        ask.set_exception(exc)
                    return
                if ask.done():  # the RPC stopped waiting (cancelled): close
                    return
                ask.set_result(response)
                if response is _END:
                    return
        finally:
            # Nobody may wait for a step this task will never take.
            if ask is not None and not ask.done():
                ask.cancel()
            while not self._asks.empty():
                self._asks.get_nowait().cancel()
            await self._close_chain()

    async def _close_chain(self) -> None:
        # Innermost first: a layer that drops what it iterates finds it closed.
        for stream in (*reversed(self._opened), self._responses):
            try:
                await stream.aclose()
            except (asyncio.CancelledError, KeyboardInterrupt, SystemExit):
                raise
            except BaseException:
                # A bug in a handler's cleanup: said here, once, with its traceback.
                log.exception("closing a stream handler failed")

    async def next(self) -> Any:
        """The handler's next response, or ``_END``; its exception, raised here."""
        if self._task.done():
            # Ended without being asked (cancelled while idle): the RPC is over.
            raise asyncio.CancelledError
        ask: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._asks.put_nowait(ask)
        # Cancelling the RPC's task cancels this future; close() then cancels
        # the step in flight, exactly where grpc's cancellation used to land.
        return await ask

    def stop(self, _context: Any = None) -> None:
        # Once: a second cancel would cut short the closing it started.
        if not self._stopped:
            self._stopped = True
            self._task.cancel()

    async def close(self) -> None:
        self.stop()
        await asyncio.wait({self._task})


def stepped(behavior: Callable[..., AsyncGenerator[Any, None]]
            ) -> Callable[..., AsyncIterator[Any]]:
    """``behavior`` (a streaming handler) run by :class:`_Steps`, closed when the RPC ends."""

    async def handler(request: Any, context: grpc.aio.ServicerContext[Any, Any]
                      ) -> AsyncIterator[Any]:
        steps = _Steps(behavior(request, context))
        # Called when the RPC's task is done — also when grpc dropped this generator.
        context.add_done_callback(steps.stop)
        try:
            while (response := await steps.next()) is not _END:
                # This task writes; it follows the handler's lane (service.priority):
                # front until the handler settled after its first response.
                if steps.context.get(priority.FIRST_RESPONSE, False) != (
                        front := priority.FIRST_RESPONSE.get()):
                    priority.FIRST_RESPONSE.set(not front)
                yield response
        finally:
            await steps.close()

    return handler


def _recorded(behavior: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
    async def handler(request: Any, context: grpc.aio.ServicerContext[Any, Any]
                      ) -> AsyncIterator[Any]:
        inner = cast(AsyncGenerator[Any, None], behavior(request, context))
        opened = _OPEN.get(None)
        if opened is not None:
            opened.append(inner)  # closed by the handler task first (_Steps)
        async with contextlib.aclosing(inner) as responses:
            async for response in responses:
                yield response

    return handler


def _wrapped(handler: Any, wrap: Callable[[Any], Any]) -> Any:
    """``handler`` with its response-streaming behaviour passed through ``wrap``."""
    if handler is None or not handler.response_streaming:
        return handler
    behavior = handler.stream_stream if handler.request_streaming else handler.unary_stream
    if not inspect.isasyncgenfunction(behavior):
        return handler  # a coroutine writing through context.write (health's Watch)
    factory = (grpc.stream_stream_rpc_method_handler if handler.request_streaming
               else grpc.unary_stream_rpc_method_handler)
    return factory(wrap(behavior), request_deserializer=handler.request_deserializer,
                   response_serializer=handler.response_serializer)


class InnerClosing(grpc.aio.ServerInterceptor):
    """Just inside a layer that drops, unclosed, the generator it iterates: records
    that generator so that :class:`ClosingInterceptor`'s task closes it first."""

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        return _wrapped(await continuation(handler_call_details), _recorded)


class ClosingInterceptor(grpc.aio.ServerInterceptor):
    """Outermost: wraps every async-generator streaming handler in :func:`stepped`."""

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        return _wrapped(await continuation(handler_call_details), stepped)
