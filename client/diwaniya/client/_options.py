"""What the sync and async clients share: credentials, metadata, retry policy, requests."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import grpc

from diwaniya.errors import ConfigurationError, DiwaniyaError
from diwaniya.v1 import conversations_pb2 as pb

#: A PEM value: the bytes themselves, or the path of a file holding them.
Pem = bytes | str | Path


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff; a server's RetryInfo delay wins.

    ``max_attempts`` counts the first try (1: never retry). The delay before
    attempt n+1 is the status's RetryInfo delay when it has one, else
    ``initial_backoff_s * multiplier**(n-1)``, capped at ``max_backoff_s``.
    Each attempt has the call's full deadline (``timeout_s``), so the worst case
    is ``max_attempts`` deadlines plus the waits.
    """

    max_attempts: int = 3
    initial_backoff_s: float = 0.2
    max_backoff_s: float = 5.0
    multiplier: float = 2.0

    def delay(self, attempt: int, exc: DiwaniyaError) -> float:
        hinted = getattr(exc, "retry_after_s", None)
        if hinted is not None:
            return min(float(hinted), self.max_backoff_s)
        return min(self.initial_backoff_s * self.multiplier ** (attempt - 1), self.max_backoff_s)


DEFAULT_RETRY = RetryPolicy()
NO_RETRY = RetryPolicy(max_attempts=1)


def _read(value: Pem | None) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    path = Path(value)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigurationError(f"cannot read the PEM file {path}: {exc.strerror}") from exc


def channel_credentials(*, tls: bool, tls_ca: Pem | None, tls_cert: Pem | None,
                        tls_key: Pem | None) -> grpc.ChannelCredentials | None:
    """TLS (``tls_ca``, or the system roots with ``tls=True``) or mTLS (plus
    ``tls_cert`` + ``tls_key``); None: plaintext."""
    if (tls_cert is None) != (tls_key is None):
        raise ConfigurationError("mTLS needs both tls_cert and tls_key (PEM bytes or paths)")
    if not (tls or tls_ca is not None or tls_cert is not None):
        return None
    return grpc.ssl_channel_credentials(root_certificates=_read(tls_ca),
                                        private_key=_read(tls_key),
                                        certificate_chain=_read(tls_cert))


def channel_options(own_connection: bool, tls_server_name: str | None
                    ) -> list[tuple[str, str | int]]:
    # own_connection: grpc shares one TCP connection between channels to the
    # same target; a client of its own spreads over ``serve --workers``.
    options: list[tuple[str, str | int]] = []
    if own_connection:
        options.append(("grpc.use_local_subchannel_pool", 1))
    if tls_server_name:
        options.append(("grpc.ssl_target_name_override", tls_server_name))
    return options


def aio_channel(target: str, *, tls: bool = False, tls_ca: Pem | None = None,
                tls_cert: Pem | None = None, tls_key: Pem | None = None,
                tls_server_name: str | None = None, own_connection: bool = False
                ) -> grpc.aio.Channel:
    """The asyncio channel every caller of the API opens: plaintext, TLS or mTLS."""
    creds = channel_credentials(tls=tls, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key)
    options = channel_options(own_connection, tls_server_name)
    return (grpc.aio.secure_channel(target, creds, options=options) if creds
            else grpc.aio.insecure_channel(target, options=options))


def sync_channel(target: str, *, tls: bool = False, tls_ca: Pem | None = None,
                 tls_cert: Pem | None = None, tls_key: Pem | None = None,
                 tls_server_name: str | None = None, own_connection: bool = False
                 ) -> grpc.Channel:
    """The blocking twin of :func:`aio_channel`."""
    creds = channel_credentials(tls=tls, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key)
    options = channel_options(own_connection, tls_server_name)
    return (grpc.secure_channel(target, creds, options=options) if creds
            else grpc.insecure_channel(target, options=options))


def auth_metadata(api_key: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {api_key}"),) if api_key else ()


def new_request_id() -> str:
    """A fresh idempotency key (uuid4, hex): a retry of the same turn reuses it."""
    return uuid.uuid4().hex


def message(text: str, *, user_id: str, thread_id: str = "", request_id: str = "",
            country: str = "", timezone: str = "", client_time: datetime | None = None,
            register: pb.Register.ValueType = pb.REGISTER_UNSPECIFIED,
            ) -> pb.SendMessageRequest:
    """A ``SendMessageRequest``; a naive ``client_time`` is read as UTC (protobuf's rule)."""
    request = pb.SendMessageRequest(text=text, user_id=user_id, thread_id=thread_id,
                                    request_id=request_id, country=country, timezone=timezone,
                                    register=register)
    if client_time is not None:
        request.client_time.FromDatetime(client_time)
    return request


def may_retry(code: grpc.StatusCode, *, thread_id: str, events_seen: int,
              retry_after_s: float | None = None) -> bool:
    """Whether a failed turn may be sent again with the same request_id.

    Only before its first event (nothing is shown twice; a ``queued`` notice,
    seq 0, is not one of the turn's and may be shown again), only for a transient
    status (:func:`transient`), and only where the request_id makes the repeat
    idempotent: on a known thread (the server replays a request_id it already
    ran there), or RESOURCE_EXHAUSTED (refused before it ran). A new-thread turn
    that failed UNAVAILABLE is not retried: the first try may have created a
    thread the request_id does not point back to.
    """
    if events_seen or not transient(code, retry_after_s):
        return False
    return bool(thread_id) or code == grpc.StatusCode.RESOURCE_EXHAUSTED


def transient(code: grpc.StatusCode, retry_after_s: float | None) -> bool:
    """UNAVAILABLE; RESOURCE_EXHAUSTED only with the server's RetryInfo: without
    one it may be permanent (a message over the size limit, refused by grpc itself)."""
    if code == grpc.StatusCode.UNAVAILABLE:
        return True
    return code == grpc.StatusCode.RESOURCE_EXHAUSTED and retry_after_s is not None
