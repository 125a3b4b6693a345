"""The one place where errors become gRPC statuses (with details), and back.

:func:`translate` turns ANY exception into a ``grpc.Status`` carrying a
``google.rpc.Status`` in ``grpc-status-details-bin``:

- ``ErrorInfo`` on every error: a stable ``reason`` (``THREAD_NOT_FOUND``,
  ``REQUEST_ID_REUSED``, ``TEXT_TOO_LONG`` …) in domain ``diwaniya.v1``;
- ``BadRequest`` with the field at fault for invalid input;
- ``RetryInfo`` on UNAVAILABLE, RESOURCE_EXHAUSTED and ABORTED, so clients and
  proxies back off without parsing the message.

An exception outside the domain tree is a bug of ours: it is logged with its
traceback under a reference, and the caller gets INTERNAL with that reference
and a generic message (no internals leak) — except a database driver's outage
error (majlis.store_errors.store_error: SQLite's "database is locked", a lost
psycopg connection…) that reached here unwrapped: that is UNAVAILABLE, retry.
:func:`error_event` is the same translation for an ``error`` event inside a
stream, and :func:`from_status` is the way back for clients: details → the
domain error tree.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from diwaniya import errors
from diwaniya.v1 import conversations_pb2 as pb
from majlis.store_errors import store_error

log = logging.getLogger("diwaniya.service")

DOMAIN = "diwaniya.v1"
# The RetryInfo delay when the error itself gives no hint.
DEFAULT_RETRY_S = 1.0
INTERNAL_REASON = "INTERNAL"
_DETAILS_KEY = "grpc-status-details-bin"

# Most specific first: CalendarRangeError is an InvalidRequest, LeaseLost a ThreadBusy.
_STATUS: tuple[tuple[type[errors.DiwaniyaError], grpc.StatusCode], ...] = (
    (errors.InvalidRequest, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.NotFound, grpc.StatusCode.NOT_FOUND),
    (errors.LeaseLost, grpc.StatusCode.ABORTED),
    (errors.ThreadBusy, grpc.StatusCode.ABORTED),
    (errors.RequestIdReused, grpc.StatusCode.ALREADY_EXISTS),
    (errors.Unauthenticated, grpc.StatusCode.UNAUTHENTICATED),
    (errors.PermissionDenied, grpc.StatusCode.PERMISSION_DENIED),
    (errors.ResourceExhausted, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (errors.DeadlineExceeded, grpc.StatusCode.DEADLINE_EXCEEDED),
    (errors.Unavailable, grpc.StatusCode.UNAVAILABLE),
    (errors.ModelUnavailable, grpc.StatusCode.UNAVAILABLE),
    (errors.ModelError, grpc.StatusCode.UNAVAILABLE),
    (errors.ConfigurationError, grpc.StatusCode.FAILED_PRECONDITION),
)

# Statuses a caller may simply retry (same request_id): nothing was saved.
_RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED,
                        grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED})
# Statuses that always carry RetryInfo (a deadline is the caller's own budget: no hint).
_RETRY_INFO = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED,
                         grpc.StatusCode.RESOURCE_EXHAUSTED})


@dataclass(frozen=True, slots=True)
class Problem:
    """What a caller is told about one failure, before it is put on the wire."""

    code: grpc.StatusCode
    reason: str
    message: str
    field: str | None = None
    retry_after_s: float | None = None
    ref: str = ""
    # The budget or rate that was exceeded (RESOURCE_EXHAUSTED): sent as QuotaFailure.
    quota: errors.QuotaViolation | None = None

    @property
    def retryable(self) -> bool:
        return self.code in _RETRYABLE or self.retry_after_s is not None


def status_for(exc: errors.DiwaniyaError) -> grpc.StatusCode:
    for cls, code in _STATUS:
        if isinstance(exc, cls):
            return code
    return grpc.StatusCode.INTERNAL


def retry_after(exc: errors.DiwaniyaError) -> float | None:
    """Seconds after which a retry is likely to work; None: no hint."""
    value = getattr(exc, "retry_after_s", None)
    return float(value) if value is not None else None


def is_retryable(exc: errors.DiwaniyaError) -> bool:
    """True when sending the same message again may succeed (``Error.retryable``)."""
    return problem(exc).retryable


def error_code(exc: errors.DiwaniyaError) -> str:
    """Stable code for an in-stream ``Error`` event (the status name, lower-cased)."""
    return status_for(exc).name.lower()


def problem(exc: BaseException) -> Problem:
    """The caller-facing description of ``exc``; a non-domain exception is logged here.

    >>> p = problem(errors.InvalidRequest("text is 5000 characters; the limit is 4000",
    ...                                   field="text", reason="TEXT_TOO_LONG"))
    >>> p.code.name, p.reason, p.field
    ('INVALID_ARGUMENT', 'TEXT_TOO_LONG', 'text')
    """
    if isinstance(exc, errors.DiwaniyaError):
        code = status_for(exc)
        after = retry_after(exc)
        if after is None and code in _RETRY_INFO:
            after = DEFAULT_RETRY_S
        quota = getattr(exc, "quota", None)
        return Problem(code, exc.reason, exc.message, getattr(exc, "field", None), after,
                       quota=quota if isinstance(quota, errors.QuotaViolation) else None)
    down = store_error(exc)
    if down is not None:
        # A driver's outage error that no ``persistence.errors()`` wrapped on its
        # way here is still the database being away (retry), not a bug: it keeps
        # its traceback in the log, the caller gets UNAVAILABLE with RetryInfo.
        log.warning("store error outside a store boundary: %s", type(exc).__name__,
                    exc_info=exc)
        return problem(down)
    ref = uuid.uuid4().hex[:12]
    # The traceback goes to the log only; the caller gets the reference to quote.
    log.error("internal error (ref %s): %s", ref, type(exc).__name__, exc_info=exc)
    return Problem(grpc.StatusCode.INTERNAL, INTERNAL_REASON,
                   # No promise about what was saved: a bug can strike after a commit.
                   f"internal error (ref {ref}); quote this reference when reporting it",
                   ref=ref)


def _pack(message: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def quota_failure(quota: errors.QuotaViolation) -> any_pb2.Any:
    """``google.rpc.QuotaFailure`` (packed) for the limit a request went over.

    >>> v = errors.QuotaViolation("tenant:acme", "turns_per_1_minute", 5, 5, "5 turns/minute")
    >>> quota_failure(v).TypeName()
    'google.rpc.QuotaFailure'
    """
    violation = error_details_pb2.QuotaFailure.Violation(
        subject=quota.subject, description=quota.description, quota_id=quota.quota_id,
        quota_metric=f"diwaniya/{quota.quota_id}", quota_value=int(quota.limit))
    return _pack(error_details_pb2.QuotaFailure(violations=[violation]))


def rpc_status_of(p: Problem) -> status_pb2.Status:
    """The ``google.rpc.Status`` for ``p``: ErrorInfo always, BadRequest, RetryInfo."""
    metadata = {"ref": p.ref} if p.ref else {}
    if p.field:
        metadata["field"] = p.field
    details = [_pack(error_details_pb2.ErrorInfo(reason=p.reason, domain=DOMAIN,
                                                 metadata=metadata))]
    if p.code == grpc.StatusCode.INVALID_ARGUMENT:
        violation = error_details_pb2.BadRequest.FieldViolation(
            field=p.field or "", description=p.message)
        details.append(_pack(error_details_pb2.BadRequest(field_violations=[violation])))
    if p.retry_after_s is not None and p.code in _RETRY_INFO:
        delay = duration_pb2.Duration()
        delay.FromMilliseconds(int(p.retry_after_s * 1000))
        details.append(_pack(error_details_pb2.RetryInfo(retry_delay=delay)))
    if p.quota is not None:
        details.append(quota_failure(p.quota))
    return status_pb2.Status(code=p.code.value[0], message=p.message, details=details)


def translate(exc: BaseException) -> grpc.Status:
    """The status for any exception, with its details.

    >>> s = translate(errors.StoreUnavailable("قاعدة البيانات متوقفة؛ retry in 1s"))
    >>> s.code.name, s.trailing_metadata[0][0]
    ('UNAVAILABLE', 'grpc-status-details-bin')
    """
    return rpc_status.to_status(rpc_status_of(problem(exc)))


# Kept for callers of the previous name.
rich_status = translate


async def abort(context: grpc.aio.ServicerContext[Any, Any], exc: BaseException) -> None:
    """End the RPC with ``exc``'s status, message and details (never returns)."""
    status = translate(exc)
    await context.abort(status.code, status.details, status.trailing_metadata)


