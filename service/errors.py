"""The one place where domain errors become gRPC status codes (and their details).

UNAVAILABLE and RESOURCE_EXHAUSTED carry a ``google.rpc.RetryInfo`` detail
(``grpc-status-details-bin``) when the domain error knows when to try again,
so that clients and proxies can back off without parsing the message.
"""

from __future__ import annotations

from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from diwaniya import errors

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


def status_for(exc: errors.DiwaniyaError) -> grpc.StatusCode:
    for cls, code in _STATUS:
        if isinstance(exc, cls):
            return code
    return grpc.StatusCode.INTERNAL


# Statuses a caller may simply retry (same request_id): nothing was saved.
_RETRYABLE = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED,
                        grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.RESOURCE_EXHAUSTED})


def is_retryable(exc: errors.DiwaniyaError) -> bool:
    """True when sending the same message again may succeed (``Error.retryable``):
    a retryable status, or an error that says when to retry."""
    return status_for(exc) in _RETRYABLE or retry_after(exc) is not None


def error_code(exc: errors.DiwaniyaError) -> str:
    """Stable code for an in-stream ``Error`` event (the status name, lower-cased)."""
    return status_for(exc).name.lower()


def retry_after(exc: errors.DiwaniyaError) -> float | None:
    """Seconds after which a retry is likely to work; None: no hint."""
    value = getattr(exc, "retry_after_s", None)
    return float(value) if value is not None else None


def quota_failure(exc: errors.DiwaniyaError) -> any_pb2.Any | None:
    """``google.rpc.QuotaFailure`` (packed) for a ResourceExhausted that names its limit.

    >>> v = errors.QuotaViolation("tenant:acme", "turns_per_1_minute", 5, 5, "5 turns/minute")
    >>> quota_failure(errors.ResourceExhausted("تجاوزت الحد", quota=v)).TypeName()
    'google.rpc.QuotaFailure'
    """
    quota = getattr(exc, "quota", None)
    if not isinstance(quota, errors.QuotaViolation):
        return None
    violation = error_details_pb2.QuotaFailure.Violation(
        subject=quota.subject, description=quota.description, quota_id=quota.quota_id,
        quota_metric=f"diwaniya/{quota.quota_id}", quota_value=int(quota.limit))
    packed = any_pb2.Any()
    packed.Pack(error_details_pb2.QuotaFailure(violations=[violation]))
    return packed


def rich_status(exc: errors.DiwaniyaError) -> grpc.Status:
    """The status for ``exc``, with RetryInfo when it says when to retry.

    >>> s = rich_status(errors.StoreUnavailable("قاعدة البيانات متوقفة؛ retry in 1s"))
    >>> s.code.name, s.trailing_metadata[0][0]
    ('UNAVAILABLE', 'grpc-status-details-bin')
    """
    code = status_for(exc)
    details: list[any_pb2.Any] = []
    after = retry_after(exc)
    if after is not None:
        delay = duration_pb2.Duration()
        delay.FromMilliseconds(int(after * 1000))
        packed = any_pb2.Any()
        packed.Pack(error_details_pb2.RetryInfo(retry_delay=delay))
        details.append(packed)
    quota = quota_failure(exc)
    if quota is not None:
        details.append(quota)
    status = status_pb2.Status(code=code.value[0], message=exc.message, details=details)
    return rpc_status.to_status(status)


async def abort(context: grpc.aio.ServicerContext[Any, Any], exc: errors.DiwaniyaError) -> None:
    """End the RPC with ``exc``'s status, message and details (never returns)."""
    status = rich_status(exc)
    await context.abort(status.code, status.details, status.trailing_metadata)
