"""The locked-turn path: claim, lock, replay, run the graph, fenced commit — written once.

A message (``SendMessage``) and an approval (``Approve``) are both a
:class:`TurnOrder`: the graph chooses its branch from ``TurnInput.approval``,
and everything around it is this module's, for both — the request-id claim
and replay, the thread lock and its ``queued`` events, the turn's span and
deadline, the deferred checkpoint and its fenced commit, and the closing
``turn_completed`` (built only by :meth:`CompletedTurn.to_event`).

Correctness never depends on process-local state: turn exclusion is a database
lock whose fencing token every commit checks, and idempotency records are a
table keyed by (tenant, user, request_id) written in the same commit as the
turn, so any replica can continue any thread (docs/fencing.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
import uuid
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from opentelemetry.trace import Span, Status, StatusCode

from diwaniya.errors import (
    DeadlineExceeded,
    DiwaniyaError,
    NotFound,
    RequestIdReused,
    Unavailable,
)
from majlis.approvals import not_held
from majlis.events import Envelope, Event, TurnCompleted, event_from_dict
from majlis.fence import PendingCheckpoint, deferring
from majlis.graph_run import DONE, GraphRun
from majlis.persistence import Persistence
from majlis.pii_context import holding_raw
from majlis.queueing import EnteringLock, Starting
from majlis.records import CompletedTurn, TurnInput
from majlis.state import ThreadState, held_calls, turn_start
from majlis.threads import Lease, RequestKey, RequestRecord, ThreadRow, TurnCommit
from majlis.tracing import DeferredTracer
from majlis.turn_log import TurnWriter

_tracer = DeferredTracer("diwaniya.majlis")

# After a commit whose outcome was lost, how often (and how patiently) to ask
# the database whether the turn was saved before answering UNAVAILABLE.
COMMIT_CHECKS = 3
COMMIT_CHECK_PAUSE_S = 0.5


@dataclass(frozen=True, slots=True)
class TurnOrder:
    """One turn to run, validated: the graph input and what surrounds it.

    ``input.thread_id`` is "" for a new conversation and ``input.turn_id`` is
    filled in under the lock. ``content`` is what a ``request_id`` binds (a
    retry must repeat it); ``raw`` the message as typed for a tenant whose
    model may see personal data (never put in the state, see majlis.pii_context).
    """

    input: TurnInput
    content: str
    timeout_s: float
    title: str = ""
    raw: str | None = None
    kind: Literal["message", "approval"] = "message"

    @property
    def key(self) -> RequestKey | None:
        inp = self.input
        return RequestKey(inp.tenant, inp.user_id, inp.request_id) if inp.request_id else None


def content_hash(text: str) -> str:
    """What a retry must repeat: the SHA-256 of the cleaned message text.

    >>> content_hash("وين طلبي؟") == content_hash("وين طلبي؟")
    True
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def owned(db: Persistence, tenant: str, user_id: str, thread_id: str) -> ThreadRow:
    """The thread's row when ``user_id`` owns it; NotFound otherwise."""
    row = await db.threads.get(tenant, thread_id)
    # Another user's thread is reported exactly like a missing one, so
    # thread ids cannot be probed.
    if row is None or row.user_id != user_id:
        raise NotFound(f"thread {thread_id} not found for user {user_id}")
    return row


