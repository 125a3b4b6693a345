"""The thread registry: who owns a thread, its title and counts, and the per-thread turn lock.

Checkpoints (the conversation state) live in LangGraph's checkpointer; this
small table answers what the checkpointer cannot do cheaply: ownership checks,
listing a user's threads newest first with keyset paging, and mutual exclusion
of turns on one thread *across replicas*.

Two implementations share the :class:`ThreadStore` protocol:

* PostgreSQL: a session-level advisory lock keyed by the thread id, held on a
  dedicated connection for the whole turn. It is released by PostgreSQL itself
  if the replica dies, so a crash never leaves a thread stuck.
* SQLite (embedded): a lease row with an expiry that the holder renews while
  the turn runs, so two processes on one file exclude each other too, and a
  crashed holder's lease lapses after ``lease_ttl``.

A lock alone cannot stop a turn that *lost* it without noticing (PostgreSQL
restarted and dropped the session) from writing afterwards. So ``lock`` yields
a :class:`Lease` carrying a fencing token, and a turn's writes go through
:meth:`ThreadStore.commit_turn`, one transaction that checks the token first
(docs/fencing.md). The same transaction records the ``request_id`` so that
retries are a lookup (:meth:`ThreadStore.claim_request`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from diwaniya.errors import ResourceExhausted, ThreadBusy

Policy = Literal["reject", "enqueue"]
# Called by a lock that has to wait: (reason, position), e.g. ("thread_busy", 2) —
# the engine turns it into an early ``queued`` event so a waiting client hears something.
OnWait = Callable[[str, int], None]

# A lock that has not got its connection (``lock_pool``) or its thread
# (``thread_busy``) this long after asking says ``queued`` (docs/api.md), whatever
# the pool's size: a pool that is still opening connections makes a turn wait as
# surely as a full one. Long enough that a free connection or lock (a few ms)
# never says it, short enough to be "at once" to a client. Not a setting: it
# changes no outcome, only how soon a wait is told.
QUEUED_AFTER_S = 0.05


@dataclass(frozen=True, slots=True)
class ThreadRow:
    thread_id: str
    tenant: str
    user_id: str
    title: str
    created_at: datetime
    updated_at: datetime
    turn_count: int


@dataclass(frozen=True, slots=True)
class Lease:
    """Proof of holding a thread's turn lock: an owner id unique to this acquisition
    (PostgreSQL: the ``lease_owner`` uuid set with the ``lease_epoch`` bump, both
    checked by the commit; SQLite: the lease row's owner). ``None``: no thread row."""

    thread_id: str
    token: str | None
    # PostgreSQL: the lease_epoch this acquisition bumped the thread to.
    epoch: int | None = None
    # The lock's own statement also wrote the turn's first log row (``lock(log_row=…)``).
    logged_first: bool = False
    # The lock's statement created the thread's row (``lock(create=…)``).
    created: bool = False
    # The thread had no committed checkpoint when the lock was taken (False where
    # the store does not say): a turn on a thread made for it then reads none.
    headless: bool = False
    # ``lock(request=…)``: that request was already done when the lock was taken
    # (another replica finished it meanwhile) — replay it, run nothing.
    request_done: bool = False


@dataclass(frozen=True, slots=True)
class RequestKey:
    """A ``request_id`` is idempotent per (tenant, user), across all their threads."""

    tenant: str
    user_id: str
    request_id: str


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """What a ``request_id`` was used for, and (once ``done``) how its turn ended.

    ``new_thread``: the request had no thread_id and created ``thread_id``.
    ``events``: the turn's events as ``majlis.events.event_to_dict`` dicts;
    ``result``: reply, phase, dialect, dialect_confidence, script.
    """

    key: RequestKey
    thread_id: str
    content_hash: str
    new_thread: bool
    done: bool = False
    turn_id: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)
    checkpoint_id: str = ""
    # Recorded by the claim that returned it (not found there from an earlier attempt).
    claimed: bool = False


