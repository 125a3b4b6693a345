"""gRPC statuses back into the domain error tree (the client-side inverse of ``service.errors``).

The leaf is chosen by status code, then refined by the ``google.rpc.ErrorInfo``
reason when it names a subclass of that leaf (``LEASE_LOST`` under ABORTED →
:class:`~diwaniya.errors.LeaseLost`). The details are decoded generically from
the google.rpc types, whatever the server chose to send:

- ``ErrorInfo``  → ``rpc_status.reason / domain / metadata``
- ``BadRequest`` → ``rpc_status.field_violations`` (and ``InvalidRequest.field``)
- ``RetryInfo``  → ``rpc_status.retry_after_s`` (and ``retry_after_s`` on
  ``Unavailable`` / ``ResourceExhausted``)

>>> exc = from_status(grpc.StatusCode.NOT_FOUND, "لا توجد محادثة بهذا المعرّف")
>>> type(exc).__name__, exc.rpc_status.code
('NotFound', 'NOT_FOUND')
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2

from diwaniya import errors

# The inverse of service.errors._STATUS (server side: the one place domain
# errors become statuses). OUT_OF_RANGE is an argument problem too.
_CLASS: dict[grpc.StatusCode, type[errors.DiwaniyaError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: errors.InvalidRequest,
    grpc.StatusCode.OUT_OF_RANGE: errors.InvalidRequest,
    grpc.StatusCode.NOT_FOUND: errors.NotFound,
    grpc.StatusCode.ABORTED: errors.ThreadBusy,
    grpc.StatusCode.ALREADY_EXISTS: errors.RequestIdReused,
    grpc.StatusCode.UNAUTHENTICATED: errors.Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: errors.PermissionDenied,
    grpc.StatusCode.RESOURCE_EXHAUSTED: errors.ResourceExhausted,
    grpc.StatusCode.DEADLINE_EXCEEDED: errors.DeadlineExceeded,
    grpc.StatusCode.UNAVAILABLE: errors.Unavailable,
    grpc.StatusCode.FAILED_PRECONDITION: errors.ConfigurationError,
    grpc.StatusCode.CANCELLED: errors.Cancelled,
}

_DETAILS_KEY = "grpc-status-details-bin"


def _camel(reason: str) -> str:
    """``LEASE_LOST`` / ``lease_lost`` / ``lease-lost`` → ``LeaseLost``."""
    return "".join(part.capitalize() for part in re.split(r"[_\-.\s]+", reason) if part)


def _refine(base: type[errors.DiwaniyaError], reason: str) -> type[errors.DiwaniyaError]:
    """The subclass of ``base`` that ``reason`` names (``LEASE_LOST``, or
    ``CALENDAR_RANGE`` for ``CalendarRangeError``), else ``base``."""
    if not reason:
        return base
    # The server's stable reasons are the classes' default_reason
    # (DATE_OUT_OF_RANGE → CalendarRangeError); else the reason names the class.
    pending = list(base.__subclasses__())
    while pending:
        sub = pending.pop()
        if sub.default_reason == reason:
            return sub
        pending.extend(sub.__subclasses__())
    for name in (_camel(reason), _camel(reason) + "Error"):
        candidate = getattr(errors, name, None)
        if isinstance(candidate, type) and issubclass(candidate, base):
            return candidate
    return base


def _decode(metadata: Sequence[tuple[str, Any]] | None, code: grpc.StatusCode, message: str
            ) -> errors.RpcStatus:
    reason = domain = ""
    info_metadata: dict[str, str] = {}
    violations: list[errors.FieldViolation] = []
    retry_after: float | None = None
    for key, value in metadata or ():
        if key != _DETAILS_KEY:
            continue
        status = status_pb2.Status()
        try:
            status.ParseFromString(value)
        except Exception:  # a malformed trailer must not hide the status itself
            continue
        message = status.message or message
        for detail in status.details:
            if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
                info = error_details_pb2.ErrorInfo()
                detail.Unpack(info)
                reason, domain = info.reason, info.domain
                info_metadata.update(info.metadata)
            elif detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations.extend(errors.FieldViolation(v.field, v.description)
                                  for v in bad.field_violations)
            elif detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
                retry = error_details_pb2.RetryInfo()
                detail.Unpack(retry)
                retry_after = retry.retry_delay.ToTimedelta().total_seconds()
    return errors.RpcStatus(code=code.name, message=message, reason=reason, domain=domain,
                            metadata=info_metadata, field_violations=tuple(violations),
                            retry_after_s=retry_after)


def _build(cls: type[errors.DiwaniyaError], message: str) -> errors.DiwaniyaError:
    try:
        return cls(message)
    except TypeError:  # a leaf whose constructor wants more than the message
        exc = cls.__new__(cls)
        errors.DiwaniyaError.__init__(exc, message)
        return exc


def from_status(code: grpc.StatusCode, message: str,
                trailing_metadata: Sequence[tuple[str, Any]] | None = None
                ) -> errors.DiwaniyaError:
    """The domain error for a status code, message and trailing metadata."""
    status = _decode(trailing_metadata, code, message)
    cls = _refine(_CLASS.get(code, errors.ServerError), status.reason)
    exc = _build(cls, status.message)
    exc.rpc_status = status
    if status.reason:
        exc.reason = status.reason
    if isinstance(exc, errors.InvalidRequest) and status.field_violations:
        exc.field = status.field_violations[0].field
    if isinstance(exc, errors.Unavailable | errors.ResourceExhausted):
        exc.retry_after_s = status.retry_after_s
    return exc


def from_rpc_error(error: grpc.RpcError) -> errors.DiwaniyaError:
    """The domain error for a failed call (``grpc.RpcError`` or ``grpc.aio.AioRpcError``).

    >>> try:                                                      # doctest: +SKIP
    ...     client.get_thread("t-unknown", user_id="u1")
    ... except NotFound as exc:
    ...     exc.message, exc.rpc_status.reason
    ('لا توجد محادثة بهذا المعرّف', 'THREAD_NOT_FOUND')
    """
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    message = error.details() if hasattr(error, "details") else str(error)
    trailing = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None
    exc = from_status(code or grpc.StatusCode.UNKNOWN, message or "", trailing)
    exc.__cause__ = error
    return exc