class TurnRunner:
    """Runs :class:`TurnOrder`s on the graph; the engine's only way to run a turn."""

    def __init__(self, graph: CompiledStateGraph[Any, Any, Any, Any], persistence: Persistence,
                 *, policy: Literal["reject", "enqueue"], enqueue_wait_s: float,
                 replay_window_s: float, queued_while_starting: bool = True) -> None:
        self._graph = graph
        self._db = persistence
        self._policy = policy
        self._enqueue_wait_s = enqueue_wait_s
        self._window_s = replay_window_s
        self._starting = Starting(enabled=queued_while_starting)

    async def run(self, order: TurnOrder) -> AsyncGenerator[Envelope, None]:
        """The turn's events, or its replay when its ``request_id`` already finished.

        Raises before the first event other than ``queued``: NotFound,
        RequestIdReused, ThreadBusy, ResourceExhausted; during the turn:
        DeadlineExceeded, Unavailable.
        """
        deadline = time.monotonic() + order.timeout_s
        # Arriving behind other turns that are still starting (a burst of new
        # streams): ``queued`` (starting) is said now, before this turn's own
        # claim and lock round trips; nobody ahead, nothing said (queueing.Starting).
        start = self._starting.join()
        try:
            said = bool(start.ahead and order.input.thread_id)
            if said:
                yield Envelope(order.input.thread_id, "", 0, start.queued())
            with self._db.errors():
                thread_id, replay, new_row, new_thread = await self._claim(order)
        except BaseException:
            start.leave()
            raise
        if replay is not None:
            # A finished request is immutable: replaying needs no lock.
            start.leave()
            for envelope in replayed(replay):
                yield envelope
            return
        if start.ahead and not said:
            # A new thread's id is known only now (a request_id's claim may have
            # found the thread of an earlier attempt).
            yield Envelope(thread_id, "", 0, start.queued())
        inp = order.input
        # Not made "current": the span lives across yields to the caller.
        span = _tracer.start_span("diwaniya.turn", attributes={
            "diwaniya.thread_id": thread_id, "diwaniya.tenant": inp.tenant,
            "diwaniya.request_id": inp.request_id, "diwaniya.country": inp.country,
            "diwaniya.turn_kind": order.kind})
        # The resumable log (majlis.turn_log): every event also goes there, batched.
        log = self._db.turn_log.writer(inp.tenant, inp.user_id) if self._db.turn_log else None
        # An event is logged just after it is yielded, not before: the first
        # event leaves without waiting for the log's round trip (time to first
        # event), and an event the stream ended on is logged by the handler below.
        # (A message's turn_started is in the log already on PostgreSQL: its
        # lock statement wrote it, see _locked.)
        unlogged: Envelope | None = None
        try:
            # aclosing: an abandoned stream must release the thread lock now, not at GC.
            # errors(): a database outage mid-turn is UNAVAILABLE with a retry hint.
            async with self._db.errors(), contextlib.aclosing(
                    self._locked(order, thread_id, deadline, create=new_row,
                                 new_thread=new_thread, log=log)) as turn_events:
                async for envelope in turn_events:
                    if isinstance(envelope.event, TurnCompleted):
                        _describe(span, envelope)
                    unlogged = envelope
                    start.leave()  # its first event (queued or turn_started) is out
                    yield envelope
                    unlogged = None
                    if log is not None:
                        await log.add(envelope)
        except BaseException as exc:
            if log is not None:
                with contextlib.suppress(Exception):
                    if unlogged is not None:
                        # Written with abort's error event, in one round trip.
                        await log.add(unlogged, hold=True)
                    await log.abort(exc)
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
        finally:
            start.leave()
            span.end()

    async def _claim(self, order: TurnOrder
                     ) -> tuple[str, RequestRecord | None, ThreadRow | None, bool]:
        """The thread this order runs on, its record if it already finished, the
        row of a new thread the lock must create (no request_id: the lock
        statement inserts it, one round trip for both), and whether the thread
        was made for this very attempt (then it has no checkpoint to read).

        With a ``request_id`` the thread of a new conversation is created in
        the same statement that records the request, so a retry of a first
        message (empty thread_id) finds the same thread instead of making one.
        """
        inp = order.input
        new_row: ThreadRow | None = None
        thread_id = inp.thread_id
        key = order.key
        if not thread_id:
            thread_id = uuid.uuid4().hex
            new_row = ThreadRow(thread_id=thread_id, tenant=inp.tenant, user_id=inp.user_id,
                                title="", created_at=inp.at, updated_at=inp.at, turn_count=0)
        if key is None:
            # A continuing turn's ownership is checked by the lock statement itself.
            return thread_id, None, new_row, new_row is not None
        digest = content_hash(order.content)
        # A request id is recorded only on the user's own thread: the claim checks
        # ownership itself (NotFound otherwise), in its own statement where it can.
        record = await self._db.threads.claim_request(
            key, thread_id=thread_id, content_hash=digest, new_thread=new_row,
            window_s=self._window_s, owner_check=new_row is None)
        same_thread = record.thread_id == inp.thread_id or (record.new_thread
                                                          and not inp.thread_id)
        if record.content_hash != digest or not same_thread:
            raise RequestIdReused(_reused(order, record))
        # Its new thread was created by this claim (not a retry's): no checkpoint
        # of it can exist before this turn's own commit, unless the lock says so.
        claimed_new = record.claimed and new_row is not None
        return record.thread_id, record if record.done else None, None, claimed_new

    async def _locked(self, order: TurnOrder, thread_id: str, deadline: float, *,
                      create: ThreadRow | None = None, new_thread: bool = False,
                      log: TurnWriter | None = None) -> AsyncGenerator[Envelope, None]:
        wait = min(self._enqueue_wait_s, max(0.0, deadline - time.monotonic()))
        key = order.key
        # Ownership not checked yet (continuing turn without request_id): the lock does it.
        unchecked = order.input.thread_id and key is None
        extra: dict[str, Any] = (
            {"owner": (order.input.tenant, order.input.user_id)} if unchecked else {})
        if key is not None:
            # Another replica may have finished this request while we waited: the
            # lock looks, in its own statement where the store can.
            extra["request"] = (key, self._window_s)
        inp = replace(order.input, thread_id=thread_id, turn_id=uuid.uuid4().hex,
                      deadline=deadline)
        numbered = _Numbering(thread_id, inp.turn_id)
        started = numbered(inp.started())
        if log is not None and inp.approval is None:
            # A message runs once it holds the lock (and its request is not done
            # already; an approval first checks its held call): its first log row
            # goes with the lock statement, one round trip for both, where the store can.
            extra["log_row"] = log.first_row(started)
        lock = EnteringLock(lambda on_wait: self._db.threads.lock(
            thread_id, policy=self._policy, wait_s=wait, on_wait=on_wait, create=create,
            **extra))
        # Waiting for capacity is said at once (a ``queued`` event), never in silence.
        async for queued in lock.wait():
            yield Envelope(thread_id=thread_id, turn_id="", seq=0, event=queued)
        async with lock as lease:
            if key is not None and lease.request_done:
                done = await self._db.threads.get_request(key, window_s=self._window_s)
                if done is not None and done.done:
                    for envelope in replayed(done):
                        yield envelope
                    return
            config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
            if inp.approval is not None:
                await self._check_held(config, inp.approval.call_id, thread_id)
            if log is not None and lease.logged_first:
                log.written(started)
            yield started
            # A thread made for this attempt (by its lock, or by its claim) has no
            # checkpoint to read while the lock finds it without a head.
            pending = PendingCheckpoint(thread_id, self._db.checkpointer.serde,
                                        fresh=new_thread and lease.headless)
            with deferring(pending), holding_raw(order.raw):
                # aclosing: an abandoned turn closes the graph's run here, while
                # the pending checkpoint is still this context's (docs/fencing.md).
                async with GraphRun(self._graph, turn_start(inp), config) as run:
                    at = _loop_deadline(deadline)
                    while (chunk := await _step(run, at, order.timeout_s)) is not DONE:
                        # Nodes write only majlis.events dataclasses (majlis.nodes._emit).
                        yield numbered(cast(Event, chunk))
            done_turn = _outcome(pending, inp.turn_id)
            final = numbered(done_turn.to_event(pending.checkpoint_id))
            await self._commit(lease, pending, TurnCommit(
                at=inp.at, title=order.title, checkpoint_id=pending.checkpoint_id, request=key,
                turn_id=inp.turn_id, events=list(done_turn.events),
                result=done_turn.to_result(),
                log_rows=log.closing_rows(final) if log is not None else ()))
            if log is not None:
                log.committed(final)
            yield final

    async def _check_held(self, config: RunnableConfig, call_id: str, thread_id: str) -> None:
        """NotFound before the first event when the approval names no held call."""
        values = cast(ThreadState, (await self._graph.aget_state(config)).values or {})
        if call_id not in held_calls(values):
            raise not_held(call_id, thread_id)

    async def commit_change(self, lease: Lease, pending: PendingCheckpoint,
                            commit: TurnCommit) -> None:
        """A fenced commit of a thread-state change that is not a turn (ReleaseHandoff)."""
        await self._commit(lease, pending, commit)

    async def _commit(self, lease: Lease, pending: PendingCheckpoint, commit: TurnCommit) -> None:
        """The fenced commit, and the truth about it when the database fails mid-way.

        A failure whose outcome the client cannot know (the connection died
        around COMMIT) is resolved by asking the database whether this turn's
        checkpoint became the thread's head: then the turn *was* saved and is
        reported completed; if not, it was not; if the database cannot say,
        UNAVAILABLE says exactly that.
        """
        if not pending.checkpoint_id:
            raise RuntimeError("the graph ended without a checkpoint to commit")
        try:
            await self._db.threads.commit_turn(lease, pending, commit)
            return
        except DiwaniyaError:
            raise
        except Exception as exc:
            failure = exc
        for attempt in range(COMMIT_CHECKS):
            try:
                saved = await self._db.threads.turn_saved(lease.thread_id, pending.checkpoint_id)
            except Exception:
                await asyncio.sleep(COMMIT_CHECK_PAUSE_S * (attempt + 1))
                continue
            if saved:
                return
            raise Unavailable(
                f"the database failed while saving this turn ({type(failure).__name__}); it "
                "was not saved — send the message again (the same request_id is safe)"
            ) from failure
        raise Unavailable(
            f"the database failed while saving this turn ({type(failure).__name__}) and is not "
            "answering, so whether it was saved is unknown — send it again with the same "
            "request_id: it replays if it was saved and runs once if not"
        ) from failure


