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
AbortError included, the same object) it had — and which closes it with
``aclosing`` when the RPC ends however it ends: a done callback of the RPC
cancels that task while it waits for grpc's next request. The chain is then
closed at once, in the task and context it ran in. Only a response-streaming
handler that is an async generator is wrapped; anything else passes through.

>>> interceptors = (ClosingInterceptor(), *telemetry.interceptors(tenant_of))  # doctest: +SKIP
>>> # «السلام عليكم»'s stream, cancelled mid-write, releases its thread at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from service import priority

_END = object()


class _Steps:
    """One handler generator, advanced in its own task, one step per request."""

    def __init__(self, responses: AsyncGenerator[Any, None]) -> None:
        self._responses = responses
        self._asks: asyncio.Queue[asyncio.Future[Any]] = asyncio.Queue()
        # A copy of the RPC's context, kept: the RPC's task follows its lane (below).
        self.context = contextvars.copy_context()
        self._task = asyncio.get_running_loop().create_task(self._run(), context=self.context)

    async def _run(self) -> None:
        ask: asyncio.Future[Any] | None = None
        try:
            async with contextlib.aclosing(self._responses) as responses:
                while True:
                    # Cancelled here (the RPC ended, grpc asks no more): aclosing
                    # closes the chain now, in this task and its context.
                    ask = await self._asks.get()
                    try:
                        response = await anext(responses, _END)
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


class ClosingInterceptor(grpc.aio.ServerInterceptor):
    """Outermost: wraps every async-generator streaming handler in :func:`stepped`."""

    async def intercept_service(
        self, continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(handler_call_details)
        if handler is None or not handler.response_streaming:
            return handler
        behavior = handler.stream_stream if handler.request_streaming else handler.unary_stream
        if not inspect.isasyncgenfunction(behavior):
            return handler  # a coroutine writing through context.write (health's Watch)
        factory = (grpc.stream_stream_rpc_method_handler if handler.request_streaming
                   else grpc.unary_stream_rpc_method_handler)
        return factory(stepped(behavior), request_deserializer=handler.request_deserializer,
                       response_serializer=handler.response_serializer)
