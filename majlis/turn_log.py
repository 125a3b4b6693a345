"""A bounded, expiring log of each turn's events, shared across replicas (issue #14 item 3).

Every event a turn yields is also written here, so a client whose stream
broke mid-turn can ask ANY replica (``ResumeTurn``) for the events after its
last ``seq`` and then the live tail. The table lives in the same database as
the threads (PostgreSQL ``diwaniya_turn_events``, or the SQLite file of the
embedded default); nothing of it is process-local.

Bounds: at most ``max_events`` rows per turn (later events are not logged,
except the closing one, so a resumer always learns the turn ended); rows older
than ``ttl_s`` are pruned opportunistically when a turn starts (at most once a
``ttl_s / 10`` per process) and are never served.

Write cost: events are buffered and written with one multi-row INSERT per
flush; a flush happens on the first event (on PostgreSQL a message's first
event is written by its thread-lock statement instead, ``TurnWriter.first_row``)
and otherwise when ``flush_s``
passed since the previous flush — a streamed reply's words cost a round trip
per ``flush_s``, not per word. ``flush_s`` defaults to the resumers' polling
interval ``poll_s`` (0.1 s): rows flushed more often than a resumer reads are
seen no sooner; under load (bench/load.py, offline responder) nearly every
event came more than 50 ms after the previous flush: 1.6 mid-turn flushes per
turn at 0.05 s, 0.6 at 0.1 s. The closing ``turn_completed`` and whatever is
still buffered are written by the turn's fenced commit itself
(``TurnCommit.log_rows``): no round trip of their own, and "completed" is in
the log only for a turn that was kept.

Rows: ``(tenant, thread_id, turn_id, seq)`` → the event as JSON
(``{"event": {...}, "extra": {...}}``), with ``user_id`` so
another user's resume is NotFound exactly like an unknown turn.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import aiosqlite

from majlis.events import Envelope, TurnCompleted, TurnError, event_from_dict, event_to_dict

if TYPE_CHECKING:  # psycopg is imported only on the PostgreSQL path (majlis.persistence_pg)
    from psycopg_pool import AsyncConnectionPool

PG_DDL = """
CREATE TABLE IF NOT EXISTS diwaniya_turn_events (
    tenant     text NOT NULL,
    thread_id  text NOT NULL,
    turn_id    text NOT NULL,
    seq        integer NOT NULL,
    user_id    text NOT NULL,
    at         double precision NOT NULL,
    body       text NOT NULL,
    PRIMARY KEY (tenant, thread_id, turn_id, seq)
);
CREATE INDEX IF NOT EXISTS diwaniya_turn_events_at ON diwaniya_turn_events (at);
"""

SQLITE_DDL = PG_DDL.replace("double precision", "REAL").replace("integer", "INTEGER")

_COLUMNS = "(tenant, thread_id, turn_id, seq, user_id, at, body)"
Row = tuple[str, str, str, int, str, float, str]


# Typed: parameters in a VALUES list under SELECT would otherwise all be text.
_ROW = "(%s::text,%s::text,%s::text,%s::integer,%s::text,%s::float8,%s::text)"


def insert_sql(n: int) -> str:
    """The PostgreSQL INSERT of ``n`` rows (seven parameters each), idempotent per seq.

    It commits asynchronously (``synchronous_commit`` off for its own
    transaction only, set_config's third argument, evaluated once before the
    first row): the mid-turn rows serve resumers while the turn runs, and the
    turn's fenced commit, synchronous, flushes the WAL up to itself and so these
    rows too before ``turn_completed`` is sent. On the loaded 2-core machine a
    synchronous flush was a WAL fsync the next event waited for (``add`` awaits
    it), 0.6 per turn. What a database crash can lose is the last ~0.2 s
    (``wal_writer_delay``) of running turns' mid-turn rows: such a turn's lock
    session died with the crash; if it still commits after the restart (no
    successor took the thread), a resumer misses those events' rows but gets
    the rest and ``turn_completed``, which the commit writes durably.

    >>> "set_config('synchronous_commit', 'off', true)" in insert_sql(2)
    True
    """
    values = ",".join([_ROW] * n)
    return (f"INSERT INTO diwaniya_turn_events {_COLUMNS} SELECT * FROM (VALUES {values}) AS v"
            " WHERE (SELECT set_config('synchronous_commit', 'off', true)) = 'off'"
            " ON CONFLICT DO NOTHING")


def is_final(envelope: Envelope) -> bool:
    """turn_completed or error: nothing follows it in the turn."""
    return isinstance(envelope.event, TurnCompleted | TurnError)


def encode(envelope: Envelope) -> str:
    return json.dumps({"event": event_to_dict(envelope.event), "extra": envelope.extra},
                      ensure_ascii=False)


def decode(thread_id: str, turn_id: str, seq: int, body: str) -> Envelope:
    data = json.loads(body)
    return Envelope(thread_id, turn_id, seq, event_from_dict(data["event"]),
                    extra=data.get("extra") or {})


class TurnEventStore(Protocol):
    """The table's three statements; one implementation per database."""

    async def insert(self, rows: Sequence[Row]) -> None: ...

    async def after(self, tenant: str, user_id: str, thread_id: str, turn_id: str,
                    after_seq: int, since: float) -> list[tuple[int, str]] | None:
        """``(seq, body)`` after ``after_seq``; None when the turn has no live row for the user."""
        ...

    async def prune(self, before: float) -> None: ...