class _Numbering:
    """Addresses and numbers a turn's events: seq 1 is ``turn_started``."""

    def __init__(self, thread_id: str, turn_id: str) -> None:
        self._thread_id = thread_id
        self._turn_id = turn_id
        self._seq = 0

    def __call__(self, event: Event) -> Envelope:
        self._seq += 1
        return Envelope(thread_id=self._thread_id, turn_id=self._turn_id, seq=self._seq,
                        event=event)


def _outcome(pending: PendingCheckpoint, turn_id: str) -> CompletedTurn:
    """This turn's completion record from the checkpoint it is about to commit."""
    outcome = pending.values.get("outcome")
    if not isinstance(outcome, CompletedTurn) or outcome.turn_id != turn_id:
        raise RuntimeError(f"the graph ended turn {turn_id} without its completion record")
    return outcome


def replayed(record: RequestRecord) -> Iterator[Envelope]:
    """The finished request's events again, ending in ``turn_completed.replayed``."""
    seq = 0
    for data in record.events:
        seq += 1
        yield Envelope(record.thread_id, record.turn_id, seq, event_from_dict(data))
    done = CompletedTurn.from_result(record.result, turn_id=record.turn_id)
    yield Envelope(record.thread_id, record.turn_id, seq + 1,
                   done.to_event(record.checkpoint_id, replayed=True))


