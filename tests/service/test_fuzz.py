"""Hypothesis over the whole request space against a live server: never UNKNOWN or INTERNAL.

The server is the real one (grpc.aio on 127.0.0.1:0, SQLite store, offline
responder) running on its own event loop in a thread, so that hypothesis can
drive it with plain synchronous calls.  Every RPC gets random fields —
hostile Unicode, huge and empty strings, malformed ids, timestamps from year 1
to beyond 9999, bad time zones and countries — and raw random bytes.  Any
status is acceptable except UNKNOWN and INTERNAL (those mean the server did
not understand its own failure); afterwards the server must still be SERVING.
"""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from diwaniya.v1 import conversations_pb2 as pb
from diwaniya.v1 import conversations_pb2_grpc as pb_grpc
from majlis.culture import FixedClock
from service import Settings, build_app
from service.errors import from_status
from tests.service.conftest import DEFAULT_TIME

BAD_CODES = {grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL}
BAD_EVENT_CODES = {"unknown", "internal"}
METHODS = ("Converse", "SendMessage", "Approve", "GetThread", "ListThreads", "DeleteThread")
FUZZ = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


class LiveServer:
    """The service on its own loop in a daemon thread; ``stop()`` drains and closes it."""

    def __init__(self, data_dir: Path) -> None:
        self._data_dir = data_dir
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self.port = 0
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)
        self._thread.start()
        assert self._ready.wait(60), "server did not start"
        if self.error:
            raise self.error

    async def _main(self) -> None:
        try:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            app = await build_app(
                Settings(data_dir=self._data_dir, listen="127.0.0.1:0", drain_grace_s=2.0),
                clock=FixedClock(DEFAULT_TIME))
            server = app.server()
            self.port = await server.start()
        except BaseException as exc:
            self.error = exc
            self._ready.set()
            raise
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await server.drain(1, delay=0)
            await app.close()

    def stop(self) -> None:
        assert self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[grpc.Channel, str]]:
    server = LiveServer(tmp_path_factory.mktemp("fuzz") / "data")
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    stub = pb_grpc.ConversationsStub(channel)
    # A real thread, so that some fuzzed requests hit an existing one.
    events = list(stub.SendMessage(pb.SendMessageRequest(user_id="fuzz-user", text="هلا والله"),
                                   timeout=60))
    assert events[-1].HasField("turn_completed")
    try:
        yield channel, events[-1].thread_id
    finally:
        health = health_pb2_grpc.HealthStub(channel)
        status = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=10).status
        channel.close()
        server.stop()
        assert status == health_pb2.HealthCheckResponse.SERVING


# --------------------------------------------------------------- strategies
DIALECT = ["شلونك؟ عندي مشكلة بالطلب", "ازيك يا باشا، الطلب اتأخر", "كيفك؟ بدي رجّع الغرض",
           "واش راك؟ بغيت نبدل الكوموند", "شكو ماكو؟ اريد اعرف وين الطلب",
           "salam 3likom, wen el order?",
           "السلام عليكم ورحمة الله", "ok thanks يعطيك العافية"]
HOSTILE = ["", " ", "\u200b\u200c\u200d", "\u202eهلا\u202c", "\x00", "\ufeff", "\U0010ffff",
           "ﷺ" * 50, "ا" * 300, "هلا " * 1500, "ب" * 20_000, "\u0651" * 100, "<script>",
           "'); DROP TABLE threads; --", "../../etc/passwd", "%s%n", "\r\n" * 10]
ZONES = ["", "Asia/Kuwait", "Asia/Riyadh", "UTC", "Etc/GMT+12", "Etc/GMT-14", "Pacific/Kiritimati",
         "America/Adak", "Mars/Olympus", "../../etc/localtime", "posix/Asia/Kuwait", "Asia/",
         "A" * 100, "\x00", "asia/kuwait"]
COUNTRIES = ["", "KW", "SA", "EG", "MA", "kw", "XX", "Kuwait", "K", "كو", "\x00\x00", "K W"]


