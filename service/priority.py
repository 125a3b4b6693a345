"""An event loop that runs the start of every RPC ahead of turns already under way.

Under load one process runs ~30 turns at once on one event loop. asyncio runs
ready callbacks first in, first out, and a new request needs several loop hops
before its first event leaves (gRPC's accept, reading the message, the lock
statement's reply, the write): behind a full ready queue of other turns' graph
steps, each hop waited a whole loop pass, so time to first event grew with the
number of turns in flight (issue #11: TTFE p99 100–140 ms at 32 streams on a
quiet machine, one core saturated).

:class:`FrontLaneLoop` keeps two lanes of ready callbacks. A callback whose
context has :data:`FIRST_RESPONSE` set goes to the front lane, and the front
lane runs first. The gRPC server's accept loop is started with it set
(:func:`front`), so every RPC task inherits it; an RPC leaves the front lane
when its first response message has left (:func:`settle` — for a turn, just
after ``turn_started`` or ``queued``; for a unary call that is the answer), so
mid-turn work (graph nodes, checkpoint, memory search, commit) is never ahead
of a waiting first event. Invariants:

* I/O readiness callbacks (a socket became readable) and callbacks handed
  over from other threads are front-lane: they only resolve the future a task
  waits on (whose next step then joins its own context's lane), and gRPC
  delivers every completion through one such callback (grpc.aio's poller socket).
* Nothing is reordered within a lane; only a front-lane callback may pass a
  back-lane one. The back lane still makes progress: after ``FRONT_BURST``
  front callbacks in a row, one back callback runs.
* A pass runs at most ``BACK_SLICE`` back-lane callbacks before the loop polls
  for I/O again, so a reply that a front-lane task waits for (the lock
  statement's, a write's) is seen after a few callbacks, not after every ready
  one. Polling with timeout 0 is one cheap ``epoll_wait``.
* The lanes are only an order: what runs, and every result, is the same as on
  the stock loop (the tests run on the stock loop too, where ``settle`` is a no-op
  in effect).

>>> import asyncio
>>> with asyncio.Runner(loop_factory=FrontLaneLoop) as runner:  # doctest: +SKIP
...     runner.run(serve())      # «السلام عليكم» gets its turn_started first
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import logging
import sys
from collections.abc import Callable
from typing import Any, TypeVarTuple

_Ts = TypeVarTuple("_Ts")

# True in the context of work that a client is waiting on for its first response.
FIRST_RESPONSE: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "diwaniya_first_response", default=False)

# Back-lane callbacks per loop pass before the loop polls for I/O again.
BACK_SLICE = 8
# Front-lane callbacks in a row after which one back-lane callback runs anyway.
FRONT_BURST = 32


class _Lanes:
    """What ``BaseEventLoop`` calls ``_ready``: ``append``, ``popleft``, ``len``,
    truth and ``clear`` — the only operations asyncio uses on it (CPython 3.11–3.13)."""

    __slots__ = ("_back", "_front", "_streak")

    def __init__(self) -> None:
        self._front: collections.deque[asyncio.Handle] = collections.deque()
        self._back: collections.deque[asyncio.Handle] = collections.deque()
        self._streak = 0

    def append(self, handle: asyncio.Handle) -> None:
        context: contextvars.Context | None = getattr(handle, "_context", None)
        if context is not None and context.get(FIRST_RESPONSE, False):
            self._front.append(handle)
        else:
            self._back.append(handle)

    def append_front(self, handle: asyncio.Handle) -> None:
        self._front.append(handle)

    def popleft(self) -> asyncio.Handle:
        if self._front and (self._streak < FRONT_BURST or not self._back):
            self._streak += 1
            return self._front.popleft()
        self._streak = 0
        return self._back.popleft()

    def __len__(self) -> int:
        # How many the loop runs this pass (it pops exactly this many; callbacks
        # only ever join meanwhile, so every pop finds one).
        return len(self._front) + min(len(self._back), BACK_SLICE)

    def __bool__(self) -> bool:
        return bool(self._front or self._back)

    def clear(self) -> None:
        self._front.clear()
        self._back.clear()


class FrontLaneLoop(asyncio.SelectorEventLoop):
    """The stock selector loop with two ready lanes (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ready: Any = _Lanes()  # replaces the deque before anything is scheduled

    def _add_callback(self, handle: asyncio.Handle) -> None:
        # I/O readiness (a socket became readable or writable): its callback
        # only hands the data on — it resolves the future a task waits on, and
        # that task's next step joins the lane of its own context. Running it
        # at once is what lets a front-lane task see its reply this pass; one
        # dispatcher callback carries every gRPC completion (grpc.aio's poller
        # socket), so in the back lane it would hold up every RPC's start.
        if not handle._cancelled:
            self._ready.append_front(handle)

    def call_soon_threadsafe(self, callback: Callable[[*_Ts], object],
                             *args: *_Ts,
                             context: contextvars.Context | None = None) -> asyncio.Handle:
        # Another thread handing a result to the loop (aiosqlite's worker, an
        # executor): a dispatcher like an I/O callback, so front-lane for the
        # same reason. (deque.append is atomic: safe from any thread.)
        self._check_closed()  # type: ignore[attr-defined]
        handle = asyncio.Handle(callback, args, self, context)
        self._ready.append_front(handle)
        self._write_to_self()  # type: ignore[attr-defined]
        return handle


def front() -> contextvars.Token[bool]:
    """Mark the current context as waited on (tasks created from now on inherit it)."""
    return FIRST_RESPONSE.set(True)


def settle() -> None:
    """The first response has left: the rest of this task's work is ordinary."""
    if FIRST_RESPONSE.get():
        FIRST_RESPONSE.set(False)


# The CPython releases whose BaseEventLoop uses ``_ready`` only as _Lanes
# assumes (append, popleft, len, truth, clear) and adds I/O callbacks through
# ``_add_callback``: the lanes replace a private attribute, so a release not
# read against them runs on the stock loop instead (same results, FIFO order).
# tests/service/test_priority.py's loop tests (lanes, starvation, I/O and
# thread hand-offs, fallback) pass on CPython 3.11.7, 3.12.1 and 3.13.0.
CHECKED_RELEASES = ((3, 11), (3, 12), (3, 13))


def supported() -> bool:
    """Whether this interpreter's asyncio is one the lanes were checked against."""
    ready = getattr(asyncio.base_events.BaseEventLoop, "_add_callback", None)
    return (sys.implementation.name == "cpython"
            and sys.version_info[:2] in CHECKED_RELEASES and callable(ready))


def run(main: Any, *, lanes: bool = True) -> Any:
    """``asyncio.run(main)`` on a :class:`FrontLaneLoop` (``lanes``, on a checked
    CPython), else on the stock loop."""
    if lanes and not supported():
        logging.getLogger(__name__).warning(
            "front-lane event loop not checked against %s %s: serving on the stock loop",
            sys.implementation.name, sys.version.split()[0])
    factory = FrontLaneLoop if lanes and supported() else None
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(main)
