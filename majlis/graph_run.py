"""A turn's graph run in a task of its own, its events handed over through a queue.

The nodes' events (majlis.nodes._emit) used to travel through LangGraph's
``custom`` stream mode. With that mode LangGraph runs even a single node as
an executor task and keeps a *waiter task* alive beside it, one new task
each time an event wakes the stream (four a turn: ``get_waiter`` in
``Pregel.astream``), plus ``asyncio.wait`` bookkeeping for every wake-up.
Without a streaming mode it runs a lone node inline, in the caller's task.

:class:`GraphRun` drives the graph (``stream_mode="updates"``, whose chunks
it drops) in one task it owns; the nodes hand their events to it through a
context variable (:func:`event_writer`), and the turn reads them, in order
and live — a streaming model's deltas as they come — with :meth:`GraphRun.next`.
Closing it (``async with``) cancels a run still going and waits for it, in
the run's own task and context: the turn's pending checkpoint (majlis.fence)
is the one the run was started with. A run that raised raises the same
exception from :meth:`GraphRun.next`, after the events it emitted before.

>>> async with GraphRun(graph, turn_start(inp), config) as run:   # doctest: +SKIP
...     while (event := await run.next()) is not DONE:
...         print(event)    # PhaseChanged(…), TextDelta(text='وعليكم السلام…'), …
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Callable
from contextvars import ContextVar
from types import TracebackType
from typing import Any

from langgraph.config import get_stream_writer

# The turn's event hand-off, set in the run task's context only.
_SINK: ContextVar[Callable[[Any], None] | None] = ContextVar("diwaniya_event_sink", default=None)

DONE = object()


def event_writer() -> Callable[[Any], None]:
    """Where a node writes its events: its turn's :class:`GraphRun`, else LangGraph's
    custom stream (a graph streamed with ``stream_mode="custom"``, as tests may)."""
    sink = _SINK.get()
    return sink if sink is not None else get_stream_writer()


class GraphRun:
    """``graph.astream(input, config)`` run to its end in a task; its events via :meth:`next`."""

    def __init__(self, graph: Any, graph_input: Any, config: Any) -> None:
        self._events: collections.deque[Any] = collections.deque()
        self._wake: asyncio.Future[None] | None = None
        token = _SINK.set(self._put)
        try:
            # The task copies this context: the sink, and the turn's pending
            # checkpoint and raw text (majlis.fence, majlis.pii_context).
            self._task = asyncio.get_running_loop().create_task(
                self._drive(graph, graph_input, config))
        finally:
            _SINK.reset(token)
        self._task.add_done_callback(self._rouse)

    @staticmethod
    async def _drive(graph: Any, graph_input: Any, config: Any) -> None:
        async with contextlib.aclosing(graph.astream(
                graph_input, config, stream_mode="updates", durability="exit")) as chunks:
            async for _ in chunks:
                pass

    def _put(self, event: Any) -> None:
        # Called on the loop: every step runs as a coroutine on it (majlis.graph
        # runs sync steps inline, never in LangGraph's thread pool).
        self._events.append(event)
        self._rouse()

    def _rouse(self, _done: object = None) -> None:
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    async def next(self) -> Any:
        """The next event, or :data:`DONE` once the run ended; what the run raised."""
        while not self._events:
            if self._task.done():
                self._task.result()
                return DONE
            self._wake = asyncio.get_running_loop().create_future()
            try:
                await self._wake
            finally:
                self._wake = None
        return self._events.popleft()

    async def __aenter__(self) -> GraphRun:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        task = self._task
        if not task.done():
            # The turn ended early (cancelled, abandoned, past its deadline):
            # the run ends too, before the turn gives its lock back.
            task.cancel()
            await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # retrieved: a run that failed after its turn gave up