def error_event(exc: BaseException, thread_id: str = "", turn_id: str = "") -> pb.TurnEvent:
    """An in-stream ``error`` event saying what :func:`translate` would say.

    >>> e = error_event(errors.NotFound("thread t1 not found for user u1"), "t1").error
    >>> e.code, e.reason, e.retryable
    ('not_found', 'THREAD_NOT_FOUND', False)
    """
    p = problem(exc)
    return pb.TurnEvent(thread_id=thread_id, turn_id=turn_id, error=pb.Error(
        code=p.code.name.lower(), message=p.message, retryable=p.retryable, reason=p.reason))


# ------------------------------------------------------------- client side
def _subclasses(cls: type[errors.DiwaniyaError]) -> Iterable[type[errors.DiwaniyaError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _by_reason() -> dict[str, type[errors.DiwaniyaError]]:
    found: dict[str, type[errors.DiwaniyaError]] = {}
    for cls in _subclasses(errors.DiwaniyaError):
        found.setdefault(cls.default_reason, cls)
    return found


def _by_code(code: grpc.StatusCode) -> type[errors.DiwaniyaError]:
    if code == grpc.StatusCode.UNAVAILABLE:
        return errors.Unavailable
    for cls, mapped in _STATUS:
        if mapped == code:
            return cls
    return errors.DiwaniyaError


def _details(call: Any) -> status_pb2.Status | None:
    for key, value in call.trailing_metadata() or ():
        if key == _DETAILS_KEY:
            return status_pb2.Status.FromString(value)
    return None


def from_status(rpc_error: Any) -> errors.DiwaniyaError:
    """The domain error a failed call (``grpc.RpcError`` / ``grpc.aio.AioRpcError``) stands for.

    The ErrorInfo reason picks the class (``THREAD_BUSY`` → ThreadBusy), else
    the status code does; the field and the retry hint come back from
    BadRequest and RetryInfo, so ``from_status`` inverts :func:`translate`.
    """
    code: grpc.StatusCode = rpc_error.code()
    message = rpc_error.details() or ""
    reason: str | None = None
    field: str | None = None
    after: float | None = None
    status = _details(rpc_error)
    for packed in status.details if status is not None else ():
        if packed.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            packed.Unpack(info)
            reason = info.reason or None
        elif packed.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            packed.Unpack(bad)
            field = next((v.field for v in bad.field_violations if v.field), None)
        elif packed.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            retry = error_details_pb2.RetryInfo()
            packed.Unpack(retry)
            after = retry.retry_delay.ToMilliseconds() / 1000
    cls = _by_reason().get(reason or "")
    if cls is None or status_for(cls("")) != code:
        cls = _by_code(code)
    if issubclass(cls, errors.InvalidRequest):
        return cls(message, field=field, reason=reason)
    if issubclass(cls, errors.ResourceExhausted | errors.Unavailable):
        return cls(message, retry_after_s=after, reason=reason)
    return cls(message, reason=reason)