class PostgresTurnEvents:
    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self._pool = pool

    async def insert(self, rows: Sequence[Row]) -> None:
        # One statement with a VALUES row per event: psycopg's executemany runs
        # in pipeline mode, which cost several times the CPU of the insert itself.
        if not rows:
            return
        async with self._pool.connection() as conn:
            await conn.execute(insert_sql(len(rows)), [v for row in rows for v in row])

    async def after(self, tenant: str, user_id: str, thread_id: str, turn_id: str,
                    after_seq: int, since: float) -> list[tuple[int, str]] | None:
        # seq 1 (turn_started) is always logged first: its presence says the
        # turn exists for this user, in the same round trip as the events.
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT seq, body FROM diwaniya_turn_events WHERE tenant=%s AND thread_id=%s "
                "AND turn_id=%s AND user_id=%s AND at >= %s AND (seq > %s OR seq = 1) "
                "ORDER BY seq", (tenant, thread_id, turn_id, user_id, since, after_seq))
            rows = await cur.fetchall()
        return _known(rows, after_seq)

    async def prune(self, before: float) -> None:
        async with self._pool.connection() as conn:
            await conn.execute("DELETE FROM diwaniya_turn_events WHERE at < %s", (before,))


class SqliteTurnEvents:
    """The embedded default's log, on one aiosqlite connection shared by every turn.

    Python's sqlite3 opens a transaction before the first INSERT/DELETE and
    every turn's ``commit()`` ends whatever is open: without the lock, turn A's
    commit saved turn B's half-done batch, and B's failure left its rows for
    the next commit (or the transaction, with the file's write lock, open).
    Each write is one transaction under ``_lock``, rolled back on failure; reads
    take it too, so a resumer never sees rows a rollback is about to remove.
    """

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn
        self._lock = asyncio.Lock()

    async def migrate(self) -> None:
        async with self._lock:
            await self._conn.executescript(SQLITE_DDL)
            await self._conn.commit()

    async def insert(self, rows: Sequence[Row]) -> None:
        # Shielded: a turn cancelled between the INSERT and its COMMIT would
        # leave the connection's write transaction open, and with it the
        # file's write lock ("database is locked" for every other writer).
        await asyncio.shield(self._write(
            f"INSERT OR IGNORE INTO diwaniya_turn_events {_COLUMNS} VALUES (?,?,?,?,?,?,?)", rows))

    async def _write(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        async with self._lock:
            try:
                await self._conn.executemany(sql, rows)
                await self._conn.commit()
            except BaseException:
                await asyncio.shield(self._conn.rollback())
                raise

    async def after(self, tenant: str, user_id: str, thread_id: str, turn_id: str,
                    after_seq: int, since: float) -> list[tuple[int, str]] | None:
        async with self._lock, self._conn.execute(
            "SELECT seq, body FROM diwaniya_turn_events WHERE tenant=? AND thread_id=? "
            "AND turn_id=? AND user_id=? AND at >= ? AND (seq > ? OR seq = 1) ORDER BY seq",
            (tenant, thread_id, turn_id, user_id, since, after_seq)) as cur:
            rows = list(await cur.fetchall())
        return _known(rows, after_seq)

    async def prune(self, before: float) -> None:
        await asyncio.shield(self._write(
            "DELETE FROM diwaniya_turn_events WHERE at < ?", [(before,)]))


def _known(rows: Sequence[Any], after_seq: int) -> list[tuple[int, str]] | None:
    pairs = [(int(r["seq"] if isinstance(r, dict) else r[0]),
              str(r["body"] if isinstance(r, dict) else r[1])) for r in rows]
    if not pairs or pairs[0][0] != 1:
        return None
    return [p for p in pairs if p[0] > after_seq]


class TurnLog:
    """Writers for running turns and readers for resumes, over one :class:`TurnEventStore`."""

    def __init__(self, store: TurnEventStore, *, ttl_s: float = 600.0, max_events: float = 2000,
                 flush_s: float = 0.1, poll_s: float = 0.1) -> None:
        self._store = store
        self.ttl_s = ttl_s
        self.max_events = max_events
        self.flush_s = flush_s
        self.poll_s = poll_s
        self._pruned_at = 0.0

    def writer(self, tenant: str, user_id: str) -> TurnWriter:
        return TurnWriter(self, tenant, user_id)

    async def write(self, rows: Sequence[Row]) -> None:
        await self._store.insert(rows)

    async def maybe_prune(self) -> None:
        now = time.time()
        if now - self._pruned_at >= self.ttl_s / 10:
            self._pruned_at = now
            await self._store.prune(now - self.ttl_s)

    async def read(self, tenant: str, user_id: str, thread_id: str, turn_id: str,
                   after_seq: int) -> list[Envelope] | None:
        """The logged events after ``after_seq``; None for an unknown, expired or foreign turn."""
        found = await self._store.after(tenant, user_id, thread_id, turn_id, after_seq,
                                        time.time() - self.ttl_s)
        if found is None:
            return None
        return [decode(thread_id, turn_id, seq, body) for seq, body in found]

    async def follow(self, tenant: str, user_id: str, thread_id: str, turn_id: str,
                     after_seq: int) -> Any:
        """Events after ``after_seq``, then the live tail until the turn's last event.

        Polls every ``poll_s``; the caller's deadline bounds the wait. Raises
        LookupError when the turn is unknown for this user (NotFound upstream).
        """
        seq = after_seq
        while True:
            batch = await self.read(tenant, user_id, thread_id, turn_id, seq)
            if batch is None:
                raise LookupError(turn_id)
            for envelope in batch:
                seq = envelope.seq
                yield envelope
                if is_final(envelope):
                    return
            if not batch and seq > 0:
                # Nothing new: was ``seq`` itself the turn's last event?
                # (A resume from the final seq must end, not wait out its deadline.)
                at = await self.read(tenant, user_id, thread_id, turn_id, seq - 1)
                if at and at[0].seq == seq and is_final(at[0]):
                    return
            await asyncio.sleep(self.poll_s)


class TurnWriter:
    """Buffers one turn's envelopes and writes them in few round trips."""

    def __init__(self, log: TurnLog, tenant: str, user_id: str) -> None:
        self._log = log
        self._tenant = tenant
        self._user = user_id
        self._buffer: list[Row] = []
        self._flushed_at = 0.0
        self._count = 0
        self._last: Envelope | None = None
        # Events up to this seq were written by the turn's commit (closing_rows).
        self._committed_seq = 0
        # written() left the turn's prune check to the next event (add).
        self._prune_due = False

    def closing_rows(self, final: Envelope) -> list[Row]:
        """The buffered rows plus ``final`` (turn_completed), for the turn's commit to
        write in its own transaction; :meth:`committed` once that commit succeeded."""
        return [*self._buffer, self._row(final)]

    def committed(self, final: Envelope) -> None:
        """The commit wrote :meth:`closing_rows`: nothing of them is written again."""
        self._buffer = []
        self._count += 1
        self._last = final
        self._committed_seq = final.seq

    def first_row(self, started: Envelope) -> Row:
        """The row of ``started`` (seq 1) for the thread lock's statement to write
        (``ThreadStore.lock(log_row=…)``); :meth:`written` once it did."""
        return self._row(started)

    def written(self, started: Envelope) -> None:
        """Another statement (the lock's) wrote ``started`` just now: it is not
        written again, and the next flush is timed from it, as after any flush.
        Called before ``started`` is sent, so it awaits nothing: the log's prune
        (a DELETE, due once per ``ttl_s / 10``) waits for the turn's next event."""
        self._count += 1
        self._last = started
        self._committed_seq = started.seq
        self._flushed_at = time.monotonic()
        self._prune_due = True

    def _row(self, envelope: Envelope) -> Row:
        return (self._tenant, envelope.thread_id, envelope.turn_id, envelope.seq, self._user,
                time.time(), encode(envelope))

    async def add(self, envelope: Envelope, *, hold: bool = False) -> None:
        """Buffer the event; write the buffer on the first, the last, or after ``flush_s``
        (``hold``: only buffer — the caller writes next, e.g. :meth:`abort`)."""
        if not envelope.turn_id:
            return  # ``queued`` (seq 0): before the turn exists, nothing to resume
        if envelope.seq <= self._committed_seq:
            return  # written by the commit already
        final = is_final(envelope)
        self._last = envelope
        if self._count >= self._log.max_events and not final:
            return
        self._count += 1
        self._buffer.append(self._row(envelope))
        first = envelope.seq == 1
        if first or self._prune_due:
            self._prune_due = False
            await self._log.maybe_prune()
        if not hold and (first or final
                         or time.monotonic() - self._flushed_at >= self._log.flush_s):
            await self.flush()

    async def flush(self) -> None:
        if self._buffer:
            rows, self._buffer = self._buffer, []
            self._flushed_at = time.monotonic()
            await self._log.write(rows)

    async def abort(self, exc: BaseException) -> None:
        """The turn ended without turn_completed: log an ``error`` so resumers stop waiting."""
        last = self._last
        if last is None or is_final(last):
            await self.flush()
            return
        code = getattr(exc, "grpc_code", None) or type(exc).__name__
        await self.add(Envelope(last.thread_id, last.turn_id, last.seq + 1, TurnError(
            code=str(code), message=f"the turn ended without completing ({type(exc).__name__}); "
            "nothing of it was saved — send the message again (the same request_id is safe)",
            retryable=True)))