@dataclass(frozen=True, slots=True)
class TurnCommit:
    """Everything a finished turn writes besides its checkpoint, committed with it."""

    at: datetime
    title: str
    checkpoint_id: str
    request: RequestKey | None = None
    turn_id: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)
    # False for a thread-state change that is not a turn (ReleaseHandoff): it is
    # fenced and moves the head like a turn, but is not counted as one.
    counts_turn: bool = True
    # Rows of the resumable-turn log (majlis.turn_log) ending in turn_completed:
    # written in the same transaction, so the log says "completed" only for a kept turn.
    log_rows: Sequence[tuple[Any, ...]] = ()


class CheckpointWrites(Protocol):
    """A turn's deferred saver calls (:class:`majlis.fence.PendingCheckpoint`)."""

    @property
    def serde(self) -> Any: ...
    # The recorded calls, in order: ("put", aput's args) or ("writes", aput_writes' args).
    @property
    def ops(self) -> Sequence[tuple[str, tuple[Any, ...]]]: ...
    async def apply(self, saver: Any) -> None: ...


class ThreadStore(Protocol):
    """Ownership, listing and locking of threads. See module docstring."""

    async def migrate(self) -> None: ...
    async def create(self, row: ThreadRow) -> None: ...
    async def get(self, tenant: str, thread_id: str) -> ThreadRow | None: ...
    async def record_turn(self, thread_id: str, *, at: datetime, title: str) -> None: ...
    async def list(
        self, tenant: str, user_id: str, *, limit: int, after: tuple[datetime, str] | None
    ) -> list[ThreadRow]: ...
    async def delete(self, tenant: str, thread_id: str) -> bool: ...
    def lock(
        self, thread_id: str, *, policy: Policy, wait_s: float, on_wait: OnWait | None = None,
        create: ThreadRow | None = None, owner: tuple[str, str] | None = None,
        request: tuple[RequestKey, float] | None = None,
        log_row: Sequence[object] | None = None,
    ) -> AbstractAsyncContextManager[Lease]:
        """Hold the thread's turn lock; ``create``: insert this new thread's row as the
        lock is taken (a new conversation's first turn, without a request_id);
        ``owner`` (tenant, user_id): NotFound unless that user owns the thread,
        checked in the lock's own statement where the store can (no lock is taken
        on another user's thread); ``request`` (key, replay window): look, once the
        lock is taken, whether that request is done already (``Lease.request_done``),
        in the lock's own statement where the store can; ``log_row``: the turn's
        first event-log row (majlis.turn_log), written by the lock's statement only
        if it took the lock (and the request is not done), where the store can —
        ``Lease.logged_first`` says whether it did."""
        ...
    async def commit_turn(
        self, lease: Lease, writes: CheckpointWrites, commit: TurnCommit
    ) -> None:
        """Atomically: check ``lease`` still holds the thread (else LeaseLost, nothing
        written), write the checkpoint, count the turn, finish the request record."""
        ...
    async def turn_saved(self, thread_id: str, checkpoint_id: str) -> bool:
        """Whether ``checkpoint_id`` is the thread's committed head (waits out a commit
        still in flight), to tell the truth after a commit whose outcome was lost."""
        ...
    async def claim_request(
        self, key: RequestKey, *, thread_id: str, content_hash: str, new_thread: ThreadRow | None,
        window_s: float, owner_check: bool = False,
    ) -> RequestRecord:
        """The live record for ``key``; if none, record a pending one for ``thread_id``
        (creating ``new_thread`` in the same transaction). Prunes expired records.
        ``owner_check``: NotFound, recording nothing, unless ``key``'s user owns
        ``thread_id`` (a live thread, as ``get`` sees it)."""
        ...
    async def get_request(self, key: RequestKey, *, window_s: float) -> RequestRecord | None: ...
    async def ping(self) -> None: ...
    async def drain(self, timeout_s: float = 5.0) -> None:
        """Wait (bounded) until this process's turns have given their locks back."""
        ...


