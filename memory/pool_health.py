"""What a connection pool's own connection attempts say about its database.

A checkout that times out is either capacity (the database answers, every
connection is lent: RESOURCE_EXHAUSTED, retry in a moment) or an outage (the
database does not answer: UNAVAILABLE). Reading the pool's occupancy when the
error is mapped cannot tell them apart: on a starved event loop a connection
comes back, or the pool is one short while it replaces one, between the
timeout and the mapping, and a busy pool then reads as a database that is down
(issue #11: 8 of 200 turns in the capacity test). The pool's connection
attempts can: :class:`ConnectEvidence` records each attempt's outcome as it
ends, and a timeout is judged on the newest one, read at the moment it fires.

Both drivers feed it: psycopg through the pool's ``connection_class``
(majlis.pg_pool), asyncpg through ``create_pool(connect=...)``
(memory.postgres_store). Lives in memory because majlis may import memory and
memory may not import majlis (the layering contracts in pyproject.toml).

>>> evidence = ConnectEvidence()
>>> evidence.succeeded()
>>> evidence.failed(ConnectionRefusedError("Connection refused"))
>>> evidence.verdict().down, evidence.verdict().detail
(True, 'Connection refused')
>>> evidence.succeeded()                 # «رجعت القاعدة»: the database is back
>>> evidence.verdict().down
False
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from diwaniya.errors import DiwaniyaError, ResourceExhausted, StoreUnavailable

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Verdict:
    """A pool's state as its newest finished connection attempt left it."""

    down: bool
    detail: str  # the newest failure's first line, '' when the newest attempt succeeded
    failed_s_ago: float | None  # since that failure, None without one


class ConnectEvidence:
    """Outcomes of one pool's connection attempts (and failed checks), newest wins.

    An attempt cut short by cancellation (a checkout's own timeout while the
    connect was under way) says nothing about the database and is not counted:
    a slow connect on a loaded machine is capacity until it actually fails.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._seq = 0
        self._ok_seq = 0
        self._failed_seq = 0
        self._failed_at: float | None = None
        self._detail = ""
        self.failures = 0

    def succeeded(self) -> None:
        self._seq += 1
        self._ok_seq = self._seq

    def failed(self, exc: BaseException) -> None:
        self._seq += 1
        self._failed_seq = self._seq
        self._failed_at = self._clock()
        self._detail = _first_line(exc)
        self.failures += 1

    async def attempt(self, connecting: Awaitable[T]) -> T:
        """Await one connection attempt, recording how it ended."""
        try:
            conn = await connecting
        except Exception as exc:
            self.failed(exc)
            raise
        self.succeeded()
        return conn

    def recording(self, connect: Callable[..., Awaitable[T]]) -> Callable[..., Awaitable[T]]:
        """``connect`` reporting each attempt here (asyncpg's ``create_pool(connect=...)``)."""

        async def attempt(*args: Any, **kwargs: Any) -> T:
            return await self.attempt(connect(*args, **kwargs))

        return attempt

    def verdict(self) -> Verdict:
        """Read synchronously where the timeout is raised: no await, so no race."""
        down = self._failed_seq > self._ok_seq
        ago = None if self._failed_at is None else self._clock() - self._failed_at
        return Verdict(down=down, detail=self._detail if down else "", failed_s_ago=ago)


def timeout_error(verdict: Verdict, *, what: str, max_size: int, retry_after_s: float,
                  timeout_detail: str) -> DiwaniyaError:
    """The domain error for a checkout that timed out, judged on ``verdict``.

    ``what`` names the pool in the message ("pool 'diwaniya-locks'").
    """
    if verdict.down:
        return StoreUnavailable(
            f"the database is unavailable ({timeout_detail}; the last connection attempt "
            f"failed: {verdict.detail}); retry in a few seconds with the same request_id — "
            "a turn that was saved is replayed, never run twice", retry_after_s=retry_after_s)
    return ResourceExhausted(
        f"all {max_size} database connections of {what} are busy; retry in a moment",
        retry_after_s=retry_after_s)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]
