"""The domain error hierarchy.

One tree for the whole product, modelled on httpx: callers catch
``DiwaniyaError`` or a branch of it; only ``service.errors`` maps the leaves to
gRPC status codes. Messages are written for the *caller* of the API: they say
what was wrong and what to do about it.
"""

from __future__ import annotations

from dataclasses import dataclass


class DiwaniyaError(Exception):
    """Base of every error the product raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidRequest(DiwaniyaError):
    """The request is malformed, empty, oversized or hostile (→ INVALID_ARGUMENT)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotFound(DiwaniyaError):
    """The thread (or other resource) does not exist for this caller (→ NOT_FOUND)."""


class ThreadBusy(DiwaniyaError):
    """Another turn is running on the same thread (→ ABORTED)."""


class LeaseLost(ThreadBusy):
    """The turn lost its hold on the thread before it could commit, so nothing of it
    was saved (→ ABORTED): another turn took the thread over, e.g. after the
    database dropped the turn's lock session."""


class RequestIdReused(DiwaniyaError):
    """A ``request_id`` already names a different message (→ ALREADY_EXISTS)."""


class Unauthenticated(DiwaniyaError):
    """Missing or wrong credentials (→ UNAUTHENTICATED)."""


class PermissionDenied(DiwaniyaError):
    """Credentials are valid but do not allow this (→ PERMISSION_DENIED)."""


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
    """A limit was hit: queue full, rate limit, too many streams (→ RESOURCE_EXHAUSTED).

    ``retry_after_s``: when trying again is likely to work (sent as RetryInfo);
    ``quota``: the budget or rate that was exceeded, if any (sent as QuotaFailure).
    """

    def __init__(self, message: str, *, retry_after_s: float | None = None,
                 quota: QuotaViolation | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.quota = quota


class DeadlineExceeded(DiwaniyaError):
    """The turn ran past its deadline (→ DEADLINE_EXCEEDED)."""


class Unavailable(DiwaniyaError):
    """A dependency (database, model endpoint) cannot be reached (→ UNAVAILABLE).

    ``retry_after_s``: when trying again is likely to work (sent as RetryInfo).
    """

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class StoreUnavailable(Unavailable):
    """The database (checkpoints, thread registry, memory) is down or unreachable.

    Raised at the majlis/memory boundary for pool and connection failures, so
    that reads and turns alike answer UNAVAILABLE with a retry hint instead of
    hanging or reporting an internal error.
    """

    def __init__(self, message: str, *, retry_after_s: float | None = 1.0) -> None:
        super().__init__(message, retry_after_s=retry_after_s)


class ModelError(DiwaniyaError):
    """The language model failed in a way retries could not fix (→ UNAVAILABLE)."""


class ModelUnavailable(ModelError):
    """The model failed after its retries, so the turn was not run (→ UNAVAILABLE, retryable).

    Nothing was added to the thread: the same message (same ``request_id``) can be sent again.
    """


class ConfigurationError(DiwaniyaError):
    """The operator's configuration is wrong; raised at start-up (→ FAILED_PRECONDITION)."""


class CalendarRangeError(InvalidRequest):
    """A date outside the Umm al-Qura calendar's supported range (→ INVALID_ARGUMENT)."""
