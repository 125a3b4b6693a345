"""The blocking client: the same calls, options and errors as :class:`AsyncClient`.

>>> with Client("127.0.0.1:50051", api_key="k") as client:       # doctest: +SKIP
...     reply = [e.turn_completed.text for e in client.send("كم سعر التوصيل؟", user_id="u1")
...              if e.HasField("turn_completed")]
>>> reply                                                          # doctest: +SKIP
['التوصيل مجاني للطلبات فوق ١٠ دنانير.']
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

import grpc

from diwaniya.client import _options as opt
from diwaniya.client._errors import from_rpc_error
from diwaniya.v1 import conversations_pb2 as pb
from diwaniya.v1 import conversations_pb2_grpc as pb_grpc

T = TypeVar("T")


def _hint(exc: object) -> float | None:
    status = getattr(exc, "rpc_status", None)
    return status.retry_after_s if status is not None else None


class TurnStream:
    """One turn's events, blocking; iterate it once (see :class:`AsyncTurnStream`)."""

    def __init__(self, start: Callable[[], Any], *, request_id: str, thread_id: str,
                 retry: opt.RetryPolicy) -> None:
        self._start = start
        self._call: Any = None
        self._retry = retry
        self.request_id = request_id
        self.thread_id = thread_id
        self.turn_id = ""
        self.last_seq = 0
        self.attempts = 0
        #: The waits before each retry (a server's RetryInfo delay, else the backoff).
        self.retry_delays: list[float] = []

    def __iter__(self) -> Iterator[pb.TurnEvent]:
        return self._events()

    def _events(self) -> Iterator[pb.TurnEvent]:
        while True:
            self.attempts += 1
            self._call = call = self._start()
            seen = 0
            try:
                for event in call:
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
                call.cancel()  # the caller stopped iterating: end the call now
                raise
            except grpc.RpcError as rpc:
                exc = from_rpc_error(rpc)
                code = rpc.code() if hasattr(rpc, "code") else grpc.StatusCode.UNKNOWN
                if (self.attempts < self._retry.max_attempts
                        and opt.may_retry(code, thread_id=self.thread_id, events_seen=seen,
                                     retry_after_s=_hint(exc))):
                    wait = self._retry.delay(self.attempts, exc)
                    self.retry_delays.append(wait)
                    time.sleep(wait)
                    continue
                # Resume seam: AsyncTurnStream rejoins a resumable turn via ResumeTurn
                # here; the blocking client does not yet (send the same request_id again).
                raise exc from rpc

    def collect(self) -> list[pb.TurnEvent]:
        return list(self)

    def cancel(self) -> None:
        if self._call is not None:
            self._call.cancel()


class Client:
    """Blocking ``diwaniya.v1.Conversations`` client; options as :class:`AsyncClient`."""

    def __init__(self, target: str, *, api_key: str | None = None, tls: bool = False,
                 tls_ca: opt.Pem | None = None, tls_cert: opt.Pem | None = None,
                 tls_key: opt.Pem | None = None, tls_server_name: str | None = None,
                 timeout_s: float | None = 120.0, retry: opt.RetryPolicy = opt.DEFAULT_RETRY,
                 own_connection: bool = False) -> None:
        self._channel = opt.sync_channel(
            target, tls=tls, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key,
            tls_server_name=tls_server_name, own_connection=own_connection)
        self._stub = pb_grpc.ConversationsStub(self._channel)
        self._metadata = opt.auth_metadata(api_key)
        self._timeout = timeout_s
        self._retry = retry

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None
                 ) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    message = staticmethod(opt.message)

    def _deadline(self, timeout_s: float | None) -> float | None:
        return timeout_s if timeout_s is not None else self._timeout

    def send(self, text: str, *, user_id: str, thread_id: str = "", request_id: str = "",
             country: str = "", timezone: str = "", client_time: datetime | None = None,
             register: pb.Register.ValueType = pb.REGISTER_UNSPECIFIED,
             timeout_s: float | None = None) -> TurnStream:
        """One turn (``SendMessage``); ``request_id`` defaults to a fresh uuid4."""
        request_id = request_id or opt.new_request_id()
        request = opt.message(text, user_id=user_id, thread_id=thread_id, request_id=request_id,
                              country=country, timezone=timezone, client_time=client_time,
                              register=register)
        timeout = self._deadline(timeout_s)
        return TurnStream(
            lambda: self._stub.SendMessage(request, metadata=self._metadata, timeout=timeout),
            request_id=request_id, thread_id=thread_id, retry=self._retry)

    def approve(self, call_id: str, *, thread_id: str, user_id: str, approved: bool = True,
                request_id: str = "", timeout_s: float | None = None) -> TurnStream:
        request_id = request_id or opt.new_request_id()
        request = pb.Approval(thread_id=thread_id, user_id=user_id, call_id=call_id,
                              approved=approved, request_id=request_id)
        timeout = self._deadline(timeout_s)
        return TurnStream(
            lambda: self._stub.Approve(request, metadata=self._metadata, timeout=timeout),
            request_id=request_id, thread_id=thread_id, retry=self._retry)

    def converse(self, messages: Iterable[pb.ClientMessage]) -> Iterator[pb.TurnEvent]:
        """Many turns on one bidirectional stream (never retried)."""
        try:
            yield from self._stub.Converse(iter(messages), metadata=self._metadata)
        except grpc.RpcError as rpc:
            raise from_rpc_error(rpc) from rpc

    def _unary(self, invoke: Callable[[], T], *, idempotent: bool) -> T:
        attempt = 1
        while True:
            try:
                return invoke()
            except grpc.RpcError as rpc:
                exc = from_rpc_error(rpc)
                code = rpc.code() if hasattr(rpc, "code") else grpc.StatusCode.UNKNOWN
                if not idempotent or attempt >= self._retry.max_attempts \
                        or not opt.transient(code, _hint(exc)):
                    raise exc from rpc
                time.sleep(self._retry.delay(attempt, exc))
                attempt += 1

    def get_thread(self, thread_id: str, *, user_id: str,
                   timeout_s: float | None = None) -> pb.Thread:
        request = pb.GetThreadRequest(thread_id=thread_id, user_id=user_id)
        return self._unary(lambda: self._stub.GetThread(
            request, metadata=self._metadata, timeout=self._deadline(timeout_s)),
            idempotent=True)

    def list_threads(self, *, user_id: str, page_size: int = 20, page_token: str = "",
                     timeout_s: float | None = None) -> pb.ListThreadsResponse:
        request = pb.ListThreadsRequest(user_id=user_id, page_size=page_size,
                                        page_token=page_token)
        return self._unary(lambda: self._stub.ListThreads(
            request, metadata=self._metadata, timeout=self._deadline(timeout_s)),
            idempotent=True)

    def delete_thread(self, thread_id: str, *, user_id: str,
                      timeout_s: float | None = None) -> pb.DeleteThreadResponse:
        request = pb.DeleteThreadRequest(thread_id=thread_id, user_id=user_id)
        return self._unary(lambda: self._stub.DeleteThread(
            request, metadata=self._metadata, timeout=self._deadline(timeout_s)),
            idempotent=False)

    def release_handoff(self, thread_id: str, *, user_id: str,
                        timeout_s: float | None = None) -> pb.Thread:
        request = pb.ReleaseHandoffRequest(thread_id=thread_id, user_id=user_id)
        return self._unary(lambda: self._stub.ReleaseHandoff(
            request, metadata=self._metadata, timeout=self._deadline(timeout_s)),
            idempotent=True)
