"""Where a turn's time comes from: an injected clock, never the wall clock.

Nothing in the graph calls ``datetime.now()``; it asks a :class:`Clock`. The
service passes :class:`SystemClock`; tests and replays pass :class:`FixedClock`,
so a greeting on 2027-02-25 in Kuwait is reproducible:

    >>> FixedClock(datetime(2027, 2, 25, 6, 0, tzinfo=UTC)).now().isoformat()
    '2027-02-25T06:00:00+00:00'
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

from diwaniya.errors import InvalidRequest

__all__ = ["Clock", "FixedClock", "SystemClock", "require_aware"]


class Clock(Protocol):
    """Gives the current instant as a timezone-aware UTC datetime."""

    def now(self) -> datetime: ...


def require_aware(at: datetime, *, field: str = "client_time") -> datetime:
    """``at`` converted to UTC; a naive datetime is refused, never guessed."""
    if at.tzinfo is None or at.utcoffset() is None:
        raise InvalidRequest(
            f"{field} must carry a timezone offset (got {at.isoformat()})", field=field
        )
    return at.astimezone(UTC)


class SystemClock:
    """The real clock (UTC)."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock stopped at ``at`` (converted to UTC)."""

    def __init__(self, at: datetime) -> None:
        self._at = require_aware(at, field="at")

    def now(self) -> datetime:
        return self._at
