"""``diwaniya.v1.Conversations`` over grpc.aio: thin translation onto the engine.

Every RPC ends in one of two ways: its results, or ``service.errors.abort``
(→ ``translate``) for whatever it raised — domain error or bug alike.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc

from diwaniya.errors import Unavailable
from diwaniya.v1 import conversations_pb2 as pb
from diwaniya.v1 import conversations_pb2_grpc as pb_grpc
from majlis.engine import ConversationEngine
from majlis.events import Envelope
from service import convert, priority
from service import errors as status
from service.auth import ApiKeyAuth
from service.converse import ConverseSession
from service.wire import Undecodable

T = TypeVar("T")

# How much earlier than the caller's deadline a turn gives up (see _timeout).
_DEADLINE_MARGIN_S = 0.05


async def ahead(source: AsyncGenerator[Envelope, None],
                held: set[asyncio.Task[None]] | None = None) -> AsyncGenerator[Envelope, None]:
    """``source``'s events, produced by a task of their own, ahead of the writes.

    The turn never waits for a write: a client that reads slowly, or not at
    all (HTTP/2 flow control holds the write), cannot hold the thread's lock
    past the turn's deadline, and the deadline's cancellation always lands in
    the turn itself — never in grpc's write, where grpc took it for the
    client's cancel and sent no status. Its events wait here (a turn's are
    few) and then its status, DEADLINE_EXCEEDED included, follows them.

    Closing this stream cancels the turn and waits until it has closed, in its
    own task. With ``held``, the turn instead outlives the stream: a resumable
    turn (``SendMessageRequest.resumable``) must go on when the client's
    connection drops, so that ResumeTurn can rejoin it from the turn log; its
    deadline still ends it.
    """
    queue: asyncio.Queue[Envelope | BaseException | None] = asyncio.Queue()

    async def pump() -> None:
        try:
            async with contextlib.aclosing(source) as events:
                async for envelope in events:
                    queue.put_nowait(envelope)
                    # This task runs the turn (it inherited the RPC's front lane).
                    priority.settle()
        except BaseException as exc:
            queue.put_nowait(exc)
            if not isinstance(exc, Exception):
                raise
            return
        queue.put_nowait(None)

    task = asyncio.create_task(pump())
    if held is not None:
        held.add(task)
        task.add_done_callback(held.discard)
    try:
        while True:
            item = await queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        if held is None and not task.done():
            task.cancel()
            await asyncio.wait({task})


class ConversationsServicer(pb_grpc.ConversationsServicer):
    """``engine`` is asked for on every call: a replica that started while its
    database was down serves before the engine exists (service.opening.Pending
    raises UNAVAILABLE until then)."""

    def __init__(self, engine: Callable[[], ConversationEngine], auth: ApiKeyAuth,
                 draining: asyncio.Event | None = None) -> None:
        self._engine_of = engine
        self._auth = auth
        self._draining = draining or asyncio.Event()
        # Resumable turns still running after their stream dropped (held so
        # they are not collected mid-turn; each ends by its own deadline).
        self._detached: set[asyncio.Task[None]] = set()

    # ----------------------------------------------------------- helpers
    @property
    def _engine(self) -> ConversationEngine:
        return self._engine_of()

    def _tenant(self, context: grpc.aio.ServicerContext[Any, Any]) -> str:
        """The caller's tenant, after the checks every RPC makes first (draining, open)."""
        if self._draining.is_set():
            raise Unavailable("this replica is shutting down; retry, another replica will serve",
                              reason="SHUTTING_DOWN")
        tenant = self._auth.tenant(context.invocation_metadata())
        self._engine_of()  # not open yet: UNAVAILABLE with RetryInfo, before any work
        return tenant

    @staticmethod
    def _timeout(context: grpc.aio.ServicerContext[Any, Any]) -> float | None:
        # The turn ends a little before the caller's deadline, so that its lease
        # is released and DEADLINE_EXCEEDED sent by the server before the
        # client's own timer fires: a caller that retries at once finds the
        # thread free instead of ABORTED "busy" (the release is a database write).
        remaining = context.time_remaining()
        if remaining is None or remaining >= 1e8:
            return None
        return max(0.0, remaining - min(_DEADLINE_MARGIN_S, remaining * 0.1))

    # ------------------------------------------------------------- turns
    async def SendMessage(
        self, request: pb.SendMessageRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[pb.TurnEvent]:
        try:
            tenant = self._tenant(context)
            turn = convert.turn_request(request, tenant)
            source = ahead(self._engine.run_turn(turn, timeout_s=self._timeout(context)),
                           self._detached if request.resumable else None)
            async with contextlib.aclosing(source) as events:
                async for envelope in events:
                    yield convert.turn_event(envelope)
                    # The first event has left: the rest of the turn yields the
                    # loop's front lane to requests still waiting for theirs.
                    priority.settle()
        except Exception as exc:
            await status.abort(context, exc)

    async def ResumeTurn(
        self, request: pb.ResumeTurnRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[pb.TurnEvent]:
        try:
            tenant = self._tenant(context)
            async with contextlib.aclosing(self._engine.resume_turn(
                    tenant, request.user_id, request.thread_id, request.turn_id,
                    request.after_seq)) as events:
                async for envelope in events:
                    yield convert.turn_event(envelope)
                    priority.settle()
        except Exception as exc:
            await status.abort(context, exc)

    async def Approve(
        self, request: pb.Approval, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[pb.TurnEvent]:
        try:
            approval = convert.approval_request(request, self._tenant(context))
            async with contextlib.aclosing(ahead(
                self._engine.run_approval(approval, timeout_s=self._timeout(context)))
            ) as events:
                async for envelope in events:
                    yield convert.turn_event(envelope)
                    priority.settle()
        except Exception as exc:
            await status.abort(context, exc)

    async def Converse(
        self, request_iterator: AsyncIterator[pb.ClientMessage | Undecodable],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[pb.TurnEvent]:
        """Many turns on one stream, one after another; ``cancel`` stops the running one.

        A turn that fails (busy thread, bad input, deadline, or a bug) is
        reported as an ``error`` event and the stream stays open for the next
        message (:class:`service.converse.ConverseSession`).
        """
        try:
            tenant = self._tenant(context)
        except Exception as exc:
            await status.abort(context, exc)
            return
        session = ConverseSession(self._engine, tenant, request_iterator, self._draining)
        try:
            async with contextlib.aclosing(session.events()) as events:
                async for event in events:
                    yield event
        except Exception as exc:
            # The session reports every failure as an event; this is the last
            # net, so that even a bug in the session itself is a status, never UNKNOWN.
            await status.abort(context, exc)

    # ----------------------------------------------------------- threads
    async def _unary(self, context: grpc.aio.ServicerContext[Any, Any],
                     call: Callable[[str], Awaitable[T]]) -> T:
        """Authenticate, run ``call(tenant)``, and translate any failure at this one place."""
        try:
            return await call(self._tenant(context))
        except Exception as exc:
            await status.abort(context, exc)
            raise

    async def GetThread(
        self, request: pb.GetThreadRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.Thread:
        async def call(tenant: str) -> pb.Thread:
            view = await self._engine.get_thread(tenant, request.user_id, request.thread_id)
            return convert.thread(view)

        return await self._unary(context, call)

    async def ListThreads(
        self, request: pb.ListThreadsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.ListThreadsResponse:
        async def call(tenant: str) -> pb.ListThreadsResponse:
            rows, token = await self._engine.list_threads(
                tenant, request.user_id, page_size=request.page_size, page_token=request.page_token)
            return pb.ListThreadsResponse(threads=[convert.summary(r) for r in rows],
                                          next_page_token=token)

        return await self._unary(context, call)

    async def DeleteThread(
        self, request: pb.DeleteThreadRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.DeleteThreadResponse:
        async def call(tenant: str) -> pb.DeleteThreadResponse:
            erased = await self._engine.delete_thread(tenant, request.user_id, request.thread_id)
            return pb.DeleteThreadResponse(deleted=True, memories_erased=erased)

        return await self._unary(context, call)

    async def ReleaseHandoff(
        self, request: pb.ReleaseHandoffRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.Thread:
        async def call(tenant: str) -> pb.Thread:
            view = await self._engine.release_handoff(tenant, request.user_id, request.thread_id)
            return convert.thread(view)

        return await self._unary(context, call)
