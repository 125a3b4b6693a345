"""``diwaniya gc``: one idempotent sweep of everything retention lets go.

In order: idle threads past their tenant's TTL (erased like DeleteThread:
memories, checkpoints, request records, turn events, registry row),
checkpoints beyond ``DIWANIYA_CHECKPOINTS_KEPT``, request records past the
replay window, turn events past their TTL, and expired rate-limit counters.

Safe beside serving replicas: a thread is touched only while gc holds its
turn lock (taken with the reject policy, never waited for), so a thread whose
turn is in flight is skipped and counted in ``busy``; its expiry is
re-checked under the lock, since a turn may have committed after the thread
was listed. Everything is bounded: threads are listed ``batch`` at a time
(keyset paging), rows are deleted ``batch`` per statement. A sweep that is
interrupted is simply run again.

>>> report = await Collector(store, threads, memory, counters, policy,
...                          Windows(86400, 600), progress=print).run()   # doctest: +SKIP
threads expired: 12 (busy, skipped: 1)
>>> report.as_dict()["threads_expired"]                                   # doctest: +SKIP
12
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from functools import partial
from typing import Protocol

from diwaniya.errors import ThreadBusy
from majlis.limit_storage import Counters
from majlis.retention import RetentionPolicy
from majlis.threads import ThreadStore
from memory import MemoryStore


class RetentionStore(Protocol):
    """The database side of a sweep; one implementation per store (majlis.gc_pg, gc_sqlite)."""

    async def missing_tables(self) -> list[str]: ...
    async def threads_over(self, keep: int, *, after: str, limit: int) -> list[str]:
        """Thread ids after ``after`` with more than ``keep`` checkpoints, by id."""
        ...
    async def expired(self, policy: RetentionPolicy, *, after: str, limit: int
                      ) -> list[tuple[str, str]]:
        """``(tenant, thread_id)`` of expired threads after ``after``, by id."""
        ...
    async def still_expired(self, tenant: str, thread_id: str,
                            policy: RetentionPolicy) -> bool: ...
    async def prune_thread(self, thread_id: str, *, keep: int, dry_run: bool) -> int:
        """Checkpoints beyond ``keep`` deleted (or, dry, counted); the caller holds the lock."""
        ...
    async def erase(self, tenant: str, thread_id: str) -> None: ...
    async def prune_requests(self, window_s: float, *, limit: int, dry_run: bool) -> int: ...
    async def prune_turn_events(self, ttl_s: float, *, limit: int, dry_run: bool) -> int: ...


@dataclass(frozen=True, slots=True)
class Windows:
    """How long request records (the replay window) and turn events live, in seconds."""

    request_replay_s: float
    turn_events_s: float


@dataclass
class Report:
    """What one sweep deleted (or, dry, would delete)."""

    dry_run: bool = False
    threads_expired: int = 0
    memories_erased: int = 0
    checkpoints_pruned: int = 0
    threads_pruned: int = 0
    requests_pruned: int = 0
    turn_events_pruned: int = 0
    counters_pruned: int = 0
    busy: int = 0  # threads skipped (each once): a turn held them

    def as_dict(self) -> dict[str, int | bool]:
        return asdict(self)


class Collector:
    """One sweep over ``store``; ``memory`` erases expired threads' memories,
    ``counters`` (None: no rate-limit table) are pruned last."""

    def __init__(self, store: RetentionStore, threads: ThreadStore, memory: MemoryStore | None,
                 counters: Counters | None, policy: RetentionPolicy, windows: Windows, *,
                 batch: int = 500, progress: Callable[[str], None] = lambda _: None) -> None:
        self._store = store
        self._threads = threads
        self._memory = memory
        self._counters = counters
        self._policy = policy
        self._windows = windows
        self._batch = max(1, batch)
        self._say = progress

    async def run(self, *, dry_run: bool = False) -> Report:
        report = Report(dry_run=dry_run)
        self._busy: set[str] = set()
        verb = "would delete" if dry_run else "deleted"
        if self._policy.expires:
            await self._expire(report, dry_run)
            self._say(f"idle threads: {verb} {report.threads_expired} "
                      f"({report.memories_erased} memories; busy, skipped: {report.busy})")
        if self._policy.checkpoints_kept > 0:
            await self._prune_checkpoints(report, dry_run)
            self._say(f"checkpoints: {verb} {report.checkpoints_pruned} beyond the latest "
                      f"{self._policy.checkpoints_kept} in {report.threads_pruned} threads")
        report.requests_pruned = await self._drain(
            lambda: self._store.prune_requests(self._windows.request_replay_s,
                                               limit=self._batch, dry_run=dry_run), dry_run)
        self._say(f"request records: {verb} {report.requests_pruned}")
        report.turn_events_pruned = await self._drain(
            lambda: self._store.prune_turn_events(self._windows.turn_events_s,
                                                  limit=self._batch, dry_run=dry_run), dry_run)
        self._say(f"turn events: {verb} {report.turn_events_pruned}")
        if self._counters is not None:
            report.counters_pruned = await (self._counters.expired() if dry_run
                                            else self._counters.prune())
            self._say(f"rate-limit counters: {verb} {report.counters_pruned}")
        return report

    async def _expire(self, report: Report, dry_run: bool) -> None:
        after = ""
        while batch := await self._store.expired(self._policy, after=after, limit=self._batch):
            after = batch[-1][1]
            for tenant, thread_id in batch:
                if dry_run:
                    report.threads_expired += 1
                    continue
                await self._locked(report, thread_id,
                                   partial(self._erase, report, tenant, thread_id))
            self._say(f"idle threads: {report.threads_expired} so far")

    async def _erase(self, report: Report, tenant: str, thread_id: str) -> None:
        # Re-checked under the lock: a turn may have committed since the listing.
        if not await self._store.still_expired(tenant, thread_id, self._policy):
            return
        if self._memory is not None:
            report.memories_erased += await self._memory.erase_thread(tenant, thread_id)
        await self._store.erase(tenant, thread_id)
        report.threads_expired += 1

    async def _prune_checkpoints(self, report: Report, dry_run: bool) -> None:
        keep = self._policy.checkpoints_kept
        after = ""
        while batch := await self._store.threads_over(keep, after=after, limit=self._batch):
            after = batch[-1]
            for thread_id in batch:
                async def prune(i: str = thread_id) -> None:
                    n = await self._store.prune_thread(i, keep=keep, dry_run=dry_run)
                    report.checkpoints_pruned += n
                    report.threads_pruned += int(n > 0)
                if dry_run:
                    await prune()  # counts only: no lock (it would write a lease)
                else:
                    await self._locked(report, thread_id, prune)
            self._say(f"checkpoints: {report.checkpoints_pruned} so far "
                      f"({report.threads_pruned} threads)")

    async def _locked(self, report: Report, thread_id: str,
                      work: Callable[[], Awaitable[None]]) -> None:
        """``work()`` under the thread's turn lock; skipped (and counted busy) when a turn
        holds it: gc never waits for a turn, and never writes under one."""
        try:
            async with self._threads.lock(thread_id, policy="reject", wait_s=0):
                await work()
        except ThreadBusy:
            self._busy.add(thread_id)
            report.busy = len(self._busy)

    async def _drain(self, step: Callable[[], Awaitable[int]], dry_run: bool) -> int:
        """Repeat a bounded deletion until a batch comes back short (dry: one count)."""
        total = 0
        while True:
            n = await step()
            total += n
            if dry_run or n < self._batch:
                return total
