"""The conversation engine: runs turns on durable threads, and the thread APIs.

This is the domain's front door. The gRPC servicer (and the CLI, and tests)
call it with domain requests and receive :class:`~majlis.events.Envelope`s;
it never sees gRPC. Correctness never depends on process-local state: thread
ownership is in the thread registry, turn exclusion is a database lock, and
idempotency records live in the checkpoint, so any replica can continue any
thread.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast
from zoneinfo import ZoneInfo

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from diwaniya.errors import DeadlineExceeded, InvalidRequest, NotFound
from majlis import culture
from majlis.approvals import ApprovalRequest, settle
from majlis.events import (
    Envelope,
    Event,
    TextDelta,
    TurnCompleted,
    TurnStarted,
    event_from_dict,
    event_to_dict,
)
from majlis.models import PhraseBook
from majlis.models.offline import stream_words
from majlis.nodes.respond import RegistryFactory
from majlis.persistence import Persistence
from majlis.queueing import EnteringLock
from majlis.requests import (
    Limits,
    TurnRequest,
    check_request_id,
    check_thread_id,
    check_user_id,
    validate,
)
from majlis.tenants import Tenants
from majlis.threads import ThreadRow
from majlis.tools import ToolContext
from memory import MemoryStore

_tracer = trace.get_tracer("diwaniya.majlis")

TITLE_CHARS = 60
# How far back a replay looks for the checkpoint that completed a turn.
REPLAY_SCAN = 400


@dataclass(frozen=True, slots=True)
class EngineConfig:
    limits: Limits = field(default_factory=Limits)
    policy: Literal["reject", "enqueue"] = "reject"
    enqueue_wait_s: float = 30.0
    turn_timeout_s: float = 120.0
    default_timezone: str = "Asia/Kuwait"


@dataclass(frozen=True, slots=True)
class ThreadMessage:
    role: str
    text: str
    turn_id: str
    phase: str
    dialect: str
    at: datetime


@dataclass(frozen=True, slots=True)
class ThreadView:
    row: ThreadRow
    messages: list[ThreadMessage]
    phase: str
    dialect: str
    usage: dict[str, float]


class ConversationEngine:
    def __init__(
        self,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        persistence: Persistence,
        store: MemoryStore,
        tenants: Tenants,
        clock: culture.Clock,
        config: EngineConfig = EngineConfig(),
        *,
        tools: RegistryFactory | None = None,
        phrases: PhraseBook | None = None,
    ) -> None:
        self._graph = graph
        self._db = persistence
        self._store = store
        self._tenants = tenants
        self._clock = clock
        self._config = config
        self._tools = tools
        self._phrases = phrases or PhraseBook.load()

    # ------------------------------------------------------------------ turns
    async def run_turn(
        self, request: TurnRequest, *, timeout_s: float | None = None
    ) -> AsyncGenerator[Envelope, None]:
        """Run one turn and stream its events; or replay it if ``request_id`` was seen.

        Raises before the first event: InvalidRequest, NotFound, ThreadBusy,
        ResourceExhausted. During the turn: DeadlineExceeded. Consume it with
        ``contextlib.aclosing`` so that an abandoned stream releases the lock.
        """
        req = validate(request, self._config.limits)
        at = req.client_time or self._clock.now()
        tz = req.timezone or self._config.default_timezone
        # Validates the date range up front: a client_time the calendar cannot
        # convert is the caller's error, reported before anything is written.
        self._tenants(req.tenant).calendar.moment(at, tz=ZoneInfo(tz),
                                                  country=req.country or None)
        timeout = min(timeout_s or self._config.turn_timeout_s, self._config.turn_timeout_s)
        deadline = time.monotonic() + timeout

        thread_id = req.thread_id
        with self._db.errors():
            if thread_id:
                await self._owned(req.tenant, req.user_id, thread_id)
            else:
                thread_id = uuid.uuid4().hex
                await self._db.threads.create(ThreadRow(
                    thread_id=thread_id, tenant=req.tenant, user_id=req.user_id, title="",
                    created_at=at, updated_at=at, turn_count=0,
                ))
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        wait = min(self._config.enqueue_wait_s, max(0.0, deadline - time.monotonic()))
        # Not made "current": the span lives across yields to the caller.
        span = _tracer.start_span("diwaniya.turn", attributes={
            "diwaniya.thread_id": thread_id, "diwaniya.tenant": req.tenant,
            "diwaniya.request_id": req.request_id, "diwaniya.country": req.country})
        try:
            # aclosing: an abandoned stream must release the thread lock now, not at GC.
            # errors(): a database outage mid-turn is UNAVAILABLE with a retry hint.
            async with self._db.errors(), contextlib.aclosing(self._locked_turn(
                req, thread_id, at, tz, deadline, timeout, config, wait
            )) as turn_events:
                async for envelope in turn_events:
                    if isinstance(envelope.event, TurnCompleted):
                        span.set_attributes({
                            "diwaniya.turn_id": envelope.turn_id,
                            "diwaniya.phase": envelope.event.phase,
                            "diwaniya.dialect": envelope.event.dialect,
                            "diwaniya.replayed": envelope.event.replayed})
                    yield envelope
        except BaseException as exc:
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
        finally:
            span.end()

    async def _locked_turn(
        self, req: TurnRequest, thread_id: str, at: datetime, tz: str, deadline: float,
        budget_s: float, config: RunnableConfig, wait: float,
    ) -> AsyncGenerator[Envelope, None]:
        lock = EnteringLock(lambda on_wait: self._db.threads.lock(
            thread_id, policy=self._config.policy, wait_s=wait, on_wait=on_wait))
        # Waiting for capacity is said at once (a ``queued`` event), never in silence.
        async for queued in lock.wait():
            yield Envelope(thread_id=thread_id, turn_id="", seq=0, event=queued)
        async with lock:
            if req.request_id:
                snapshot = await self._graph.aget_state(config)
                done = (snapshot.values.get("completed") or {}).get(req.request_id)
                if done is not None:
                    async for envelope in self._replay(thread_id, req.request_id, done, config):
                        yield envelope
                    return
            turn_id = uuid.uuid4().hex
            seq = 0

            def numbered(event: Event) -> Envelope:
                nonlocal seq
                seq += 1
                return Envelope(thread_id=thread_id, turn_id=turn_id, seq=seq, event=event)

            started = TurnStarted(user_text=req.text, request_id=req.request_id)
            yield numbered(started)
            turn_input: dict[str, Any] = {"turn": {
                "reset": True, "turn_id": turn_id, "request_id": req.request_id,
                "tenant": req.tenant, "user_id": req.user_id, "thread_id": thread_id,
                "text": req.text, "at": at.isoformat(), "tz": tz, "country": req.country,
                "register": req.register, "deadline": deadline,
                "events": [{"kind": "turn_started", "user_text": req.text,
                            "request_id": req.request_id}],
            }}
            try:
                async with asyncio.timeout_at(_loop_deadline(deadline)):
                    async for chunk in self._graph.astream(
                        turn_input, config, stream_mode="custom", durability="exit"
                    ):
                        # Nodes write only majlis.events dataclasses to the custom stream.
                        yield numbered(cast(Event, chunk))
            except TimeoutError:
                raise DeadlineExceeded(
                    f"the turn did not finish within its {budget_s:.0f}s deadline; nothing was "
                    "added to the thread — send the message again (same request_id is safe)"
                ) from None
            final = await self._graph.aget_state(config)
            values = final.values
            turn = values["turn"]
            await self._db.threads.record_turn(thread_id, at=at, title=req.text[:TITLE_CHARS])
            yield numbered(TurnCompleted(
                text=turn["reply"], phase=turn["phase"], dialect=turn["dialect"],
                dialect_confidence=turn.get("dialect_confidence", 0.0),
                script=turn.get("script", ""),
                checkpoint_id=final.config["configurable"]["checkpoint_id"],
            ))

    async def _replay(
        self, thread_id: str, request_id: str, done: dict[str, Any], config: RunnableConfig
    ) -> AsyncIterator[Envelope]:
        turn_id = done["turn_id"]
        seq = 0
        for data in done["events"]:
            seq += 1
            yield Envelope(thread_id, turn_id, seq, event_from_dict(data))
        checkpoint_id = ""
        # History is newest first: the completing checkpoint is the oldest one
        # that already holds this request id.
        async for snap in self._graph.aget_state_history(config, limit=REPLAY_SCAN):
            if request_id in (snap.values.get("completed") or {}):
                checkpoint_id = snap.config["configurable"]["checkpoint_id"]
            else:
                break
        yield Envelope(thread_id, turn_id, seq + 1, TurnCompleted(
            text=done["reply"], phase=done["phase"], dialect=done["dialect"],
            dialect_confidence=done.get("dialect_confidence", 0.0), script=done.get("script", ""),
            checkpoint_id=checkpoint_id, replayed=True,
        ))

    # -------------------------------------------------------------- approvals
    async def run_approval(self, request: ApprovalRequest) -> AsyncGenerator[Envelope, None]:
        """Run or decline a held tool call as a turn of its own; replays like any turn.

        Raises NotFound when the thread has no such held call (already settled,
        or never asked), before anything is written.
        """
        check_user_id(request.user_id)
        check_thread_id(request.thread_id)
        check_request_id(request.request_id)
        if not request.call_id or len(request.call_id) > 128:
            raise InvalidRequest("call_id is required: the approval_required.call_id",
                                 field="call_id")
        with self._db.errors():
            await self._owned(request.tenant, request.user_id, request.thread_id)
        thread_id = request.thread_id
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        async with self._db.threads.lock(thread_id, policy=self._config.policy,
                                         wait_s=self._config.enqueue_wait_s):
            values = (await self._graph.aget_state(config)).values or {}
            done = (values.get("completed") or {}).get(request.request_id)
            if request.request_id and done is not None:
                async for envelope in self._replay(thread_id, request.request_id, done, config):
                    yield envelope
                return
            held = (values.get("pending_approvals") or {}).get(request.call_id)
            if held is None or self._tools is None:
                raise NotFound(f"no tool call {request.call_id} is waiting for approval on "
                               f"thread {thread_id}; it was settled already or never held")
            turn_id = uuid.uuid4().hex
            at = self._clock.now()
            region = values.get("dialect") or "msa"
            turn = {"tenant": request.tenant, "user_id": request.user_id,
                    "thread_id": thread_id, "turn_id": turn_id, "text": "", "dialect": region,
                    "phase": values.get("phase", "")}
            ctx = ToolContext(tenant=request.tenant, user_id=request.user_id,
                              thread_id=thread_id, turn_id=turn_id,
                              deadline=time.monotonic() + self._config.turn_timeout_s)
            settled, reply = await settle(
                held, approved=request.approved, call_id=request.call_id,
                registry=self._tools(turn), ctx=ctx, phrases=self._phrases, region=region)
            events: list[Event] = [TurnStarted(request_id=request.request_id), *settled,
                                   *(TextDelta(text=w) for w in stream_words(reply))]
            for seq, event in enumerate(events, start=1):
                yield Envelope(thread_id, turn_id, seq, event)
            phase = values.get("phase", "")
            update: dict[str, Any] = {
                "messages": [{"role": "assistant", "text": reply, "turn_id": turn_id,
                              "phase": phase, "dialect": region, "at": at.isoformat()}],
                "pending_approvals": {request.call_id: None},
            }
            if request.request_id:
                update["completed"] = {request.request_id: {
                    "turn_id": turn_id, "events": [event_to_dict(e) for e in events],
                    "reply": reply, "phase": phase, "dialect": region,
                    "dialect_confidence": values.get("dialect_confidence", 0.0), "script": ""}}
            after = await self._graph.aupdate_state(config, update, as_node="remember")
            await self._db.threads.record_turn(thread_id, at=at, title="")
            yield Envelope(thread_id, turn_id, len(events) + 1, TurnCompleted(
                text=reply, phase=phase, dialect=region,
                dialect_confidence=values.get("dialect_confidence", 0.0),
                checkpoint_id=after["configurable"]["checkpoint_id"]))

    # ---------------------------------------------------------------- threads
    async def _owned(self, tenant: str, user_id: str, thread_id: str) -> ThreadRow:
        check_thread_id(thread_id)
        check_user_id(user_id)
        row = await self._db.threads.get(tenant, thread_id)
        # Another user's thread is reported exactly like a missing one, so
        # thread ids cannot be probed.
        if row is None or row.user_id != user_id:
            raise NotFound(f"thread {thread_id} not found for user {user_id}")
        return row

    async def get_thread(self, tenant: str, user_id: str, thread_id: str) -> ThreadView:
        with self._db.errors():
            row = await self._owned(tenant, user_id, thread_id)
            snapshot = await self._graph.aget_state({"configurable": {"thread_id": thread_id}})
        values = snapshot.values or {}
        messages = [
            ThreadMessage(role=m["role"], text=m["text"], turn_id=m["turn_id"], phase=m["phase"],
                          dialect=m["dialect"], at=datetime.fromisoformat(m["at"]))
            for m in values.get("messages", [])
        ]
        return ThreadView(row=row, messages=messages, phase=values.get("phase", ""),
                          dialect=values.get("dialect", ""), usage=values.get("usage") or {})

    async def list_threads(
        self, tenant: str, user_id: str, *, page_size: int = 20, page_token: str = ""
    ) -> tuple[list[ThreadRow], str]:
        check_user_id(user_id)
        if page_size == 0:
            page_size = 20
        if not 1 <= page_size <= 100:
            raise InvalidRequest("page_size must be between 1 and 100", field="page_size")
        after = _decode_token(page_token) if page_token else None
        with self._db.errors():
            rows = await self._db.threads.list(tenant, user_id, limit=page_size + 1, after=after)
        more = len(rows) > page_size
        rows = rows[:page_size]
        token = _encode_token(rows[-1]) if more else ""
        return rows, token

    async def delete_thread(self, tenant: str, user_id: str, thread_id: str) -> int:
        """Erase the thread's checkpoints, its memories and its registry row.

        Takes the thread's turn lock (reject policy): deleting under a running
        turn would let that turn write its checkpoint back afterwards.
        """
        with self._db.errors():
            await self._owned(tenant, user_id, thread_id)
            async with self._db.threads.lock(thread_id, policy="reject", wait_s=0):
                await self._db.checkpointer.adelete_thread(thread_id)
                erased = await self._store.erase_thread(tenant, thread_id)
                await self._db.threads.delete(tenant, thread_id)
        return erased


def _loop_deadline(monotonic_deadline: float) -> float:
    loop = asyncio.get_running_loop()
    return loop.time() + (monotonic_deadline - time.monotonic())


def _encode_token(row: ThreadRow) -> str:
    raw = f"{row.updated_at.isoformat()}|{row.thread_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_token(token: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        stamp, thread_id = raw.split("|", 1)
        return datetime.fromisoformat(stamp), check_thread_id(thread_id)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise InvalidRequest(
            "page_token is not one this service issued; pass next_page_token unchanged",
            field="page_token",
        ) from None
