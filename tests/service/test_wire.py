"""Undecodable bytes on the wire: INVALID_ARGUMENT with a message, never UNKNOWN.

A raw channel (no request serializer) sends hand-made protobuf bytes, as a
client with a broken encoder or a stale proto would.
"""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from diwaniya.v1 import conversations_pb2 as pb
from tests.service.conftest import kinds

PREFIX = "/diwaniya.v1.Conversations/"


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2) with a one-byte length."""
    assert len(payload) < 128
    return bytes([(number << 3) | 2, len(payload)]) + payload


# "هلا" in UTF-8 with its middle byte cut: what a client that slices bytes sends.
BROKEN_ARABIC = "هلا".encode()[:3] + "والله".encode()

UNARY_STREAM = {
    "SendMessage": _field(2, b"u1") + _field(3, BROKEN_ARABIC),
    "Approve": _field(2, b"u1") + _field(1, b"\xff\xfe"),
}
UNARY_UNARY = {
    "GetThread": _field(1, b"\xc3\x28"),  # an invalid two-byte sequence
    "ListThreads": _field(1, b"\xed\xa0\x80"),  # a UTF-16 surrogate encoded in UTF-8
    "DeleteThread": _field(2, b"\x80abc"),
}
TRUNCATED = b"\x1a\x40\xd9"  # field 3 claims 64 bytes, one follows


@pytest.fixture(params=["sqlite"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _raw_stream(channel: grpc.aio.Channel, method: str) -> Any:
    return channel.unary_stream(PREFIX + method, request_serializer=None,
                                response_deserializer=pb.TurnEvent.FromString)


@pytest.mark.parametrize("method", sorted(UNARY_STREAM))
async def test_unary_stream_invalid_utf8_is_invalid_argument(run_service: Any,
                                                             method: str) -> None:
    async with run_service() as svc, grpc.aio.insecure_channel(svc.target) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            async for _ in _raw_stream(channel, method)(UNARY_STREAM[method], timeout=10):
                pass
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "UTF-8" in (err.value.details() or "")
        assert "diwaniya.v1." in (err.value.details() or "")


@pytest.mark.parametrize("method", sorted(UNARY_UNARY))
async def test_unary_invalid_utf8_is_invalid_argument(run_service: Any, method: str) -> None:
    async with run_service() as svc, grpc.aio.insecure_channel(svc.target) as channel:
        call = channel.unary_unary(PREFIX + method, request_serializer=None,
                                   response_deserializer=None)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call(UNARY_UNARY[method], timeout=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "not a valid diwaniya.v1." in (err.value.details() or "")


async def test_truncated_message_is_invalid_argument(run_service: Any) -> None:
    async with run_service() as svc, grpc.aio.insecure_channel(svc.target) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            async for _ in _raw_stream(channel, "SendMessage")(TRUNCATED, timeout=10):
                pass
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_converse_bad_message_is_an_error_event_and_the_stream_goes_on(
        run_service: Any) -> None:
    good = pb.ClientMessage(message=pb.SendMessageRequest(user_id="u1", text="هلا والله"))
    bad = _field(1, _field(2, b"u1") + _field(3, BROKEN_ARABIC))  # ClientMessage.message
    async with run_service() as svc, grpc.aio.insecure_channel(svc.target) as channel:
        converse = channel.stream_stream(PREFIX + "Converse", request_serializer=None,
                                         response_deserializer=pb.TurnEvent.FromString)
        call = converse(timeout=30)
        await call.write(bad)
        first = await call.read()
        assert first.WhichOneof("event") == "error"
        assert first.error.code == "invalid_argument"
        assert "UTF-8" in first.error.message
        await call.write(good.SerializeToString())
        await call.done_writing()
        events = []
        while (event := await call.read()) is not grpc.aio.EOF:
            events.append(event)
        assert kinds(events)[0] == "turn_started"
        assert kinds(events)[-1] == "turn_completed"
        assert events[0].turn_started.user_text == "هلا والله"
        assert await call.code() == grpc.StatusCode.OK
