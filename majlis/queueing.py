"""Entering a thread lock without leaving the client in silence.

A turn may have to wait for its thread's lock: another turn runs on the thread
(policy ``enqueue``), or no lock connection is free yet (all hold running
turns, or the pool is still opening one). The lock reports such a wait through
its ``on_wait`` callback, once per reason (``majlis.threads.WaitSignal``);
:class:`EnteringLock` enters the lock in a task of its own so that the turn's
event stream can say ``queued`` at once, while it waits, instead of after it.

>>> lock = EnteringLock(lambda on_wait: store.lock("t1", policy="enqueue",  # doctest: +SKIP
...                                               wait_s=30, on_wait=on_wait))
>>> async for queued in lock.wait():       # doctest: +SKIP
...     print(queued)                        # Queued(reason='thread_busy', position=1)
>>> async with lock:                        # doctest: +SKIP
...     ...                                  # the turn, holding the lock
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import Generic, TypeVar

from majlis.events import Queued
from majlis.threads import OnWait

T = TypeVar("T")


class EnteringLock(Generic[T]):
    """Enter ``make(on_wait)`` (an async context manager), yielding a Queued per wait signal.

    ``async with`` gives what the lock gives (the thread store's fencing ``Lease``).
    """

    def __init__(self, make: Callable[[OnWait], AbstractAsyncContextManager[T]]) -> None:
        self._signals: list[Queued] = []
        # What wait() sleeps on: resolved by a wait signal or by entering, whichever first.
        self._wake: asyncio.Future[None] | None = None
        self._cm = make(self._on_wait)
        self._entered = False
        self._value: T | None = None

    def _on_wait(self, reason: str, position: int) -> None:
        self._signals.append(Queued(reason=reason, position=max(0, position)))
        self._rouse()

    def _rouse(self, _entering: object = None) -> None:
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    async def wait(self) -> AsyncIterator[Queued]:
        """Enter the lock; yields ``Queued`` events while it waits. Raises what entering raises."""
        enter: asyncio.Future[T] = asyncio.ensure_future(self._cm.__aenter__())
        # One future at a time, resolved by entering or by a signal: not a second
        # task a turn waiting on an Event, nor asyncio.wait's futures and
        # callbacks (issue #11) — most turns never wait at all.
        enter.add_done_callback(self._rouse)
        loop = asyncio.get_running_loop()
        try:
            while True:
                if not enter.done() and not self._signals:
                    self._wake = loop.create_future()
                    try:
                        await self._wake
                    finally:
                        self._wake = None
                while self._signals:
                    queued = self._signals.pop(0)
                    if not enter.done():
                        yield queued
                if enter.done():
                    self._value = enter.result()
                    self._entered = True
                    return
        finally:
            if not self._entered:
                await self._abandon(enter)

    async def _abandon(self, enter: asyncio.Future[T]) -> None:
        # The turn went away (cancelled, client gone) while waiting: stop
        # waiting, and give the lock back if it was taken in the meantime.
        enter.cancel()
        with contextlib.suppress(BaseException):
            await asyncio.shield(enter)
        if enter.done() and not enter.cancelled() and enter.exception() is None:
            await asyncio.shield(self._cm.__aexit__(None, None, None))

    async def __aenter__(self) -> T:
        if not self._entered:
            async for _ in self.wait():
                pass
        return self._value  # type: ignore[return-value]  # set by wait() on entering

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> bool | None:
        if not self._entered:
            return None
        self._entered = False
        return await self._cm.__aexit__(exc_type, exc, tb)


class Starting:
    """This process's turns that have not sent their first event yet, in arrival order.

    Under a burst of new streams the process starts many turns at once, and
    each waits for the ones before it (their accept, their claim and lock
    statements, their first writes: the front lane, service.priority). A turn
    that arrives with others still ahead of it says so at once, ``queued``
    with reason ``starting`` and how many are ahead, before any database
    round trip of its own — instead of in silence until its lock statement
    answered. A turn with nobody ahead says nothing (the usual case).

    >>> starting = Starting()
    >>> first, second = starting.join(), starting.join()
    >>> (first.ahead, second.ahead)                     # «السلام عليكم» ×2 at once
    (0, 1)
    >>> second.queued()                                 # its first event: it leaves
    Queued(reason='starting', position=1, kind='queued')
    >>> first.leave(); first.leave()                    # turn_started out (idempotent)
    >>> starting.join().ahead
    0
    """

    __slots__ = ("_count", "_enabled")

    def __init__(self, *, enabled: bool = True) -> None:
        self._count = 0
        # False (DIWANIYA_QUEUED_WHILE_STARTING=false): nobody is ever ahead.
        self._enabled = enabled

    def join(self) -> Start:
        if not self._enabled:
            return Start(None, 0)
        start = Start(self, self._count)
        self._count += 1
        return start

    def _leave(self) -> None:
        self._count -= 1


class Start:
    """One turn's place in :class:`Starting`; :meth:`leave` once its first event is out."""

    __slots__ = ("_of", "ahead")

    def __init__(self, of: Starting | None, ahead: int) -> None:
        self._of: Starting | None = of
        self.ahead = ahead

    def queued(self) -> Queued:
        """The early signal (the turn's first event: it leaves); position = turns ahead."""
        self.leave()
        return Queued(reason="starting", position=self.ahead)

    def leave(self) -> None:
        if self._of is not None:
            self._of._leave()
            self._of = None