def _reused(order: TurnOrder, record: RequestRecord) -> str:
    rid = order.input.request_id
    if order.kind == "approval":
        return (f"request_id {rid!r} was already used for a different message or approval; "
                "a retry must repeat the same approval — use a new request_id for a new one")
    where = "a new thread" if record.new_thread else f"thread {record.thread_id}"
    return (f"request_id {rid!r} was already used for a different message on {where}; a "
            "retry must repeat the same text and thread_id — use a new request_id for a new "
            "message")


def _describe(span: Span, envelope: Envelope) -> None:
    event = cast(TurnCompleted, envelope.event)
    span.set_attributes({
        "diwaniya.turn_id": envelope.turn_id, "diwaniya.phase": event.phase,
        "diwaniya.dialect": event.dialect, "diwaniya.replayed": event.replayed})


async def _step(run: GraphRun, at: float, timeout_s: float) -> Any:
    """The run's next event (``DONE`` at its end), within the turn's deadline.

    The deadline covers only the graph's own work, never a ``yield``: a
    timeout around the whole loop cancels whatever its task awaits when it
    fires — the consumer's await while it holds an event (grpc's write, held
    by flow control), where nothing turns the cancellation into this error.
    A consumer back after the deadline gets DeadlineExceeded at once.
    """
    timer = asyncio.timeout_at(at)
    try:
        async with timer:
            return await run.next()
    except TimeoutError:
        if not timer.expired():
            raise
        raise DeadlineExceeded(
            f"the turn did not finish within its {timeout_s:.0f}s deadline; nothing was "
            "added to the thread — send the message again (same request_id is safe)"
        ) from None


def _loop_deadline(monotonic_deadline: float) -> float:
    loop = asyncio.get_running_loop()
    return loop.time() + (monotonic_deadline - time.monotonic())
