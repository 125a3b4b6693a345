"""The conversation engine: runs turns on durable threads, and the thread APIs.

This is the domain's front door. The gRPC servicer (and the CLI, and tests)
call it with domain requests and receive :class:`~majlis.events.Envelope`s;
it never sees gRPC. Correctness never depends on process-local state: thread
ownership is in the thread registry, turn exclusion is a database lock whose
fencing token every commit checks, and idempotency records are a table keyed
by (tenant, user, request_id) written in the same commit as the turn, so any
replica can continue any thread (docs/fencing.md).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import time
import uuid
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast
from zoneinfo import ZoneInfo

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

import nlp
from diwaniya.errors import (
    DeadlineExceeded,
    DiwaniyaError,
    InvalidRequest,
    NotFound,
    RequestIdReused,
    Unavailable,
)
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
from majlis.fence import PendingCheckpoint, deferring
from majlis.models import PhraseBook
from majlis.models.offline import stream_words
from majlis.nodes.respond import RegistryFactory
from majlis.persistence import Persistence
from majlis.pii_context import holding_raw
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
from majlis.threads import Lease, RequestKey, RequestRecord, ThreadRow, TurnCommit
from majlis.tools import ToolContext
from memory import MemoryStore

_tracer = trace.get_tracer("diwaniya.majlis")

TITLE_CHARS = 60
# After a commit whose outcome was lost, how often (and how patiently) to ask
# the database whether the turn was saved before answering UNAVAILABLE.
COMMIT_CHECKS = 3
COMMIT_CHECK_PAUSE_S = 0.5


@dataclass(frozen=True, slots=True)
class EngineConfig:
    limits: Limits = field(default_factory=Limits)
    policy: Literal["reject", "enqueue"] = "reject"
    enqueue_wait_s: float = 30.0
    turn_timeout_s: float = 120.0
    default_timezone: str = "Asia/Kuwait"
    # How long a request_id replays its turn (and binds its content).
    replay_window_s: float = 86400.0


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
    # Empty unless handed off to a person: reason, summary_ar, at (ISO), notified.
    handoff: dict[str, Any] = field(default_factory=dict)


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

        with self._db.errors():
            thread_id, replay, new_row = await self._claim(req, at)
        if replay is not None:
            # A finished request is immutable: replaying needs no lock.
            for envelope in _replayed(replay):
                yield envelope
            return
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
                req, thread_id, at, tz, deadline, timeout, config, wait,
                raw=self._raw_for_model(request), create=new_row,
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

    async def _claim(self, req: TurnRequest, at: datetime
                     ) -> tuple[str, RequestRecord | None, ThreadRow | None]:
        """The thread this request runs on, its record if it already finished, and
        the row of a new thread the lock must create (no request_id: the lock
        statement inserts it, one round trip for both).

        With a ``request_id`` the thread of a new conversation is created in
        the same statement that records the request, so a retry of a first
        message (empty thread_id) finds the same thread instead of making one.
        """
        new_row: ThreadRow | None = None
        thread_id = req.thread_id
        if thread_id:
            await self._owned(req.tenant, req.user_id, thread_id)
        else:
            thread_id = uuid.uuid4().hex
            new_row = ThreadRow(thread_id=thread_id, tenant=req.tenant, user_id=req.user_id,
                                title="", created_at=at, updated_at=at, turn_count=0)
        if not req.request_id:
            return thread_id, None, new_row
        key = RequestKey(req.tenant, req.user_id, req.request_id)
        record = await self._db.threads.claim_request(
            key, thread_id=thread_id, content_hash=content_hash(req.text),
            new_thread=new_row, window_s=self._config.replay_window_s)
        same_thread = record.thread_id == req.thread_id or (record.new_thread
                                                          and not req.thread_id)
        if record.content_hash != content_hash(req.text) or not same_thread:
            where = "a new thread" if record.new_thread else f"thread {record.thread_id}"
            raise RequestIdReused(
                f"request_id {req.request_id!r} was already used for a different message on "
                f"{where}; a retry must repeat the same text and thread_id — use a new "
                "request_id for a new message")
        return record.thread_id, record if record.done else None, None

    async def _locked_turn(
        self, req: TurnRequest, thread_id: str, at: datetime, tz: str, deadline: float,
        budget_s: float, config: RunnableConfig, wait: float, *, raw: str | None = None,
        create: ThreadRow | None = None,
    ) -> AsyncGenerator[Envelope, None]:
        key = RequestKey(req.tenant, req.user_id, req.request_id) if req.request_id else None
        lock = EnteringLock(lambda on_wait: self._db.threads.lock(
            thread_id, policy=self._config.policy, wait_s=wait, on_wait=on_wait,
            create=create))
        # Waiting for capacity is said at once (a ``queued`` event), never in silence.
        async for queued in lock.wait():
            yield Envelope(thread_id=thread_id, turn_id="", seq=0, event=queued)
        async with lock as lease:
            if key is not None:
                # Another replica may have finished this request while we waited.
                done = await self._db.threads.get_request(
                    key, window_s=self._config.replay_window_s)
                if done is not None and done.done:
                    for envelope in _replayed(done):
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
            # A thread its lock just created (no request_id whose earlier
            # attempt may have run on it) has no checkpoint to read.
            pending = PendingCheckpoint(thread_id, self._db.checkpointer.serde,
                                        fresh=create is not None)
            try:
                async with asyncio.timeout_at(_loop_deadline(deadline)):
                    with deferring(pending), holding_raw(raw):
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
            turn = pending.values["turn"]
            result = {"reply": turn["reply"], "phase": turn["phase"], "dialect": turn["dialect"],
                      "dialect_confidence": turn.get("dialect_confidence", 0.0),
                      "script": turn.get("script", ""),
                      "message_dialect": turn.get("message_dialect", ""),
                      "message_dialect_confidence": turn.get("message_dialect_confidence", 0.0),
                      "reply_register": turn.get("reply_register", "")}
            await self._commit(lease, pending, TurnCommit(
                at=at, title=req.text[:TITLE_CHARS], checkpoint_id=pending.checkpoint_id,
                request=key, turn_id=turn_id, events=list(turn.get("events", [])), result=result))
            yield numbered(TurnCompleted(
                text=result["reply"], phase=result["phase"], dialect=result["dialect"],
                dialect_confidence=result["dialect_confidence"], script=result["script"],
                checkpoint_id=pending.checkpoint_id,
                message_dialect=result["message_dialect"],
                message_dialect_confidence=result["message_dialect_confidence"],
                reply_register=result["reply_register"],
            ))

    def _raw_for_model(self, request: TurnRequest) -> str | None:
        """The message as typed (cleaned, NOT masked) for a tenant whose model may see
        personal data; None otherwise. Never put in the state (see majlis.pii_context)."""
        if self._tenants(request.tenant).pii_to_model != "raw":
            return None
        return nlp.clean(request.text).strip()

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
        key = (RequestKey(request.tenant, request.user_id, request.request_id)
               if request.request_id else None)
        window = self._config.replay_window_s
        if key is not None:
            what = f"approval\0{request.call_id}\0{int(request.approved)}"
            record = await self._db.threads.claim_request(
                key, thread_id=thread_id, content_hash=content_hash(what), new_thread=None,
                window_s=window)
            if record.content_hash != content_hash(what) or record.thread_id != thread_id:
                raise RequestIdReused(
                    f"request_id {request.request_id!r} was already used for a different "
                    "message or approval; a retry must repeat the same approval — use a new "
                    "request_id for a new one")
            if record.done:
                for envelope in _replayed(record):
                    yield envelope
                return
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        async with self._db.threads.lock(thread_id, policy=self._config.policy,
                                         wait_s=self._config.enqueue_wait_s) as lease:
            if key is not None:
                done = await self._db.threads.get_request(key, window_s=window)
                if done is not None and done.done:
                    for envelope in _replayed(done):
                        yield envelope
                    return
            values = (await self._graph.aget_state(config)).values or {}
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
                registry=self._tools(turn), ctx=ctx, phrases=self._phrases,
                region=_approval_voice(values))
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
            pending = PendingCheckpoint(thread_id, self._db.checkpointer.serde)
            with deferring(pending):
                await self._graph.aupdate_state(config, update, as_node="remember")
            confidence = values.get("dialect_confidence", 0.0)
            result = {"reply": reply, "phase": phase, "dialect": region,
                      "dialect_confidence": confidence, "script": ""}
            await self._commit(lease, pending, TurnCommit(
                at=at, title="", checkpoint_id=pending.checkpoint_id, request=key,
                turn_id=turn_id, events=[event_to_dict(e) for e in events], result=result))
            yield Envelope(thread_id, turn_id, len(events) + 1, TurnCompleted(
                text=reply, phase=phase, dialect=region, dialect_confidence=confidence,
                checkpoint_id=pending.checkpoint_id))

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
        handoff = values.get("handoff") or {}
        return ThreadView(row=row, messages=messages, phase=values.get("phase", ""),
                          dialect=values.get("dialect", ""), usage=values.get("usage") or {},
                          handoff=handoff if handoff.get("active") else {})

    async def release_handoff(self, tenant: str, user_id: str, thread_id: str) -> ThreadView:
        """Give the thread back to the bot after a person took it over; idempotent.

        Takes the thread's turn lock (reject policy, like delete): a turn running
        now would otherwise commit its checkpoint over the release.
        """
        await self._owned(tenant, user_id, thread_id)
        config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
        async with self._db.threads.lock(thread_id, policy="reject", wait_s=0) as lease:
            values = (await self._graph.aget_state(config)).values or {}
            if (values.get("handoff") or {}).get("active"):
                at = self._clock.now()
                # Written as the last node, like every thread field (see majlis.state),
                # and committed fenced like a turn: a release that lost the thread
                # to another turn is not written (docs/fencing.md).
                pending = PendingCheckpoint(thread_id, self._db.checkpointer.serde)
                with deferring(pending):
                    await self._graph.aupdate_state(config, {"handoff": {
                        "active": False, "released_at": at.isoformat()}}, as_node="remember")
                await self._commit(lease, pending, TurnCommit(
                    at=at, title="", checkpoint_id=pending.checkpoint_id, counts_turn=False))
        return await self.get_thread(tenant, user_id, thread_id)

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


def content_hash(text: str) -> str:
    """What a retry must repeat: the SHA-256 of the cleaned message text.

    >>> content_hash("وين طلبي؟") == content_hash("وين طلبي؟")
    True
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _replayed(record: RequestRecord) -> Iterator[Envelope]:
    """The finished request's events again, ending in ``turn_completed.replayed``."""
    seq = 0
    for data in record.events:
        seq += 1
        yield Envelope(record.thread_id, record.turn_id, seq, event_from_dict(data))
    r = record.result
    yield Envelope(record.thread_id, record.turn_id, seq + 1, TurnCompleted(
        text=r["reply"], phase=r["phase"], dialect=r["dialect"],
        dialect_confidence=r.get("dialect_confidence", 0.0), script=r.get("script", ""),
        checkpoint_id=record.checkpoint_id, replayed=True,
        message_dialect=r.get("message_dialect", ""),
        message_dialect_confidence=r.get("message_dialect_confidence", 0.0),
        reply_register=r.get("reply_register", ""),
    ))


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


def _approval_voice(values: dict[str, Any]) -> str:
    """The phrase voice of an approval turn: the thread's dialect only when it is
    confident enough to mirror (as in a normal turn), else neutral."""
    region = str(values.get("dialect") or "msa")
    _, voice = culture.choose_register(requested="", policy="mirror", region=region,
                                       confidence=float(values.get("dialect_confidence") or 0.0))
    return voice
