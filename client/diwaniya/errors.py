"""The domain error hierarchy.

One tree for the whole product, modelled on httpx: callers catch
``DiwaniyaError`` or a branch of it; only ``service.errors`` maps the leaves to
gRPC status codes. Messages are written for the *caller* of the API: they say
what was wrong and what to do about it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar


class DiwaniyaError(Exception):
    """Base of every error the product raises on purpose.

    ``reason``: a stable UPPER_SNAKE_CASE name for the failure, sent to clients
    as ``google.rpc.ErrorInfo.reason`` (domain ``diwaniya.v1``). Clients switch
    on it, never on the message, so a reason is never renamed once published.
    Each class has a default; a raise site may name a more precise one.
    """

    default_reason: ClassVar[str] = "ERROR"
    #: Set on errors a client rebuilt from a gRPC status (diwaniya.client); None on the server.
    rpc_status: RpcStatus | None = None

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or self.default_reason


class InvalidRequest(DiwaniyaError):
    """The request is malformed, empty, oversized or hostile (→ INVALID_ARGUMENT).

    ``field``: the request field at fault (sent as a BadRequest field violation).
    Without an explicit reason, one is derived from it: ``INVALID_THREAD_ID``.
    """

    default_reason = "INVALID_ARGUMENT"

    def __init__(self, message: str, *, field: str | None = None,
                 reason: str | None = None) -> None:
        if reason is None and field and self.default_reason == InvalidRequest.default_reason:
            reason = f"INVALID_{field.upper().replace('.', '_')}"
        super().__init__(message, reason=reason)
        self.field = field


class NotFound(DiwaniyaError):
    """The thread (or other resource) does not exist for this caller (→ NOT_FOUND)."""

    default_reason = "THREAD_NOT_FOUND"


class ThreadBusy(DiwaniyaError):
    """Another turn is running on the same thread (→ ABORTED)."""

    default_reason = "THREAD_BUSY"


class LeaseLost(ThreadBusy):
    """The turn lost its hold on the thread before it could commit, so nothing of it
    was saved (→ ABORTED): another turn took the thread over, e.g. after the
    database dropped the turn's lock session."""

    default_reason = "LEASE_LOST"


class RequestIdReused(DiwaniyaError):
    """A ``request_id`` already names a different message (→ ALREADY_EXISTS)."""

    default_reason = "REQUEST_ID_REUSED"


class Unauthenticated(DiwaniyaError):
    """Missing or wrong credentials (→ UNAUTHENTICATED)."""

    default_reason = "UNAUTHENTICATED"


class PermissionDenied(DiwaniyaError):
    """Credentials are valid but do not allow this (→ PERMISSION_DENIED)."""

    default_reason = "PERMISSION_DENIED"


@dataclass(frozen=True, slots=True)
class QuotaViolation:
    """Which limit a request went over (sent as ``google.rpc.QuotaFailure``).

    ``subject``: whose counter, e.g. ``tenant:acme`` or ``thread:9f2c…``;
    ``quota_id``: which limit, e.g. ``turns_per_1_minute``, ``thread_tokens_per_1_day``;
    ``limit``: its value; ``used``: the counter when the request was refused.
    """

    subject: str
    quota_id: str
    limit: float
    used: float
    description: str


class ResourceExhausted(DiwaniyaError):
    """A limit was hit: queue full, rate limit, budget, too many streams (→ RESOURCE_EXHAUSTED).

    ``retry_after_s``: when trying again is likely to work (sent as RetryInfo);
    ``quota``: the budget or rate that was exceeded, if any (sent as QuotaFailure).
    """

    default_reason = "RESOURCE_EXHAUSTED"

    def __init__(self, message: str, *, retry_after_s: float | None = None,
                 quota: QuotaViolation | None = None, reason: str | None = None) -> None:
        super().__init__(message, reason=reason)
        self.retry_after_s = retry_after_s
        self.quota = quota


class DeadlineExceeded(DiwaniyaError):
    """The turn ran past its deadline (→ DEADLINE_EXCEEDED)."""

    default_reason = "DEADLINE_EXCEEDED"


class Unavailable(DiwaniyaError):
    """A dependency (database, model endpoint) cannot be reached (→ UNAVAILABLE).

    ``retry_after_s``: when trying again is likely to work (sent as RetryInfo).
    """

    default_reason = "UNAVAILABLE"

    def __init__(self, message: str, *, retry_after_s: float | None = None,
                 reason: str | None = None) -> None:
        super().__init__(message, reason=reason)
        self.retry_after_s = retry_after_s


class StoreUnavailable(Unavailable):
    """The database (checkpoints, thread registry, memory) is down or unreachable.

    Raised at the majlis/memory boundary for pool and connection failures, so
    that reads and turns alike answer UNAVAILABLE with a retry hint instead of
    hanging or reporting an internal error.
    """

    default_reason = "STORE_UNAVAILABLE"

    def __init__(self, message: str, *, retry_after_s: float | None = 1.0,
                 reason: str | None = None) -> None:
        super().__init__(message, retry_after_s=retry_after_s, reason=reason)


class ModelError(DiwaniyaError):
    """The language model failed in a way retries could not fix (→ UNAVAILABLE)."""

    default_reason = "MODEL_ERROR"


class ModelUnavailable(ModelError):
    """The model failed after its retries, so the turn was not run (→ UNAVAILABLE, retryable).

    Nothing was added to the thread: the same message (same ``request_id``) can be sent again.
    """

    default_reason = "MODEL_UNAVAILABLE"


class ConfigurationError(DiwaniyaError):
    """The operator's configuration is wrong; raised at start-up (→ FAILED_PRECONDITION)."""

    default_reason = "CONFIGURATION_ERROR"


class CalendarRangeError(InvalidRequest):
    """A date outside the Umm al-Qura calendar's supported range (→ INVALID_ARGUMENT)."""

    default_reason = "DATE_OUT_OF_RANGE"

    def __init__(self, message: str, *, field: str | None = "client_time",
                 reason: str | None = None) -> None:
        # Only a client's time can leave the calendar's range (the server clock cannot).
        super().__init__(message, field=field, reason=reason)


# --- Errors as a client sees them ------------------------------------------
# ``diwaniya.client.from_rpc_error`` turns a gRPC status back into the leaf of
# this tree that the server raised (by status code, refined by the ErrorInfo
# reason) and attaches the status's google.rpc details as ``rpc_status``.
# Plain data only: this module stays importable without grpc.


@dataclass(frozen=True)
class FieldViolation:
    """One ``google.rpc.BadRequest.FieldViolation``: which request field, and why."""

    field: str
    description: str


@dataclass(frozen=True)
class RpcStatus:
    """A gRPC error status as received, with its google.rpc details decoded.

    ``code`` is the status name (``"NOT_FOUND"``); ``reason``, ``domain`` and
    ``metadata`` come from ``google.rpc.ErrorInfo`` ("" / empty when the server
    sent none); ``retry_after_s`` from ``google.rpc.RetryInfo``.
    """

    code: str
    message: str
    reason: str = ""
    domain: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    field_violations: tuple[FieldViolation, ...] = ()
    retry_after_s: float | None = None


class Cancelled(DiwaniyaError):
    """The call was cancelled, by the caller or the server (← CANCELLED)."""


class ServerError(DiwaniyaError):
    """A status the API does not raise on purpose: INTERNAL, UNKNOWN, UNIMPLEMENTED,
    DATA_LOSS… (← those statuses). Report it; retrying rarely helps."""
