"""Deferred checkpoint writes, so a turn's checkpoint commits only inside its fenced transaction.

The graph runs with ``durability="exit"``: LangGraph calls the saver's
``aput``/``aput_writes`` once, when the run ends. :class:`DeferredSaver` wraps
the real saver; while a :class:`PendingCheckpoint` is active for a thread (see
:func:`deferring`), those calls are *recorded* instead of written. The engine
then hands the record to the thread store, which replays it on its own
connection inside one transaction together with the fence check (the turn
still holds the thread), the registry update and the request record — all of
it becomes visible, or none of it (docs/fencing.md).

Reads (``aget_tuple``, ``alist``) go to the real saver: a turn reads the
state it starts from, never its own unsaved writes — except that a turn on a
thread created for it (``PendingCheckpoint.fresh``) reads nothing, since no
checkpoint can exist yet.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NoReturn

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

log = logging.getLogger("diwaniya.fence")


@dataclass
class PendingCheckpoint:
    """The saver calls of one turn, held until its fenced commit.

    ``ops`` keeps LangGraph's call order (writes then checkpoint, or the
    reverse) so that :meth:`apply` reproduces exactly what the saver would
    have written.
    """

    thread_id: str
    serde: SerializerProtocol
    ops: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    checkpoint: Checkpoint | None = None
    # The thread was created for this turn (a new id nobody else has seen, and
    # its lock is held), so it has no checkpoint yet: reading one is skipped.
    fresh: bool = False

    @property
    def checkpoint_id(self) -> str:
        return self.checkpoint["id"] if self.checkpoint else ""

    @property
    def values(self) -> dict[str, Any]:
        """The channel values of the checkpoint this turn will commit (``{}`` if none)."""
        return dict(self.checkpoint["channel_values"]) if self.checkpoint else {}

    async def apply(self, saver: BaseCheckpointSaver[Any]) -> None:
        """Write the recorded calls through ``saver`` (one bound to the commit's connection)."""
        for kind, args in self.ops:
            if kind == "put":
                await saver.aput(*args)
            else:
                await saver.aput_writes(*args)


_PENDING: ContextVar[PendingCheckpoint | None] = ContextVar("diwaniya_pending", default=None)


@contextlib.contextmanager
def deferring(pending: PendingCheckpoint) -> Iterator[PendingCheckpoint]:
    """Record this context's checkpoint writes for ``pending.thread_id`` instead of writing them.

    A ContextVar (not an attribute of the shared saver) so that concurrent
    turns in one process each defer only their own writes; LangGraph's
    background tasks copy the context, so they see it too.
    """
    token = _PENDING.set(pending)
    try:
        yield pending
    finally:
        # An async generator may be finalised in another context; the value
        # then dies with the context it was set in.
        with contextlib.suppress(ValueError):
            _PENDING.reset(token)


def _pending_for(config: RunnableConfig) -> PendingCheckpoint | None:
    pending = _PENDING.get()
    if pending is not None and config["configurable"].get("thread_id") == pending.thread_id:
        return pending
    return None


def _unfenced(what: str, config: RunnableConfig) -> NoReturn:
    """Refuse a graph write made outside a turn's :func:`deferring` context.

    Every checkpoint reaches the saver through a fenced commit
    (``PendingCheckpoint.apply`` on the commit's own connection), never through
    this saver. A write that arrives here without a pending checkpoint escaped
    its turn — e.g. a graph stream closed by the garbage collector in another
    context after its turn failed — and written through, it would become the
    thread's latest checkpoint, unfenced: a fork. So it is refused, loudly.
    """
    thread_id = config["configurable"].get("thread_id", "?")
    log.warning("refused an unfenced %s write for thread %s (outside a turn's commit)",
                what, thread_id)
    raise RuntimeError(f"unfenced {what} write for thread {thread_id} refused: graph "
                       "writes are committed only through a turn's fenced commit")


class DeferredSaver(BaseCheckpointSaver[Any]):
    """A saver that defers writes while a :class:`PendingCheckpoint` is active; else delegates."""

    def __init__(self, inner: BaseCheckpointSaver[Any]) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner

    @property
    def config_specs(self) -> list[Any]:
        return list(self.inner.config_specs)

    def get_next_version(self, current: Any, channel: None) -> Any:
        # Version formats differ between savers (PostgreSQL's are strings).
        return self.inner.get_next_version(current, channel)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        pending = _pending_for(config)
        if pending is not None and pending.fresh and pending.checkpoint is None:
            # A brand-new thread: its first checkpoint can only be the one this
            # turn will commit, so the query would always answer "none".
            return None
        return await self.inner.aget_tuple(config)

    async def alist(
        self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None, limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        async for item in self.inner.alist(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        pending = _pending_for(config)
        if pending is None:
            _unfenced("checkpoint", config)
        pending.ops.append(("put", (config, checkpoint, metadata, new_versions)))
        pending.checkpoint = checkpoint
        return {"configurable": {
            "thread_id": config["configurable"]["thread_id"],
            "checkpoint_ns": config["configurable"].get("checkpoint_ns", ""),
            "checkpoint_id": checkpoint["id"],
        }}

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
        task_path: str = "",
    ) -> None:
        pending = _pending_for(config)
        if pending is None:
            _unfenced("pending writes", config)
        pending.ops.append(("writes", (config, list(writes), task_id, task_path)))

    async def adelete_thread(self, thread_id: str) -> None:
        await self.inner.adelete_thread(thread_id)
