"""The asyncio client.

Events are the generated protobuf messages (``diwaniya.v1.TurnEvent``, typed by
the shipped ``.pyi``): one schema, no copy to drift from the ``.proto``. Errors
are the domain tree (:mod:`diwaniya.errors`), never raw ``grpc`` exceptions.

>>> async with AsyncClient("127.0.0.1:50051", api_key="k") as client:   # doctest: +SKIP
...     async for event in client.send("السلام عليكم", user_id="u1"):
...         print(event.seq, event.WhichOneof("event"))
1 turn_started
2 phase_changed
3 text_delta
…
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

import grpc

from diwaniya import errors
from diwaniya.client import _options as opt
from diwaniya.client._errors import from_rpc_error
from diwaniya.v1 import conversations_pb2 as pb
from diwaniya.v1 import conversations_pb2_grpc as pb_grpc

T = TypeVar("T")


def _hint(exc: object) -> float | None:
    status = getattr(exc, "rpc_status", None)
    return status.retry_after_s if status is not None else None


class AsyncTurnStream:
    """One turn's events; iterate it once. Raises :class:`~diwaniya.errors.DiwaniyaError` leaves.

    ``request_id`` is the turn's idempotency key (generated when not given);
    ``thread_id``, ``turn_id`` and ``last_seq`` follow the events received, so a
    caller always knows where the stream stands.

    Resume: a ``resumable`` turn whose stream breaks (UNAVAILABLE) after
    ``last_seq`` > 0 rejoins with ``ResumeTurn(thread_id, turn_id, last_seq)``
    instead of raising, at most ``retry.max_attempts`` times; events at or
    before ``last_seq`` are never yielded twice.
    """

    def __init__(self, start: Callable[[], grpc.aio.UnaryStreamCall[Any, pb.TurnEvent]], *,
                 request_id: str, thread_id: str, retry: opt.RetryPolicy,
                 resume: Callable[[str, str, int], grpc.aio.UnaryStreamCall[Any, pb.TurnEvent]]
                 | None = None) -> None:
        self._start = start
        self._resume = resume
        #: How many times the stream rejoined its turn with ResumeTurn.
        self.resumes = 0
        self._call: grpc.aio.UnaryStreamCall[Any, pb.TurnEvent] | None = None
        self._retry = retry
        self.request_id = request_id
        self.thread_id = thread_id
        self.turn_id = ""
        self.last_seq = 0
        self.attempts = 0
        #: The waits before each retry (a server's RetryInfo delay, else the backoff).
        self.retry_delays: list[float] = []
        self._cancelled = False

    def __aiter__(self) -> AsyncIterator[pb.TurnEvent]:
        return self._events()

    async def _events(self) -> AsyncIterator[pb.TurnEvent]:
        while True:
            self.attempts += 1
            self._call = call = self._start()
            seen = 0
            try:
                async for event in call:
                    if self.resumes and event.seq <= self.last_seq:
                        continue  # already yielded before the break
                    # A ``queued`` notice (seq 0) is not the turn's: repeated by a retry,
                    # it shows nothing twice (only the turn's events count, seq >= 1).
                    if event.seq:
                        seen += 1
                    self.thread_id = event.thread_id or self.thread_id
                    self.turn_id = event.turn_id or self.turn_id
                    self.last_seq = max(self.last_seq, event.seq)
                    yield event
                return
            except GeneratorExit:
                # The caller stopped iterating (break, aclose): end the call now
                # rather than when the generator is collected.
                call.cancel()
                raise
            except asyncio.CancelledError:
                if not self._cancelled:
                    raise  # the caller's task was cancelled: not ours to translate
                # grpc.aio answers a local cancel() with CancelledError; the
                # caller asked for it, so it gets the typed error, not a task cancel.
                raise errors.Cancelled("the turn was cancelled by this client") from None
            except grpc.aio.AioRpcError as rpc:
                exc = from_rpc_error(rpc)
                if (self.attempts < self._retry.max_attempts
                        and opt.may_retry(rpc.code(), thread_id=self.thread_id, events_seen=seen,
                                     retry_after_s=_hint(exc))):
                    wait = self._retry.delay(self.attempts, exc)
                    self.retry_delays.append(wait)
                    await asyncio.sleep(wait)
                    continue
                if (self._resume is not None and self.turn_id and self.last_seq > 0
                        and rpc.code() == grpc.StatusCode.UNAVAILABLE
                        and self.resumes < self._retry.max_attempts):
                    # The connection broke mid-turn; the turn goes on server-side.
                    self.resumes += 1
                    self._start = self._rejoin
                    await asyncio.sleep(self._retry.delay(self.resumes, exc))
                    continue
                raise exc from rpc

    def _rejoin(self) -> grpc.aio.UnaryStreamCall[Any, pb.TurnEvent]:
        assert self._resume is not None
        return self._resume(self.thread_id, self.turn_id, self.last_seq)

    async def collect(self) -> list[pb.TurnEvent]:
        """Every event of the turn, in order."""
        return [event async for event in self]

    def cancel(self) -> None:
        """Stop receiving; the server cancels the running turn (nothing of it is saved).

        Iterating further raises :class:`~diwaniya.errors.Cancelled`.
        """
        self._cancelled = True
        if self._call is not None:
            self._call.cancel()


class AsyncClient:
    """``diwaniya.v1.Conversations`` over one channel (plaintext, TLS or mTLS).

    ``tls_ca`` / ``tls_cert`` / ``tls_key``: PEM bytes or file paths (``tls=True``
    alone: TLS with the system roots); ``api_key`` goes out as
    ``authorization: Bearer …``; ``timeout_s`` is every call's deadline (a turn's
    deadline covers its whole stream) unless a call gives its own; ``retry``
    bounds the safe retries (see :func:`diwaniya.client._options.may_retry`).
    """

    def __init__(self, target: str, *, api_key: str | None = None, tls: bool = False,
                 tls_ca: opt.Pem | None = None, tls_cert: opt.Pem | None = None,
                 tls_key: opt.Pem | None = None, tls_server_name: str | None = None,
                 timeout_s: float | None = 120.0, retry: opt.RetryPolicy = opt.DEFAULT_RETRY,
                 own_connection: bool = False) -> None:
        self._channel = opt.aio_channel(
            target, tls=tls, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key,
            tls_server_name=tls_server_name, own_connection=own_connection)
        self._stub = pb_grpc.ConversationsStub(self._channel)
        self._metadata = opt.auth_metadata(api_key)
        self._timeout = timeout_s
        self._retry = retry

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: type[BaseException] | BaseException | TracebackType | None
                        ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._channel.close()

    message = staticmethod(opt.message)

    def _deadline(self, timeout_s: float | None) -> float | None:
        return timeout_s if timeout_s is not None else self._timeout

    def send(self, text: str, *, user_id: str, thread_id: str = "", request_id: str = "",
             country: str = "", timezone: str = "", client_time: datetime | None = None,
             register: pb.Register.ValueType = pb.REGISTER_UNSPECIFIED,
             timeout_s: float | None = None, resumable: bool = False) -> AsyncTurnStream:
        """One turn (``SendMessage``); iterate the result for its ``TurnEvent`` s.

        ``request_id`` defaults to a fresh uuid4, reused by every retry of this turn.
        ``resumable``: the turn outlives a dropped connection and this stream
        rejoins it (``ResumeTurn``); :meth:`AsyncTurnStream.cancel` then only
        stops receiving.
        """
        request_id = request_id or opt.new_request_id()
        request = opt.message(text, user_id=user_id, thread_id=thread_id, request_id=request_id,
                              country=country, timezone=timezone, client_time=client_time,
                              register=register)
        timeout = self._deadline(timeout_s)
        request.resumable = resumable

        def resume(thread: str, turn: str, after: int
                   ) -> grpc.aio.UnaryStreamCall[Any, pb.TurnEvent]:
            return self._stub.ResumeTurn(pb.ResumeTurnRequest(
                thread_id=thread, turn_id=turn, after_seq=after, user_id=user_id),
                metadata=self._metadata, timeout=timeout)

        return AsyncTurnStream(
            lambda: self._stub.SendMessage(request, metadata=self._metadata, timeout=timeout),
            request_id=request_id, thread_id=thread_id, retry=self._retry,
            resume=resume if resumable else None)

    def approve(self, call_id: str, *, thread_id: str, user_id: str, approved: bool = True,
                request_id: str = "", timeout_s: float | None = None) -> AsyncTurnStream:
        """Answer an ``approval_required`` event; iterate the result for the settling turn."""
        request_id = request_id or opt.new_request_id()
        request = pb.Approval(thread_id=thread_id, user_id=user_id, call_id=call_id,
                              approved=approved, request_id=request_id)
        timeout = self._deadline(timeout_s)
        return AsyncTurnStream(
            lambda: self._stub.Approve(request, metadata=self._metadata, timeout=timeout),
            request_id=request_id, thread_id=thread_id, retry=self._retry)

    async def converse(self, messages: AsyncIterable[pb.ClientMessage]
                       ) -> AsyncIterator[pb.TurnEvent]:
        """Many turns on one bidirectional stream (never retried: it is not one request)."""
        call = self._stub.Converse(messages, metadata=self._metadata)
        try:
            async for event in call:
                yield event
        except grpc.aio.AioRpcError as rpc:
            raise from_rpc_error(rpc) from rpc

    async def _unary(self, invoke: Callable[[], Awaitable[T]], *, idempotent: bool) -> T:
        attempt = 1
        while True:
            try:
                return await invoke()
            except grpc.aio.AioRpcError as rpc:
                exc = from_rpc_error(rpc)
                if (not idempotent or attempt >= self._retry.max_attempts
                        or not opt.transient(rpc.code(), _hint(exc))):
                    raise exc from rpc
                await asyncio.sleep(self._retry.delay(attempt, exc))
                attempt += 1

    async def get_thread(self, thread_id: str, *, user_id: str,
                         timeout_s: float | None = None) -> pb.Thread:
        request = pb.GetThreadRequest(thread_id=thread_id, user_id=user_id)
        return await self._unary(lambda: self._stub.GetThread(
            request, metadata=self._metadata, timeout=self._deadline(timeout_s)),
            idempotent=True)

    async def list_threads(self, *, user_id: str, page_size: int = 20, page_token: str = "",
                           timeout_s: float | None = None) -> pb.ListThreadsResponse:
        request = pb.ListThreadsRequest(user_id=user_id, page_size=page_size,
                                        page_token=page_token)
        return await self._unary(lambda: self._stub.ListThreads(
            request, metadata=self._metadata, timeout=self._deadline(timeout_s)),
            idempotent=True)

    async def delete_thread(self, thread_id: str, *, user_id: str,
                            timeout_s: float | None = None) -> pb.DeleteThreadResponse:
        """Not retried: a repeat of a delete that went through would answer NOT_FOUND."""
        request = pb.DeleteThreadRequest(thread_id=thread_id, user_id=user_id)
        return await self._unary(lambda: self._stub.DeleteThread(
            request, metadata=self._metadata, timeout=self._deadline(timeout_s)),
            idempotent=False)

    async def release_handoff(self, thread_id: str, *, user_id: str,
                              timeout_s: float | None = None) -> pb.Thread:
        """Give a handed-off thread back to the bot (idempotent on the server); the thread."""
        request = pb.ReleaseHandoffRequest(thread_id=thread_id, user_id=user_id)
        return await self._unary(lambda: self._stub.ReleaseHandoff(
            request, metadata=self._metadata, timeout=self._deadline(timeout_s)),
            idempotent=True)
