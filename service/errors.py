"""The one place where domain errors become gRPC status codes."""

from __future__ import annotations

import grpc

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
    """True when sending the same message again may succeed (``Error.retryable``)."""
    return status_for(exc) in _RETRYABLE


def error_code(exc: errors.DiwaniyaError) -> str:
    """Stable code for an in-stream ``Error`` event (the status name, lower-cased)."""
    return status_for(exc).name.lower()
