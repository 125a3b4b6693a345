"""The conversation engine: runs turns on durable threads, and the thread APIs.

This is the domain's front door. The gRPC servicer (and the CLI, and tests)
call it with domain requests and receive :class:`~majlis.events.Envelope`s;
it never sees gRPC. It validates a message or an approval into a
:class:`~majlis.turns.TurnOrder`; :mod:`majlis.turns` runs both the same way
(lock, replay, deadline, span, fenced commit — docs/fencing.md). Thread
ownership is in the thread registry, so any replica can continue any thread.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast
from zoneinfo import ZoneInfo

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

import nlp
from diwaniya.errors import InvalidRequest, NotFound
from majlis import culture
from majlis.approvals import ApprovalRequest
from majlis.config import settings_values
from majlis.events import Envelope
from majlis.fence import PendingCheckpoint, deferring
from majlis.persistence import Persistence
from majlis.records import ApprovalInput, ThreadMessage, ThreadSummary, TurnInput
from majlis.requests import (
    Limits,
    TurnRequest,
    check_request_id,
    check_thread_id,
    check_user_id,
    validate,
)
from majlis.state import ThreadState, history, summary_of
from majlis.tenants import Tenants
from majlis.threads import ThreadRow, TurnCommit
from majlis.turns import TurnOrder, TurnRunner, content_hash, owned
from memory import MemoryStore

__all__ = ["ConversationEngine", "EngineConfig", "ThreadMessage", "ThreadView", "content_hash"]

TITLE_CHARS = 60


@dataclass(frozen=True, slots=True)
class EngineConfig:
    limits: Limits = field(default_factory=Limits)
    policy: Literal["reject", "enqueue"] = "reject"
    enqueue_wait_s: float = 30.0
    turn_timeout_s: float = 120.0
    default_timezone: str = "Asia/Kuwait"
    # How long a request_id replays its turn (and binds its content).
    replay_window_s: float = 86400.0
    # ``queued`` (starting) on arrival behind turns still starting (majlis.queueing.Starting).
    queued_while_starting: bool = True

    @classmethod
    def from_settings(cls, settings: object) -> EngineConfig:
        """The engine's part of the operator's settings (see ``majlis.config``)."""
        return cls(limits=Limits.from_settings(settings), **settings_values(
            cls, settings, {"policy": "concurrency_policy",
                            "turn_timeout_s": "default_turn_timeout_s",
                            "replay_window_s": "request_replay_window_s"}, skip={"limits"}))


@dataclass(frozen=True, slots=True)
class ThreadView:
    row: ThreadRow
    messages: list[ThreadMessage]
    phase: str
    dialect: str
    usage: dict[str, float]
    # Empty unless handed off to a person: reason, summary_ar, at (ISO), notified.
    handoff: dict[str, Any] = field(default_factory=dict)
    # The turns folded out of ``messages`` (majlis.compaction); None: none yet.
    summary: ThreadSummary | None = None


class ConversationEngine:
    def __init__(
        self,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        persistence: Persistence,
        store: MemoryStore,
        tenants: Tenants,
        clock: culture.Clock,
        config: EngineConfig = EngineConfig(),
    ) -> None:
        self._graph = graph
        self._db = persistence
        self._store = store
        self._tenants = tenants
        self._clock = clock
        self._config = config
        self._turns = TurnRunner(graph, persistence, policy=config.policy,
                                 enqueue_wait_s=config.enqueue_wait_s,
                                 replay_window_s=config.replay_window_s,
                                 queued_while_starting=config.queued_while_starting)

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
        # The phase step reads this moment from the input rather than computing it again.
        moment = self._tenants(req.tenant).calendar.moment(at, tz=ZoneInfo(tz),
                                                           country=req.country or None)
        order = TurnOrder(
            input=TurnInput(turn_id="", tenant=req.tenant, user_id=req.user_id,
                            thread_id=req.thread_id, at=at, tz=tz, text=req.text,
                            request_id=req.request_id, country=req.country,
                            register=req.register, moment=moment),
            content=req.text, timeout_s=self._timeout(timeout_s), title=req.text[:TITLE_CHARS],
            raw=self._raw_for_model(request))
        async with contextlib.aclosing(self._turns.run(order)) as events:
            async for envelope in events:
                yield envelope

    async def run_approval(
        self, request: ApprovalRequest, *, timeout_s: float | None = None
    ) -> AsyncGenerator[Envelope, None]:
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
        order = TurnOrder(
            input=TurnInput(turn_id="", tenant=request.tenant, user_id=request.user_id,
                            thread_id=request.thread_id, at=self._clock.now(),
                            tz=self._config.default_timezone, request_id=request.request_id,
                            approval=ApprovalInput(request.call_id, request.approved)),
            content=f"approval\0{request.call_id}\0{int(request.approved)}",
            timeout_s=self._timeout(timeout_s), kind="approval")
        async with contextlib.aclosing(self._turns.run(order)) as events:
            async for envelope in events:
                yield envelope

    def _timeout(self, asked_s: float | None) -> float:
        return min(asked_s or self._config.turn_timeout_s, self._config.turn_timeout_s)

    def _raw_for_model(self, request: TurnRequest) -> str | None:
        """The message as typed (cleaned, NOT masked) for a tenant whose model may see
        personal data; None otherwise. Never put in the state (see majlis.pii_context)."""
        if self._tenants(request.tenant).pii_to_model != "raw":
            return None
        return nlp.clean(request.text).strip()

    # ---------------------------------------------------------------- threads
    async def _owned(self, tenant: str, user_id: str, thread_id: str) -> ThreadRow:
        check_thread_id(thread_id)
        check_user_id(user_id)
        return await owned(self._db, tenant, user_id, thread_id)

    async def resume_turn(self, tenant: str, user_id: str, thread_id: str, turn_id: str,
                          after_seq: int) -> AsyncGenerator[Envelope, None]:
        """A turn's logged events after ``after_seq``, then its live tail (majlis.turn_log).

        NotFound for a turn this user's thread does not have, or whose log expired.
        """
        log = self._db.turn_log
        missing = NotFound(f"turn {turn_id!r} of thread {thread_id!r} is not running and not "
                           "in the recent-turn log (unknown, another user's, or expired after "
                           "DIWANIYA_TURN_EVENTS_TTL_S): read the thread with GetThread")
        if not turn_id:
            raise InvalidRequest("turn_id is required (from the turn's events)", field="turn_id")
        with self._db.errors():
            await self._owned(tenant, user_id, thread_id)
        if log is None:
            raise missing
        try:
            with self._db.errors():
                async for envelope in log.follow(tenant, user_id, thread_id, turn_id, after_seq):
                    yield envelope
        except LookupError:
            raise missing from None

    async def get_thread(self, tenant: str, user_id: str, thread_id: str) -> ThreadView:
        with self._db.errors():
            row = await self._owned(tenant, user_id, thread_id)
            snapshot = await self._graph.aget_state({"configurable": {"thread_id": thread_id}})
        values = snapshot.values or {}
        messages = history(cast(ThreadState, values))
        handoff = values.get("handoff") or {}
        return ThreadView(row=row, messages=messages, phase=values.get("phase", ""),
                          dialect=values.get("dialect", ""), usage=values.get("usage") or {},
                          handoff=handoff if handoff.get("active") else {},
                          summary=summary_of(cast(ThreadState, values)))

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
                await self._turns.commit_change(lease, pending, TurnCommit(
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
