"""A psycopg pool that judges its own checkout timeouts, when they happen.

psycopg-pool raises the same ``PoolTimeout`` whether every connection is lent
to a running turn or the database has stopped answering. :class:`EvidencePool`
records the outcome of each of its connection attempts and each failed
checkout check (memory.pool_health.ConnectEvidence), and turns a timeout into
:class:`CheckoutTimeout` carrying the verdict read at that moment — before
any other task can run and hand a connection back. majlis.store_errors maps
it: capacity → RESOURCE_EXHAUSTED, outage → UNAVAILABLE.

>>> pool = EvidencePool("postgresql://…", name="diwaniya-locks", open=False)  # doctest: +SKIP
>>> await pool.getconn(timeout=2)    # doctest: +SKIP
CheckoutTimeout: couldn't get a connection after 2.00 sec   (.verdict.down: False — busy)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from memory.pool_health import ConnectEvidence, Verdict

Check = Callable[[AsyncConnection[Any]], Awaitable[None]]


class CheckoutTimeout(PoolTimeout):
    """A checkout that timed out, with its pool's verdict taken when it did."""

    def __init__(self, message: str, *, verdict: Verdict, pool_name: str, max_size: int) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.pool_name = pool_name
        self.max_size = max_size


class EvidencePool(AsyncConnectionPool[Any]):
    """An ``AsyncConnectionPool`` whose timeouts say whether it is busy or its database down.

    Its connections are of a class made for this pool (psycopg's public
    ``connection_class``) whose ``connect`` reports to :attr:`evidence`; the
    ``check`` given, if any, reports its failures (a pooled connection that no
    longer answers). Pass neither ``connection_class`` nor ``reset`` hooks that
    replace them.
    """

    def __init__(self, conninfo: str = "", *, check: Check | None = None, **kwargs: Any) -> None:
        evidence = self.evidence = ConnectEvidence()

        class _Connection(AsyncConnection[Any]):
            @classmethod
            async def connect(cls, *args: Any, **kw: Any) -> Any:
                return await evidence.attempt(super().connect(*args, **kw))

        async def checked(conn: AsyncConnection[Any]) -> None:
            try:
                await check(conn)  # type: ignore[misc]  # only installed when check is set
            except Exception as exc:
                evidence.failed(exc)
                raise

        super().__init__(conninfo, connection_class=_Connection,
                         check=checked if check is not None else None, **kwargs)

    async def getconn(self, timeout: float | None = None) -> Any:  # noqa: ASYNC109 (psycopg's signature)
        try:
            return await super().getconn(timeout)
        except PoolTimeout as exc:
            if isinstance(exc, CheckoutTimeout):
                raise
            # Synchronous from the raise to here: nothing else ran in between.
            raise CheckoutTimeout(str(exc), verdict=self.evidence.verdict(),
                                  pool_name=self.name, max_size=self.max_size) from exc


def session_alive(conn: AsyncConnection[Any]) -> bool:
    """Whether the connection's session is still there, without a round trip.

    Reads whatever the server already sent (non-blocking, well under a
    microsecond): a backend that was terminated (a database restart) has closed
    the socket, and libpq reports the connection bad. A turn's commit asks it of
    its lock connection (majlis.threads_pg_commit.commit_turn): a dead one sends the
    commit through the query pool, where the fence decides — no successor may
    have taken the thread (tests/service/test_fencing.py).
    """
    if conn.closed or conn.broken:
        return False
    # Public API, not a peek at a private socket: ``Connection.pgconn`` and the
    # psycopg.pq module are psycopg's documented libpq layer ("access features
    # not wrapped by Psycopg"; psycopg.org/psycopg3/docs/api/pq.html), and
    # PQconsumeInput is libpq's own non-blocking read. Nothing higher in
    # psycopg reads pending input without sending a query.
    try:
        # Twice: one read may return just the FATAL message the dying backend
        # sent; the next one meets the closed socket.
        conn.pgconn.consume_input()
        conn.pgconn.consume_input()
    except psycopg.OperationalError:
        return False
    return conn.info.status == psycopg.pq.ConnStatus.OK