def text(extra: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(extra), st.text(max_size=64),
                     st.text(alphabet=st.characters(min_codepoint=0x0600, max_codepoint=0x06FF),
                             max_size=200))


def ids(thread_id: str) -> st.SearchStrategy[str]:
    return st.one_of(st.just(""), st.just(thread_id), st.sampled_from(HOSTILE),
                     st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_\-]{0,70}", fullmatch=True),
                     st.text(max_size=140))


def timestamps() -> st.SearchStrategy[Timestamp | None]:
    # Timestamp's documented range is 0001-01-01 .. 9999-12-31; go past both ends.
    seconds = st.one_of(st.sampled_from([-62135596800, -62135596801, 253402300799, 253402300800,
                                         0, -1, 2**62, -(2**62)]),
                        st.integers(-(2**63), 2**63 - 1))
    nanos = st.one_of(st.just(0), st.sampled_from([999_999_999, 1_000_000_000, -1]),
                      st.integers(-(2**31), 2**31 - 1))
    return st.one_of(st.none(), st.builds(lambda s, n: Timestamp(seconds=s, nanos=n),
                                          seconds, nanos))


@st.composite
def send_requests(draw: st.DrawFn, thread_id: str) -> pb.SendMessageRequest:
    msg = pb.SendMessageRequest(
        thread_id=draw(ids(thread_id)),
        user_id=draw(st.one_of(st.just("fuzz-user"), ids(thread_id))),
        text=draw(text(DIALECT + HOSTILE)),
        request_id=draw(st.one_of(st.just(""), st.text(max_size=140), st.uuids().map(str))),
        country=draw(st.one_of(st.sampled_from(COUNTRIES), st.text(max_size=5))),
        timezone=draw(st.one_of(st.sampled_from(ZONES), st.text(max_size=70))),
        register=draw(st.integers(-3, 5)),
    )
    ts = draw(timestamps())
    if ts is not None:
        msg.client_time.CopyFrom(ts)
    return msg


@st.composite
def approvals(draw: st.DrawFn, thread_id: str) -> pb.Approval:
    return pb.Approval(thread_id=draw(ids(thread_id)),
                       user_id=draw(st.one_of(st.just("fuzz-user"), ids(thread_id))),
                       call_id=draw(st.one_of(st.just(""), st.text(max_size=200))),
                       approved=draw(st.booleans()),
                       request_id=draw(st.one_of(st.just(""), st.text(max_size=140))))


def _timed(seconds: int, timezone: str, *, nanos: int = 0) -> pb.SendMessageRequest:
    msg = pb.SendMessageRequest(user_id="fuzz-user", text="صباح الخير", timezone=timezone)
    msg.client_time.CopyFrom(Timestamp(seconds=seconds, nanos=nanos))
    return msg


# Statuses only our handlers produce (not grpc's own limits or the client's deadline):
# each must carry google.rpc details with a stable reason (service.errors.translate).
OURS = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.ABORTED,
        grpc.StatusCode.FAILED_PRECONDITION}


def _check_status(exc: grpc.RpcError) -> None:
    assert exc.code() not in BAD_CODES, (exc.code(), exc.details())
    if exc.code() in OURS:
        error = from_status(exc)
        assert error.reason not in ("", "ERROR"), (exc.code(), exc.details())


def _check(call: Any) -> None:
    """Consume a call; only its status matters (and no in-stream error says internal)."""
    try:
        for event in call:
            if event.HasField("error"):
                assert event.error.code not in BAD_EVENT_CODES, event.error
                assert event.error.reason, event.error
    except grpc.RpcError as exc:
        _check_status(exc)


def _check_unary(fn: Any, request: Any) -> None:
    try:
        fn(request, timeout=30)
    except grpc.RpcError as exc:
        _check_status(exc)


