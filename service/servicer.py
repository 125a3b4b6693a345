"""``diwaniya.v1.Conversations`` over grpc.aio: thin translation onto the engine."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc

from diwaniya.errors import DiwaniyaError, Unavailable
from diwaniya.v1 import conversations_pb2 as pb
from diwaniya.v1 import conversations_pb2_grpc as pb_grpc
from majlis.engine import ConversationEngine
from service import convert
from service import errors as status
from service.auth import ApiKeyAuth
from service.errors import error_code, is_retryable
from service.wire import Undecodable

log = logging.getLogger("diwaniya.service")
T = TypeVar("T")

# Turns a Converse stream may have queued behind the running one.
CONVERSE_INBOX = 16


class ConversationsServicer(pb_grpc.ConversationsServicer):
    def __init__(self, engine: ConversationEngine, auth: ApiKeyAuth,
                 draining: asyncio.Event | None = None) -> None:
        self._engine = engine
        self._auth = auth
        self._draining = draining or asyncio.Event()

    # ----------------------------------------------------------- helpers
    def _tenant(self, context: grpc.aio.ServicerContext[Any, Any]) -> str:
        if self._draining.is_set():
            raise Unavailable("this replica is shutting down; retry, another replica will serve")
        return self._auth.tenant(context.invocation_metadata())

    @staticmethod
    async def _abort(context: grpc.aio.ServicerContext[Any, Any], exc: Exception) -> None:
        if isinstance(exc, DiwaniyaError):
            await status.abort(context, exc)
        ref = uuid.uuid4().hex[:12]
        log.exception("internal error (ref %s)", ref, exc_info=exc)
        await context.abort(grpc.StatusCode.INTERNAL,
                            f"internal error (ref {ref}); the turn was not saved, retry is safe")

    @staticmethod
    def _timeout(context: grpc.aio.ServicerContext[Any, Any]) -> float | None:
        remaining = context.time_remaining()
        return remaining if remaining is not None and remaining < 1e8 else None

    # ------------------------------------------------------------- turns
    async def SendMessage(
        self, request: pb.SendMessageRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[pb.TurnEvent]:
        try:
            tenant = self._tenant(context)
            turn = convert.turn_request(request, tenant)
            async with contextlib.aclosing(
                self._engine.run_turn(turn, timeout_s=self._timeout(context))
            ) as events:
                async for envelope in events:
                    yield convert.turn_event(envelope)
        except Exception as exc:
            await self._abort(context, exc)

    async def Approve(
        self, request: pb.Approval, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[pb.TurnEvent]:
        try:
            approval = convert.approval_request(request, self._tenant(context))
            async with contextlib.aclosing(
                self._engine.run_approval(approval, timeout_s=self._timeout(context))
            ) as events:
                async for envelope in events:
                    yield convert.turn_event(envelope)
        except Exception as exc:
            await self._abort(context, exc)

    async def Converse(
        self, request_iterator: AsyncIterator[pb.ClientMessage | Undecodable],
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> AsyncIterator[pb.TurnEvent]:
        """Many turns on one stream, one after another; ``cancel`` stops the running one.

        A turn that fails (busy thread, bad input, deadline) is reported as an
        ``error`` event and the stream stays open for the next message.
        """
        try:
            tenant = self._tenant(context)
        except Exception as exc:
            await self._abort(context, exc)
            return
        inbox: asyncio.Queue[pb.SendMessageRequest | pb.Approval | None] = asyncio.Queue(
            CONVERSE_INBOX)
        out: asyncio.Queue[pb.TurnEvent | None] = asyncio.Queue()
        current: dict[str, Any] = {"task": None, "turn_id": ""}

        async def run(msg: pb.SendMessageRequest | pb.Approval) -> None:
            thread_id = msg.thread_id
            try:
                if isinstance(msg, pb.Approval):
                    events_of = self._engine.run_approval(convert.approval_request(msg, tenant))
                else:
                    events_of = self._engine.run_turn(convert.turn_request(msg, tenant))
                async with contextlib.aclosing(events_of) as events:
                    async for envelope in events:
                        current["turn_id"] = envelope.turn_id
                        thread_id = envelope.thread_id
                        out.put_nowait(convert.turn_event(envelope))
            except DiwaniyaError as exc:
                out.put_nowait(convert.error_event(thread_id, error_code(exc), exc.message,
                                                   retryable=is_retryable(exc)))
            except asyncio.CancelledError:
                out.put_nowait(convert.error_event(
                    thread_id, "cancelled",
                    "the turn was cancelled; nothing was added to the thread"))
                raise

        async def reader() -> None:
            async for msg in request_iterator:
                if isinstance(msg, Undecodable):
                    # Only this message is lost; the stream stays open as after any failed turn.
                    out.put_nowait(convert.error_event("", "invalid_argument", msg.message))
                    continue
                kind = msg.WhichOneof("kind")
                if kind == "cancel":
                    task = current["task"]
                    wanted = msg.cancel.turn_id
                    if task and not task.done() and wanted in ("", current["turn_id"]):
                        task.cancel()
                elif kind == "message":
                    await inbox.put(msg.message)
                elif kind == "approval":
                    await inbox.put(msg.approval)
            await inbox.put(None)

        async def worker() -> None:
            drained = asyncio.create_task(self._draining.wait())
            while True:
                # An idle stream ends as soon as the server drains, instead of
                # holding the shutdown for the whole grace period.
                got = asyncio.create_task(inbox.get())
                await asyncio.wait({got, drained}, return_when=asyncio.FIRST_COMPLETED)
                if not got.done():
                    got.cancel()
                    break
                msg = got.result()
                if msg is None:
                    break
                current["turn_id"] = ""
                current["task"] = asyncio.create_task(run(msg))
                # wait() rather than await: a cancelled turn must not cancel the worker.
                await asyncio.wait({current["task"]})
            drained.cancel()
            out.put_nowait(None)

        tasks = [asyncio.create_task(reader()), asyncio.create_task(worker())]
        try:
            while (event := await out.get()) is not None:
                yield event
        finally:
            for task in [*tasks, current["task"]]:
                if task is not None and not task.done():
                    task.cancel()
            await asyncio.gather(*(t for t in [*tasks, current["task"]] if t is not None),
                                 return_exceptions=True)

    # ----------------------------------------------------------- threads
    async def _unary(self, context: grpc.aio.ServicerContext[Any, Any],
                     call: Callable[[str], Awaitable[T]]) -> T:
        """Authenticate, run ``call(tenant)``, and translate any failure at this one place."""
        try:
            return await call(self._tenant(context))
        except Exception as exc:
            await self._abort(context, exc)
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
