"""Statuses back into the error tree: service.errors encodes, diwaniya.client decodes."""

from __future__ import annotations

import grpc
import pytest
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from diwaniya import errors
from diwaniya.client import RetryPolicy, from_status
from diwaniya.client._options import channel_credentials, may_retry, message
from service.errors import rich_status


def _rich(code: grpc.StatusCode, text: str, *details: object) -> grpc.Status:
    packed = []
    for detail in details:
        box = any_pb2.Any()
        box.Pack(detail)  # type: ignore[arg-type]
        packed.append(box)
    return rpc_status.to_status(status_pb2.Status(code=code.value[0], message=text,
                                                  details=packed))


def test_the_servers_retry_info_comes_back_as_retry_after() -> None:
    sent = rich_status(errors.StoreUnavailable("قاعدة البيانات متوقفة، أعد المحاولة بعد ثانية"))
    got = from_status(sent.code, sent.details, sent.trailing_metadata)
    # Unavailable, or StoreUnavailable once the server's ErrorInfo reason names it.
    assert got.message == "قاعدة البيانات متوقفة، أعد المحاولة بعد ثانية"
    assert isinstance(got, errors.Unavailable) and got.retry_after_s == 1.0
    assert got.rpc_status is not None and got.rpc_status.code == "UNAVAILABLE"


def test_every_server_leaf_maps_back_to_its_status_branch() -> None:
    for leaf in (errors.InvalidRequest("x"), errors.NotFound("x"), errors.ThreadBusy("x"),
                 errors.RequestIdReused("x"), errors.Unauthenticated("x"),
                 errors.PermissionDenied("x"), errors.ResourceExhausted("x"),
                 errors.DeadlineExceeded("x"), errors.Unavailable("x"),
                 errors.ConfigurationError("x")):
        sent = rich_status(leaf)
        got = from_status(sent.code, sent.details, sent.trailing_metadata)
        assert isinstance(leaf, type(got)), (leaf, got)


def test_error_info_reason_refines_the_leaf_and_bad_request_names_the_field() -> None:
    lost = _rich(grpc.StatusCode.ABORTED, "lost the thread",
                 error_details_pb2.ErrorInfo(reason="LEASE_LOST", domain="diwaniya.v1",
                                             metadata={"thread_id": "t1"}))
    got = from_status(lost.code, lost.details, lost.trailing_metadata)
    assert type(got) is errors.LeaseLost
    assert got.rpc_status is not None
    assert (got.rpc_status.reason, got.rpc_status.domain) == ("LEASE_LOST", "diwaniya.v1")
    assert dict(got.rpc_status.metadata) == {"thread_id": "t1"}

    bad = _rich(grpc.StatusCode.INVALID_ARGUMENT, "user_id is malformed",
                error_details_pb2.ErrorInfo(reason="INVALID_REQUEST", domain="diwaniya.v1"),
                error_details_pb2.BadRequest(field_violations=[
                    error_details_pb2.BadRequest.FieldViolation(
                        field="user_id", description="use 1-128 characters of A-Z a-z 0-9")]))
    got = from_status(bad.code, bad.details, bad.trailing_metadata)
    assert type(got) is errors.InvalidRequest and got.field == "user_id"
    assert got.rpc_status is not None
    assert got.rpc_status.field_violations == (
        errors.FieldViolation("user_id", "use 1-128 characters of A-Z a-z 0-9"),)

    calendar = _rich(grpc.StatusCode.INVALID_ARGUMENT, "outside Umm al-Qura",
                     error_details_pb2.ErrorInfo(reason="CALENDAR_RANGE", domain="diwaniya.v1"))
    assert type(from_status(calendar.code, calendar.details,
                            calendar.trailing_metadata)) is errors.CalendarRangeError

    # A reason naming a class outside the status's branch does not change the branch.
    odd = _rich(grpc.StatusCode.NOT_FOUND, "x", error_details_pb2.ErrorInfo(reason="LEASE_LOST"))
    assert type(from_status(odd.code, odd.details, odd.trailing_metadata)) is errors.NotFound


def test_statuses_the_api_never_raises_on_purpose_and_broken_trailers() -> None:
    assert type(from_status(grpc.StatusCode.INTERNAL, "boom")) is errors.ServerError
    assert type(from_status(grpc.StatusCode.CANCELLED, "gone")) is errors.Cancelled
    broken = from_status(grpc.StatusCode.UNAVAILABLE, "down",
                         [("grpc-status-details-bin", b"\xff\x00not a status")])
    assert type(broken) is errors.Unavailable and broken.message == "down"
    assert broken.retry_after_s is None


def test_retry_policy_prefers_the_servers_delay_and_is_bounded() -> None:
    policy = RetryPolicy(max_attempts=4, initial_backoff_s=0.1, max_backoff_s=2.0)
    assert policy.delay(1, errors.Unavailable("x", retry_after_s=1.5)) == 1.5
    assert policy.delay(1, errors.Unavailable("x", retry_after_s=30)) == 2.0  # capped
    assert [policy.delay(n, errors.Unavailable("x")) for n in (1, 2, 3)] == [0.1, 0.2, 0.4]


@pytest.mark.parametrize(("code", "thread_id", "seen", "hint", "expected"), [
    (grpc.StatusCode.UNAVAILABLE, "t1", 0, None, True),         # the request_id replays it there
    (grpc.StatusCode.RESOURCE_EXHAUSTED, "", 0, 1.0, True),     # refused before it ran
    (grpc.StatusCode.RESOURCE_EXHAUSTED, "t1", 0, None, False),  # no RetryInfo: maybe permanent
    (grpc.StatusCode.UNAVAILABLE, "", 0, None, False),          # may have created a thread
    (grpc.StatusCode.UNAVAILABLE, "t1", 3, None, False),        # events already shown
    (grpc.StatusCode.INVALID_ARGUMENT, "t1", 0, None, False),   # a retry cannot fix it
    (grpc.StatusCode.ABORTED, "t1", 0, 1.0, False),
])
def test_only_idempotent_turns_are_retried(code: grpc.StatusCode, thread_id: str, seen: int,
                                           hint: float | None, expected: bool) -> None:
    assert may_retry(code, thread_id=thread_id, events_seen=seen,
                     retry_after_s=hint) is expected


def test_credentials_need_both_halves_of_a_client_certificate(tmp_path) -> None:
    with pytest.raises(errors.ConfigurationError, match="tls_cert and tls_key"):
        channel_credentials(tls=False, tls_ca=None, tls_cert=b"cert", tls_key=None)
    with pytest.raises(errors.ConfigurationError, match="cannot read the PEM file"):
        channel_credentials(tls=False, tls_ca=tmp_path / "missing.pem", tls_cert=None,
                            tls_key=None)
    assert channel_credentials(tls=False, tls_ca=None, tls_cert=None, tls_key=None) is None
    assert channel_credentials(tls=True, tls_ca=None, tls_cert=None, tls_key=None) is not None


def test_message_keeps_the_arabic_text_exactly() -> None:
    text = "أبغى أرجّع الطلب رقم ١٢٣"
    request = message(text, user_id="u1", request_id="r1")
    assert request.text == text and request.request_id == "r1"