# -------------------------------------------------------------------- tests
def test_fuzz_send_message(live: tuple[grpc.Channel, str]) -> None:
    channel, thread_id = live
    stub = pb_grpc.ConversationsStub(channel)

    @FUZZ
    @given(send_requests(thread_id))
    # Found by this test: the last UTC second of 9999 is year 10000 in Kuwait,
    # and 0001-01-01 is year 0 west of UTC (OverflowError → INTERNAL before).
    @example(_timed(253402300799, ""))
    @example(_timed(253402300799, "Asia/Kuwait"))
    @example(_timed(-62135596800, "America/Adak"))
    @example(_timed(2**62, "Etc/GMT-14"))
    @example(_timed(0, "UTC", nanos=-1))
    def run(request: pb.SendMessageRequest) -> None:
        _check(stub.SendMessage(request, timeout=30))

    run()


def test_fuzz_converse(live: tuple[grpc.Channel, str]) -> None:
    channel, thread_id = live
    stub = pb_grpc.ConversationsStub(channel)
    client_messages = st.one_of(
        send_requests(thread_id).map(lambda m: pb.ClientMessage(message=m)),
        approvals(thread_id).map(lambda a: pb.ClientMessage(approval=a)),
        st.text(max_size=80).map(lambda t: pb.ClientMessage(cancel=pb.Cancel(turn_id=t))),
        st.just(pb.ClientMessage()),  # no oneof set at all
    )

    @FUZZ
    @given(st.lists(client_messages, min_size=1, max_size=3))
    # The year-9999 instants of the SendMessage examples, inside a stream (error events).
    @example([pb.ClientMessage(message=_timed(253402300799, "Asia/Kuwait")),
              pb.ClientMessage(message=_timed(2**62, "Etc/GMT-14", nanos=-1))])
    @example([pb.ClientMessage(approval=pb.Approval(user_id="fuzz-user", thread_id=thread_id,
                                                    call_id="x" * 10_000))])
    def run(messages: list[pb.ClientMessage]) -> None:
        _check(stub.Converse(iter(messages), timeout=30))

    run()


def test_fuzz_thread_calls(live: tuple[grpc.Channel, str]) -> None:
    channel, thread_id = live
    stub = pb_grpc.ConversationsStub(channel)
    users = st.one_of(st.just("fuzz-user"), ids(thread_id))
    calls = st.one_of(
        st.builds(lambda t, u: (stub.GetThread, pb.GetThreadRequest(thread_id=t, user_id=u)),
                  ids(thread_id), users),
        st.builds(lambda u, n, p: (stub.ListThreads, pb.ListThreadsRequest(
            user_id=u, page_size=n, page_token=p)),
            users, st.integers(-(2**31), 2**31 - 1),
            st.one_of(st.just(""), st.text(max_size=100), st.binary(max_size=60).map(
                lambda b: base64.urlsafe_b64encode(b).decode()))),
        # Deleting the shared thread is fine: later examples then see NOT_FOUND.
        st.builds(lambda t, u: (stub.DeleteThread, pb.DeleteThreadRequest(thread_id=t,
                                                                           user_id=u)),
                  ids(thread_id), users),
    )

    @FUZZ
    @given(calls, approvals(thread_id))
    def run(call: tuple[Any, Any], approval: pb.Approval) -> None:
        _check_unary(*call)
        _check(stub.Approve(approval, timeout=30))

    run()


def test_fuzz_raw_bytes(live: tuple[grpc.Channel, str]) -> None:
    channel, _ = live

    @FUZZ
    @given(st.sampled_from(METHODS), st.binary(max_size=400))
    def run(method: str, data: bytes) -> None:
        path = f"/diwaniya.v1.Conversations/{method}"
        if method == "Converse":
            _check(channel.stream_stream(path, request_serializer=None,
                                         response_deserializer=pb.TurnEvent.FromString)(
                iter([data]), timeout=30))
        elif method in ("SendMessage", "Approve"):
            _check(channel.unary_stream(path, request_serializer=None,
                                        response_deserializer=pb.TurnEvent.FromString)(
                data, timeout=30))
        else:
            _check_unary(channel.unary_unary(path, request_serializer=None,
                                             response_deserializer=None), data)

    run()
