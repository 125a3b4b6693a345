"""One ``Converse`` stream as a small session object on an :class:`asyncio.TaskGroup`.

Three parts share the session: the reader (client messages → inbox, ``cancel``
→ the running turn), the worker (one turn at a time, in the group), and the
caller iterating :meth:`ConverseSession.events`. Invariant: no exception goes
unreported. A turn that fails — a domain error, a cancel, or a bug of ours —
becomes an ``error`` event (via :func:`service.errors.error_event`, which logs
the traceback of anything unexpected) and the stream takes the next message.
The reader and worker catch the same way, so the group itself only ever ends
by finishing or by being cancelled with the RPC.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import TypeAlias

from diwaniya.v1 import conversations_pb2 as pb
from majlis.engine import ConversationEngine
from service import convert, priority
from service.errors import error_event
from service.wire import Undecodable

# Turns a Converse stream may have queued behind the running one.
CONVERSE_INBOX = 16

Incoming: TypeAlias = pb.SendMessageRequest | pb.Approval


class ConverseSession:
    def __init__(self, engine: ConversationEngine, tenant: str,
                 requests: AsyncIterator[pb.ClientMessage | Undecodable],
                 draining: asyncio.Event) -> None:
        self._engine = engine
        self._tenant = tenant
        self._requests = requests
        self._draining = draining
        self._inbox: asyncio.Queue[Incoming | None] = asyncio.Queue(CONVERSE_INBOX)
        self._out: asyncio.Queue[pb.TurnEvent | None] = asyncio.Queue()
        self._turn: asyncio.Task[None] | None = None
        self._turn_id = ""

    async def events(self) -> AsyncGenerator[pb.TurnEvent, None]:
        """Every event of every turn, in order, until the client closes or the server drains."""
        async with asyncio.TaskGroup() as group:
            reader = group.create_task(self._read())
            worker = group.create_task(self._work(group))
            while (event := await self._out.get()) is not None:
                try:
                    yield event
                except GeneratorExit:
                    # Closed early (the RPC ended mid-stream): stop every part and let
                    # the group wait for them — a GeneratorExit raised through the
                    # group would be an "unhandled error" of it (BaseExceptionGroup).
                    for task in (reader, worker, self._turn):
                        if task is not None:
                            task.cancel()
                    return
                # Written. This task writes in the loop's front lane only while the
                # stream waits for a turn's first event (service.priority): after a
                # turn's last event the next one it writes is the next turn's first.
                if event.WhichOneof("event") in ("turn_completed", "error"):
                    priority.front()
                else:
                    priority.settle()
            # The worker is done (end of input, or drain): stop waiting for more input.
            reader.cancel()

    # ------------------------------------------------------------ reader
    async def _read(self) -> None:
        try:
            async for msg in self._requests:
                if isinstance(msg, Undecodable):
                    # Only this message is lost; the stream stays open as after any failed turn.
                    self._out.put_nowait(error_event(msg.error()))
                    continue
                kind = msg.WhichOneof("kind")
                if kind == "cancel":
                    self._cancel(msg.cancel.turn_id)
                elif kind == "message":
                    await self._inbox.put(msg.message)
                elif kind == "approval":
                    await self._inbox.put(msg.approval)
        except Exception as exc:
            # The request stream itself broke: say so, then end the session.
            self._out.put_nowait(error_event(exc))
        await self._inbox.put(None)

    def _cancel(self, wanted: str) -> None:
        turn = self._turn
        if turn is not None and not turn.done() and wanted in ("", self._turn_id):
            turn.cancel()

    # ------------------------------------------------------------ worker
    async def _work(self, group: asyncio.TaskGroup) -> None:
        drained = asyncio.ensure_future(self._draining.wait())
        try:
            while True:
                # An idle stream ends as soon as the server drains, instead of
                # holding the shutdown for the whole grace period.
                got = asyncio.ensure_future(self._inbox.get())
                await asyncio.wait({got, drained}, return_when=asyncio.FIRST_COMPLETED)
                if not got.done():
                    got.cancel()
                    break
                msg = got.result()
                if msg is None:
                    break
                self._turn_id = ""
                self._turn = group.create_task(self._run_turn(msg))
                # wait() rather than await: a cancelled turn must not cancel the worker.
                await asyncio.wait({self._turn})
        finally:
            drained.cancel()
            self._out.put_nowait(None)

    async def _run_turn(self, msg: Incoming) -> None:
        thread_id = msg.thread_id
        # The start of this turn runs ahead of other turns' mid-turn work, until
        # its first event is handed to the writer (service.priority).
        priority.front()
        try:
            if isinstance(msg, pb.Approval):
                events_of = self._engine.run_approval(
                    convert.approval_request(msg, self._tenant))
            else:
                events_of = self._engine.run_turn(convert.turn_request(msg, self._tenant))
            async with contextlib.aclosing(events_of) as events:
                async for envelope in events:
                    self._turn_id = envelope.turn_id
                    thread_id = envelope.thread_id
                    self._out.put_nowait(convert.turn_event(envelope))
                    priority.settle()
        except asyncio.CancelledError:
            self._out.put_nowait(pb.TurnEvent(thread_id=thread_id, turn_id=self._turn_id,
                                              error=pb.Error(
                code="cancelled", reason="TURN_CANCELLED",
                message="the turn was cancelled; nothing was added to the thread")))
            raise
        except Exception as exc:
            # Domain errors as their status; anything else INTERNAL, logged with
            # its traceback (error_event) — never a silent, hanging stream.
            self._out.put_nowait(error_event(exc, thread_id, self._turn_id))