class WaiterCounter:
    """Bounds how many turns may queue on one thread in this process (policy ``enqueue``).

    Under ``reject`` nothing queues — a busy thread answers ABORTED at once —
    so the counter does not apply and never answers RESOURCE_EXHAUSTED.
    """

    def __init__(self, max_waiters: int) -> None:
        self._max = max_waiters
        self._waiting: dict[str, int] = {}

    def position(self, thread_id: str) -> int:
        """Turns of this process waiting on ``thread_id`` (the running one not counted)."""
        return self._waiting.get(thread_id, 0)

    @asynccontextmanager
    async def waiting(self, thread_id: str, *, policy: Policy = "enqueue"
                      ) -> AsyncIterator[None]:
        if policy != "enqueue":
            yield
            return
        n = self._waiting.get(thread_id, 0)
        if n >= self._max:
            raise ResourceExhausted(
                f"thread {thread_id} already has {n} turns waiting; "
                "retry after the current ones finish", retry_after_s=1.0
            )
        self._waiting[thread_id] = n + 1
        try:
            yield
        finally:
            left = self._waiting[thread_id] - 1
            if left:
                self._waiting[thread_id] = left
            else:
                del self._waiting[thread_id]


def busy_error(thread_id: str, waited: float | None = None) -> ThreadBusy:
    if waited is None:
        return ThreadBusy(
            f"thread {thread_id} is busy with another turn; wait for its turn_completed "
            "event and send again (or use the enqueue concurrency policy)"
        )
    return ThreadBusy(
        f"thread {thread_id} stayed busy for {waited:.1f}s while this turn waited its turn; "
        "send again later"
    )


async def acquire_polling(
    try_acquire: Callable[[], Awaitable[bool]],
    thread_id: str,
    *,
    policy: Policy,
    wait_s: float,
    interval_s: float = 0.05,
    on_wait: OnWait | None = None,
    position: Callable[[], int] | None = None,
) -> None:
    """Call ``try_acquire`` until it returns True, bounded by ``wait_s`` under ``enqueue``.

    Polling (rather than a blocking lock call) keeps the wait cancellable by the
    client and bounded by the turn's deadline, and works the same for both stores.
    """
    start = time.monotonic()
    while True:
        if await try_acquire():
            return
        if policy == "reject":
            raise busy_error(thread_id)
        waited = time.monotonic() - start
        if waited >= wait_s:
            raise busy_error(thread_id, waited)
        if on_wait is not None:
            on_wait("thread_busy", position() if position else 0)
            on_wait = None  # once: the client needs to hear it is queued, not every poll
        await asyncio.sleep(min(interval_s, max(0.0, wait_s - waited)))
        interval_s = min(interval_s * 1.5, 0.5)



class WaitSignal:
    """Tells ``on_wait`` that a lock waits, at most once per reason (``queued`` is said once).

    Called directly when the wait is certain (a full pool, a failed lock try), and
    armed by :meth:`stage` around a step that may wait: the signal fires if the
    step has not finished ``after_s`` later, from the event loop while the step
    is still blocked, so the client hears it during the wait, not after it.
    """

    def __init__(self, on_wait: OnWait | None, *, after_s: float = QUEUED_AFTER_S) -> None:
        self._on_wait = on_wait
        self._after_s = after_s
        self._told: set[str] = set()

    def __call__(self, reason: str, position: int) -> None:
        if self._on_wait is None or reason in self._told:
            return
        self._told.add(reason)
        self._on_wait(reason, position)

    @contextmanager
    def stage(self, reason: str, position: Callable[[], int]) -> Iterator[None]:
        """Signal ``reason`` if the body is still running after ``after_s``."""
        if self._on_wait is None or reason in self._told:
            yield
            return
        timer = asyncio.get_running_loop().call_later(
            self._after_s, lambda: self(reason, position()))
        try:
            yield
        finally:
            timer.cancel()
