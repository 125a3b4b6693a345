"""Errors on the wire: google.rpc details on every status, no unreported exception.

Real server on 127.0.0.1:0 (SQLite); the only injected fault is a chat model
that raises an unexpected exception once — a bug of ours as far as the
service can tell — to show that it becomes an INTERNAL ``error`` event and a
log line with the traceback, and that the same Converse stream then serves
the next turn.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

import nlp
from diwaniya import errors
from diwaniya.v1 import conversations_pb2 as pb
from majlis.models import ModelOutput, ModelRequest, OfflineResponder
from service import DiwaniyaClient, Settings
from service.errors import DOMAIN, from_status, translate
from tests.service.conftest import collect, kinds, running

SECRET = "/srv/secret/path token=hunter2"


class FaultyModel:
    """The offline responder, except that its first ``fails`` calls raise a bare RuntimeError."""

    name = "offline"

    def __init__(self, fails: int = 1) -> None:
        self._inner = OfflineResponder(keys=nlp.search_keys, expand=nlp.dialect_to_msa,
                                       dialect_cue=nlp.has_dialect_words)
        self.fails = fails

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelOutput]:
        if self.fails > 0:
            self.fails -= 1
            raise RuntimeError(f"bug with internals {SECRET}")
        async for out in self._inner.stream(request):
            yield out


@asynccontextmanager
async def serve(tmp_path: Path, model: FaultyModel | None = None
                ) -> AsyncIterator[DiwaniyaClient]:
    settings = Settings(data_dir=tmp_path / "data", listen="127.0.0.1:0")
    async with running(settings, model=model) as svc:
        yield svc.client


async def _messages(*texts: str) -> AsyncIterator[pb.ClientMessage]:
    for text in texts:
        yield pb.ClientMessage(message=pb.SendMessageRequest(text=text, user_id="edge-u1"))


def _details(exc: grpc.aio.AioRpcError) -> dict[str, object]:
    raw = dict(exc.trailing_metadata() or ())["grpc-status-details-bin"]
    status = status_pb2.Status.FromString(raw)
    found: dict[str, object] = {}
    for cls in (error_details_pb2.ErrorInfo, error_details_pb2.BadRequest,
                error_details_pb2.RetryInfo):
        for packed in status.details:
            if packed.Is(cls.DESCRIPTOR):
                value = cls()
                packed.Unpack(value)
                found[cls.__name__] = value
    return found


async def test_unexpected_error_in_a_converse_turn_is_an_error_event_and_a_log_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="diwaniya.service")
    async with serve(tmp_path, FaultyModel(fails=1)) as client:
        events = await collect(client.converse(_messages("هلا والله", "السلام عليكم")))
    errors_seen = [e for e in events if e.HasField("error")]
    assert len(errors_seen) == 1
    error = errors_seen[0].error
    assert (error.code, error.reason, error.retryable) == ("internal", "INTERNAL", False)
    assert "hunter2" not in error.message and "RuntimeError" not in error.message
    # The stream stayed usable: the next message was a whole turn.
    assert kinds(events)[-1] == "turn_completed"
    assert events[-1].turn_completed.text
    ref = error.message.split("(ref ")[1].split(")")[0]
    logged = [r for r in caplog.records if ref in r.getMessage()]
    assert len(logged) == 1 and logged[0].exc_info is not None
    assert logged[0].exc_info[0] is RuntimeError


async def test_unexpected_error_in_a_unary_call_is_internal_with_a_reference(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="diwaniya.service")
    async with serve(tmp_path, FaultyModel(fails=1)) as client:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await collect(client.send("هلا", user_id="edge-u2"))
        # The next call on the same server works.
        events = await collect(client.send("هلا", user_id="edge-u2"))
    assert err.value.code() == grpc.StatusCode.INTERNAL
    assert "hunter2" not in (err.value.details() or "")
    info = _details(err.value)["ErrorInfo"]
    assert isinstance(info, error_details_pb2.ErrorInfo)
    assert (info.reason, info.domain) == ("INTERNAL", DOMAIN) and info.metadata["ref"]
    assert any(info.metadata["ref"] in r.getMessage() and r.exc_info for r in caplog.records)
    assert kinds(events)[-1] == "turn_completed"


async def test_wire_details_and_the_way_back(tmp_path: Path) -> None:
    async with serve(tmp_path) as client:
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await client.get_thread("no-such-thread", user_id="edge-u3")
        with pytest.raises(grpc.aio.AioRpcError) as long_text:
            await collect(client.send("كلام " * 1200, user_id="edge-u3"))
        with pytest.raises(grpc.aio.AioRpcError) as bad_id:
            await collect(client.send("هلا", user_id="edge u3"))

    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    info = _details(missing.value)["ErrorInfo"]
    assert isinstance(info, error_details_pb2.ErrorInfo)
    assert (info.reason, info.domain) == ("THREAD_NOT_FOUND", "diwaniya.v1")
    back = from_status(missing.value)
    assert type(back) is errors.NotFound and back.reason == "THREAD_NOT_FOUND"

    assert long_text.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    found = _details(long_text.value)
    bad = found["BadRequest"]
    assert isinstance(bad, error_details_pb2.BadRequest)
    assert [v.field for v in bad.field_violations] == ["text"]
    assert "limit is 4000" in bad.field_violations[0].description
    assert found["ErrorInfo"].reason == "TEXT_TOO_LONG"  # type: ignore[attr-defined]
    back = from_status(long_text.value)
    assert isinstance(back, errors.InvalidRequest)
    assert (back.field, back.reason) == ("text", "TEXT_TOO_LONG")

    back = from_status(bad_id.value)
    assert isinstance(back, errors.InvalidRequest)
    assert (back.field, back.reason) == ("user_id", "INVALID_USER_ID")


class _Call:
    """What a failed call offers to ``from_status`` (code, details, trailing metadata)."""

    def __init__(self, status: grpc.Status) -> None:
        self._status = status

    def code(self) -> grpc.StatusCode:
        return self._status.code

    def details(self) -> str:
        return self._status.details

    def trailing_metadata(self) -> tuple[tuple[str, bytes], ...]:
        return tuple(self._status.trailing_metadata)


@pytest.mark.parametrize("exc", [
    errors.InvalidRequest("text is empty", field="text", reason="TEXT_EMPTY"),
    errors.CalendarRangeError("date 9999-12-31 is outside the supported calendar range"),
    errors.NotFound("thread t not found for user u"),
    errors.ThreadBusy("another turn is running on this thread"),
    errors.LeaseLost("the turn lost its lock"),
    errors.RequestIdReused("request_id r names another message"),
    errors.Unauthenticated("the API key is not valid"),
    errors.PermissionDenied("not allowed"),
    errors.ResourceExhausted("queue full", retry_after_s=2.5),
    errors.DeadlineExceeded("the turn deadline passed"),
    errors.Unavailable("replica draining", reason="SHUTTING_DOWN", retry_after_s=1.0),
    errors.StoreUnavailable("قاعدة البيانات متوقفة"),
    errors.ModelUnavailable("the model failed after 3 tries"),
    errors.ModelError("the model refused the request"),
    errors.ConfigurationError("bad tools file"),
])
def test_translate_then_from_status_gives_back_the_error(exc: errors.DiwaniyaError) -> None:
    status = translate(exc)
    back = from_status(_Call(status))
    assert type(back) is type(exc)
    assert (back.message, back.reason) == (exc.message, exc.reason)
    assert getattr(back, "field", None) == getattr(exc, "field", None)
    if getattr(exc, "retry_after_s", None) is not None:
        assert getattr(back, "retry_after_s", None) == exc.retry_after_s  # type: ignore[attr-defined]


@pytest.mark.parametrize(("exc", "delay_ms"), [
    (errors.ThreadBusy("busy"), 1000),
    (errors.ResourceExhausted("queue full", retry_after_s=2.5), 2500),
    (errors.StoreUnavailable("down"), 1000),
    (errors.ModelUnavailable("model down"), 1000),
])
def test_retryable_statuses_carry_retry_info(exc: errors.DiwaniyaError, delay_ms: int) -> None:
    status = status_pb2.Status.FromString(dict(translate(exc).trailing_metadata)[
        "grpc-status-details-bin"])
    retry = [d for d in status.details if d.Is(error_details_pb2.RetryInfo.DESCRIPTOR)]
    assert len(retry) == 1
    info = error_details_pb2.RetryInfo()
    retry[0].Unpack(info)
    assert info.retry_delay.ToMilliseconds() == delay_ms


def test_non_retryable_statuses_carry_no_retry_info() -> None:
    for exc in (errors.InvalidRequest("x", field="text"), errors.NotFound("x"),
                errors.DeadlineExceeded("x")):
        status = status_pb2.Status.FromString(dict(translate(exc).trailing_metadata)[
            "grpc-status-details-bin"])
        assert not any(d.Is(error_details_pb2.RetryInfo.DESCRIPTOR) for d in status.details)
        assert any(d.Is(error_details_pb2.ErrorInfo.DESCRIPTOR) for d in status.details)


async def test_a_stream_error_event_says_what_the_status_says(tmp_path: Path) -> None:
    async with serve(tmp_path) as client:
        events = await collect(client.converse(_messages("\u200b", "كلام " * 1200, "هلا")))
        statuses = []
        for text in ("\u200b", "كلام " * 1200):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await collect(client.send(text, user_id="edge-u1"))
            statuses.append(from_status(err.value))
    in_stream = [e.error for e in events if e.HasField("error")]
    assert [(e.code, e.reason) for e in in_stream] == [
        ("invalid_argument", "TEXT_EMPTY"), ("invalid_argument", "TEXT_TOO_LONG")]
    assert [s.reason for s in statuses] == ["TEXT_EMPTY", "TEXT_TOO_LONG"]
    assert [e.message for e in in_stream] == [s.message for s in statuses]
    assert kinds(events)[-1] == "turn_completed"


def test_a_locked_sqlite_file_that_escaped_every_store_boundary_is_unavailable(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The one mapping (service.errors) knows a driver's outage error even when no
    ``persistence.errors()`` wrapped it: UNAVAILABLE with RetryInfo, never INTERNAL."""
    import sqlite3

    path = tmp_path / "locked.sqlite3"
    holder = sqlite3.connect(path)
    holder.execute("CREATE TABLE t (x INTEGER)")
    holder.commit()
    holder.execute("BEGIN IMMEDIATE")  # another process's write transaction
    other = sqlite3.connect(path, timeout=0)
    try:
        with pytest.raises(sqlite3.OperationalError) as raised:
            other.execute("INSERT INTO t VALUES (1)")
    finally:
        other.close()
        holder.rollback()
        holder.close()
    with caplog.at_level(logging.WARNING, logger="diwaniya.service"):
        status = translate(raised.value)
    assert status.code == grpc.StatusCode.UNAVAILABLE
    details = status_pb2.Status.FromString(dict(status.trailing_metadata)
                                           ["grpc-status-details-bin"])
    infos = [d for d in details.details if d.Is(error_details_pb2.RetryInfo.DESCRIPTOR)]
    assert len(infos) == 1
    assert "database is locked" in status.details and "internal error" not in status.details
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
