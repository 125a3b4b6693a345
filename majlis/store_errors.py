"""Database failures as domain errors: the majlis/memory boundary for outages.

psycopg, psycopg-pool, asyncpg and SQLite each raise their own exceptions when
the database is down, unreachable or out of connections. Calls above this
boundary (the engine, the servicer) see only :class:`StoreUnavailable` (→
UNAVAILABLE with a retry hint) or :class:`ResourceExhausted` (the pool is busy,
not broken), never a driver exception that would surface as INTERNAL.
"""

from __future__ import annotations

import sqlite3
import sys
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal

from diwaniya.errors import DiwaniyaError, ResourceExhausted, StoreUnavailable
from memory.pool_health import timeout_error

if TYPE_CHECKING:
    from psycopg_pool import AsyncConnectionPool

RETRY_AFTER_S = 1.0

_DOWN = (
    "the database is unavailable ({detail}); retry in a few seconds with the same "
    "request_id — a turn that was saved is replayed, never run twice"
)


def store_error(exc: BaseException, pool: AsyncConnectionPool[Any] | None = None,
                *, retry_after_s: float = RETRY_AFTER_S) -> DiwaniyaError | None:
    """The domain error for a database failure; None when ``exc`` is not one.

    A pool timeout from one of our pools (majlis.pg_pool.CheckoutTimeout)
    carries the verdict its pool took when it timed out: RESOURCE_EXHAUSTED
    unless the pool's newest connection attempt had failed (the database
    answers, every connection is lent), else UNAVAILABLE. Nothing read here,
    later, decides it: by now a connection may have come back. A bare
    ``PoolTimeout`` (a pool that keeps no evidence) is RESOURCE_EXHAUSTED only
    when ``pool`` still shows every connection open and in use.

    >>> from psycopg_pool import PoolTimeout
    >>> store_error(PoolTimeout("couldn't get a connection after 2.00 sec")).retry_after_s
    1.0
    >>> from majlis.pg_pool import CheckoutTimeout
    >>> from memory.pool_health import Verdict
    >>> busy = Verdict(down=False, detail="", failed_s_ago=None)   # «كل الاتصالات مشغولة»
    >>> type(store_error(CheckoutTimeout("…", verdict=busy, pool_name="diwaniya-locks",
    ...                                  max_size=8))).__name__
    'ResourceExhausted'
    """
    if isinstance(exc, DiwaniyaError) or not isinstance(exc, Exception):
        return None
    # No psycopg exception can exist before psycopg is imported, and the SQLite
    # default never imports it: check its classes only once it is loaded.
    if "psycopg" not in sys.modules:
        if isinstance(exc, (OSError, sqlite3.OperationalError)):
            return StoreUnavailable(_DOWN.format(detail=_short(exc)), retry_after_s=retry_after_s)
        return None
    import psycopg
    from psycopg_pool import PoolClosed, PoolTimeout, TooManyRequests

    if isinstance(exc, TooManyRequests):
        return ResourceExhausted(
            "too many calls are waiting for a database connection; retry in a moment",
            retry_after_s=retry_after_s)
    from majlis.pg_pool import CheckoutTimeout

    if isinstance(exc, CheckoutTimeout):
        return timeout_error(exc.verdict, what=f"pool {exc.pool_name!r}", max_size=exc.max_size,
                             retry_after_s=retry_after_s, timeout_detail=_short(exc))
    if isinstance(exc, PoolTimeout) and pool is not None and _all_busy(pool):
        return ResourceExhausted(
            f"all {pool.max_size} database connections of pool {pool.name!r} are busy; "
            "retry in a moment", retry_after_s=retry_after_s)
    if isinstance(exc, (PoolTimeout, PoolClosed, psycopg.OperationalError,
                        psycopg.InterfaceError, OSError, sqlite3.OperationalError)):
        return StoreUnavailable(_DOWN.format(detail=_short(exc)), retry_after_s=retry_after_s)
    return None


# Lower-case: it reads like the function it replaces, ``with translate_store_errors():``.
class translate_store_errors:
    """Re-raise database failures inside the block as domain errors (sync or async ``with``)."""

    def __init__(self, pool: AsyncConnectionPool[Any] | None = None, *,
                 retry_after_s: float = RETRY_AFTER_S) -> None:
        self._pool = pool
        self._retry_after_s = retry_after_s

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        if exc is None:
            return False
        mapped = store_error(exc, self._pool, retry_after_s=self._retry_after_s)
        if mapped is None:
            return False
        raise mapped from exc

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> Literal[False]:
        return self.__exit__(exc_type, exc, tb)


def _all_busy(pool: AsyncConnectionPool[Any]) -> bool:
    stats = pool.get_stats()
    return stats.get("pool_size", 0) >= pool.max_size and stats.get("pool_available", 0) == 0


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:200]
