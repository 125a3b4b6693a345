"""The fenced commit of a turn in the PostgreSQL thread store (majlis.threads_pg).

:func:`commit_turn` writes the turn's registry update, request record, turn-log
rows and checkpoint only if the thread's row still carries the (epoch, owner)
this turn's lock produced (docs/fencing.md). Three paths, one outcome:

- on the turn's own lock connection (the usual case): one statement that also
  releases the advisory lock (COMMIT_UNLOCK), so the lock's exit sends no unlock;
- on a query-pool connection, one statement (majlis.pg_commit), inside a
  transaction with the retention trim when checkpoints are kept;
- on a query-pool connection, the fenced UPDATE then LangGraph's own saver, for
  checkpoint writes majlis.pg_commit cannot render.

A commit that matches no row has written nothing; :func:`raise_fenced` then
tells a deleted thread (NotFound) from a lost lock (LeaseLost).
"""

from __future__ import annotations

import uuid
from typing import Any, NoReturn, cast

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg import AsyncConnection, AsyncRawCursor
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from diwaniya.errors import LeaseLost, NotFound
from majlis import pg_commit
from majlis.pg_pool import session_alive
from majlis.retention import PostgresCheckpoints
from majlis.threads import CheckpointWrites, Lease, TurnCommit
from majlis.threads_pg_sql import (
    COMMIT_HEAD,
    COMMIT_UNLOCK,
    FINISH_REQUEST,
    LOCK_CLASS,
    LOG,
    LOG_ROW,
)


class Hold:
    """A running turn's lock connection, for its commit (:func:`commit_turn`)."""

    __slots__ = ("conn", "unlocked")

    def __init__(self, conn: AsyncConnection[Any]) -> None:
        self.conn = conn
        # The commit released the advisory lock: the lock's exit sends no unlock.
        self.unlocked = False


class _Fenced(Exception):
    """Raised inside commit_turn's transaction to roll it back: the fence did not match."""


def owner_uuid(token: object) -> uuid.UUID | None:
    """The lease's owner uuid (None matches no row: a lease without a thread row)."""
    try:
        return uuid.UUID(str(token)) if token is not None else None
    except ValueError:
        return None


async def commit_turn(
    pool: AsyncConnectionPool, hold: Hold | None, lease: Lease, writes: CheckpointWrites,
    commit: TurnCommit, *, keep: int, pruner: PostgresCheckpoints,
) -> None:
    """One statement (majlis.pg_commit): fence, registry, checkpoint and request record.

    The registry UPDATE carries the fence in its WHERE (``lease_epoch`` =
    this turn's token): it row-locks the thread like ``SELECT … FOR
    UPDATE`` did, so a successor's bump waits for this commit, and under
    READ COMMITTED it re-checks the epoch of a row a successor bumped
    meanwhile. When it matches no row, nothing has been written (every
    insert is gated on it) and a SELECT tells "deleted" from "lost the lock".

    Run on the turn's lock connection (``hold``) while its session lives, the
    same statement releases the advisory lock (COMMIT_UNLOCK) once the fenced
    UPDATE holds the thread row: every lock statement bumps that row first,
    so a successor that gets the advisory lock before this commit is
    visible waits for it there, as for any commit in flight. ``keep`` is the
    retention's checkpoints kept per thread (0: no trim).
    """
    params: list[object] = [
        commit.at, int(commit.counts_turn), commit.checkpoint_id, commit.title,
        lease.thread_id, lease.epoch if lease.epoch is not None else -1,
        owner_uuid(lease.token)]
    gated: list[tuple[str, list[object]]] = []
    if commit.request is not None:
        key = commit.request
        gated.append((FINISH_REQUEST, [
            commit.turn_id, Jsonb(commit.events), Jsonb(commit.result),
            commit.checkpoint_id, key.tenant, key.user_id, key.request_id]))
    if commit.log_rows:
        gated.append((LOG.format(rows=",".join([LOG_ROW] * len(commit.log_rows))),
                      [v for row in commit.log_rows for v in row]))
    if hold is not None and not keep and pg_commit.supported(writes.ops) \
            and session_alive(hold.conn):
        # The usual case: on the turn's own lock connection, so the same
        # statement also releases the lock (COMMIT_UNLOCK): one round trip
        # for the commit and the unlock, and no query-pool checkout.
        sql, values = pg_commit.fenced_commit_sql(
            COMMIT_HEAD, params, ops=writes.ops, serde=writes.serde, gated=gated,
            select=COMMIT_UNLOCK, select_params=(LOCK_CLASS, lease.thread_id))
        raw = AsyncRawCursor(hold.conn)
        await raw.execute(pg_commit.numbered(sql), values)
        if await raw.fetchone() is not None:
            hold.unlocked = True
            return
        await raise_fenced(pool, lease)
    async with pool.connection() as conn:
        try:
            if pg_commit.supported(writes.ops):
                # Fence, registry, request and checkpoint rows in one atomic
                # statement, one round trip (majlis.pg_commit), on a query-pool
                # connection: with retention (below), or when the turn's lock
                # session is gone; its lock's exit then unlocks as ever.
                sql, values = pg_commit.fenced_commit_sql(
                    COMMIT_HEAD, params, ops=writes.ops, serde=writes.serde, gated=gated)
                # $n on a raw cursor: psycopg does not re-parse it (pg_commit.numbered).
                raw, sql = AsyncRawCursor(conn), pg_commit.numbered(sql)
                if not keep:
                    await raw.execute(sql, values)
                    if await raw.fetchone() is not None:
                        return
                    raise _Fenced
                # With retention the trim shares the commit's transaction, so
                # it runs inside the fence: only the lock holder trims its thread.
                async with conn.transaction():
                    await raw.execute(sql, values)
                    if await raw.fetchone() is None:
                        raise _Fenced
                    await pruner.prune(conn, lease.thread_id, keep=keep,
                                       head=commit.checkpoint_id)
                return
            async with conn.transaction():
                sql, values = pg_commit.fenced_commit_sql(
                    COMMIT_HEAD, params, ops=(), serde=writes.serde, gated=gated)
                cur = await conn.execute(sql, values)
                if await cur.fetchone() is None:
                    raise _Fenced
                await writes.apply(AsyncPostgresSaver(
                    cast(AsyncConnection[DictRow], conn), serde=writes.serde))
                if keep:
                    await pruner.prune(conn, lease.thread_id, keep=keep,
                                       head=commit.checkpoint_id)
            return
        except _Fenced:
            pass
    await raise_fenced(pool, lease)


async def raise_fenced(pool: AsyncConnectionPool, lease: Lease) -> NoReturn:
    """The commit matched no row: NotFound (deleted) or LeaseLost (taken over, lost)."""
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT lease_epoch FROM diwaniya_threads WHERE thread_id = %s",
            (lease.thread_id,))
        row = await cur.fetchone()
    if row is None and not lease.created:
        raise NotFound(f"thread {lease.thread_id} was deleted while this turn ran; "
                       "nothing was saved")
    if row is None:
        # A thread this turn's lock statement created, whose row is gone: that
        # statement commits asynchronously, and the database restarted before
        # it reached the disk. The client resends its first message.
        raise LeaseLost(
            f"the database lost new thread {lease.thread_id} in a restart before this "
            "turn could be saved; nothing of it was saved — send the message again")
    raise LeaseLost(
        f"this turn lost its hold on thread {lease.thread_id} (the database dropped "
        "its lock and another turn took the thread over, or lost it in a restart); "
        "nothing of it was saved — send the message again (the same request_id is safe)")
