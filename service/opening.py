"""Start-up while PostgreSQL is down: live, not ready, and open by itself when it answers.

``diwaniya serve`` binds its port before it opens the database
(service.cli._serve). Until the app is open the servicers reach it through a
:class:`Pending` that answers every RPC ``UNAVAILABLE`` with a retry hint,
readiness says NOT_SERVING and liveness SERVING — a database outage during a
rollout leaves new pods out of rotation instead of in CrashLoopBackOff.
:func:`open_when_reachable` retries the open with a capped back-off, probing
first (one connection, not the pools), until it works, a permanent error
(majlis.pg_probe.open_failure: exit 2) or SIGTERM.

>>> pending: Pending[str] = Pending()
>>> try:
...     pending.get()
... except StoreUnavailable as exc:
...     print(exc.reason, exc.retry_after_s)
STORE_UNAVAILABLE 1.0
>>> pending.set("التطبيق"); pending.get()
'التطبيق'
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from diwaniya.errors import StoreUnavailable
from majlis.pg_probe import open_failure

log = logging.getLogger("diwaniya.opening")

T = TypeVar("T")

# The back-off between attempts doubles from FIRST_RETRY_S up to RETRY_CAP_S:
# after the database returns, the replica opens within about the cap plus one
# open (the rule: service back within 5 s of recovery).
FIRST_RETRY_S = 0.25
RETRY_CAP_S = 2.0


class Pending(Generic[T]):
    """A dependency that exists once the database has opened; until then UNAVAILABLE."""

    def __init__(self, value: T | None = None, *, retry_after_s: float = 1.0) -> None:
        self._value = value
        self._retry_after_s = retry_after_s

    @property
    def is_set(self) -> bool:
        return self._value is not None

    def set(self, value: T) -> None:
        self._value = value

    def get(self) -> T:
        if self._value is None:
            # No driver detail here: the caller learns what to do, the log says why.
            raise StoreUnavailable(
                "the service is starting and its database is not open yet; retry in a few "
                "seconds",
                retry_after_s=self._retry_after_s)
        return self._value


def backoff(attempt: int) -> float:
    """Seconds to wait before attempt ``attempt`` (2, 3, …).

    >>> [backoff(n) for n in range(2, 8)]
    [0.25, 0.5, 1.0, 2.0, 2.0, 2.0]
    """
    return min(RETRY_CAP_S, FIRST_RETRY_S * 2 ** max(0, attempt - 2))


class _Stopped(Exception):
    """SIGTERM arrived while an attempt or a back-off was still running."""


async def _unless_stopped(work: Awaitable[T], stop: asyncio.Event) -> T:
    task = asyncio.ensure_future(work)
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if not task.done():
        # An open cut short closes what it had opened (build_app's exit stack).
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        raise _Stopped
    return task.result()


async def open_when_reachable(
    open_: Callable[[], Awaitable[T]], *, probe: Callable[[], Awaitable[None]],
    stop: asyncio.Event, where: str, on_waiting: Callable[[], None] = lambda: None,
    retry_after_s: float = 1.0,
) -> T | None:
    """``open_()``'s result once it succeeds; None when ``stop`` is set first.

    After a failure the error is classified (majlis.pg_probe.open_failure): a
    permanent one is raised as ConfigurationError (the CLI exits 2), a
    transient one logs ONE warning for the whole wait, calls ``on_waiting``
    once. Every attempt runs ``probe()`` (one connect) before ``open_()``, so
    an unreachable database is reported at once rather than after the pools'
    open timeout, and the pools are not opened and closed every two seconds
    while nothing answers.
    """
    attempt = 0
    first_failure = 0.0
    while True:
        attempt += 1
        try:
            if attempt > 1:
                await _unless_stopped(asyncio.sleep(backoff(attempt)), stop)
            # Probe first, the first attempt included: one connect that is
            # refused fails at once, where the pools' open would wait out its
            # open timeout (about 10 s) before the warning below could say why.
            await _unless_stopped(probe(), stop)
            opened = await _unless_stopped(open_(), stop)
        except _Stopped:
            log.info("stopped while waiting for the database (%d attempts)", attempt)
            return None
        except Exception as exc:
            problem = open_failure(exc, retry_after_s=retry_after_s)
            if problem is None:
                raise  # not the database: a bug keeps its traceback
            if not isinstance(problem, StoreUnavailable):
                raise problem from exc
            if attempt == 1:
                first_failure = time.monotonic()
                log.warning(
                    "PostgreSQL at %s is not reachable (%s): serving health as live and not "
                    "ready, RPCs UNAVAILABLE; retrying every %.2g s at most until it answers. "
                    "Check DATABASE_URL and that the database is up and accepting connections",
                    where, " ".join(problem.message.split()), RETRY_CAP_S)
                on_waiting()
            else:
                log.debug("attempt %d: PostgreSQL still not reachable: %s", attempt,
                          problem.message)
            continue
        if attempt > 1:
            log.info("PostgreSQL at %s reached after %d attempts (%.1f s): opened", where,
                     attempt, time.monotonic() - first_failure)
        return opened
