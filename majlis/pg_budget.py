"""One PostgreSQL connection budget per replica, split over every pool.

A replica (one pod) opens three pools per server process:

* ``locks`` — psycopg, one connection per *running* turn, holding its thread's
  session advisory lock for the whole turn (majlis.threads_pg);
* ``queries`` — psycopg, checkpoints and thread rows, held per statement;
* ``memory`` — asyncpg, the memory store's searches and writes.

``DIWANIYA_PG_MAX_CONNECTIONS`` (B) caps their sum. ``serve --workers W``
gives each process ``B // W``; within a process of budget ``b`` the pools get
(unless set explicitly, in which case they are taken as is and the rest split
the remainder in the same proportions)::

    locks   = max(1, floor(0.6 b))     # concurrent turns per process
    memory  = max(1, floor(0.15 b))
    queries = b - locks - memory       # at least 1

>>> split_budget(30)
PoolBudget(queries=8, locks=18, memory=4)
>>> split_budget(30, workers=2)
PoolBudget(queries=4, locks=9, memory=2)
>>> split_budget(3)
PoolBudget(queries=1, locks=1, memory=1)

The pooling check and the migrations run on the pools' own connections
(majlis.persistence_pg.open_postgres), so they never add to the peak.
docs/connections.md gives the formula for N replicas against PostgreSQL's
``max_connections``.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from diwaniya.errors import ConfigurationError

LOCK_SHARE = 0.6
MEMORY_SHARE = 0.15
MIN_PER_PROCESS = 3  # one connection for each pool


@dataclass(frozen=True, slots=True)
class PoolBudget:
    """Maximum sizes of one process's pools; ``total`` never exceeds its budget."""

    queries: int
    locks: int
    memory: int

    @property
    def total(self) -> int:
        return self.queries + self.locks + self.memory


def split_budget(total: int, *, workers: int = 1, queries: int | None = None,
                 locks: int | None = None, memory: int | None = None) -> PoolBudget:
    """Each pool's maximum for one of ``workers`` processes sharing ``total`` connections.

    Raises :class:`ConfigurationError` (exit 2 at startup) when the budget is
    too small for the processes, or explicit pool sizes exceed it.
    """
    b = total // max(1, workers)
    if b < MIN_PER_PROCESS:
        raise ConfigurationError(
            f"DIWANIYA_PG_MAX_CONNECTIONS={total} gives each of {workers} server processes "
            f"{b} connections; each needs at least {MIN_PER_PROCESS}: raise it to "
            f"{MIN_PER_PROCESS * workers} or run fewer workers")
    fixed = sum(v for v in (queries, locks, memory) if v is not None)
    if fixed > b:
        raise ConfigurationError(
            f"DIWANIYA_PG_POOL_MAX + DIWANIYA_PG_LOCK_POOL_MAX + DIWANIYA_PG_MEMORY_POOL_MAX "
            f"= {fixed} exceeds this process's share of DIWANIYA_PG_MAX_CONNECTIONS "
            f"({total} // {workers} workers = {b}): unset them or raise the budget")
    left = b - fixed
    open_pools = [name for name, v in (("queries", queries), ("locks", locks),
                                       ("memory", memory)) if v is None]
    if len(open_pools) > left:
        raise ConfigurationError(
            f"DIWANIYA_PG_MAX_CONNECTIONS={total} leaves {left} connections for the "
            f"{len(open_pools)} pools without an explicit size: raise it")
    shares = {"locks": LOCK_SHARE, "memory": MEMORY_SHARE,
              "queries": 1 - LOCK_SHARE - MEMORY_SHARE}
    weight = sum(shares[n] for n in open_pools) or 1.0
    sizes: dict[str, int] = {}
    for name in open_pools:
        if name != "queries":
            sizes[name] = max(1, int(left * shares[name] / weight))
    if "queries" in open_pools:
        sizes["queries"] = left - sum(sizes.values())
    elif open_pools:  # the remainder goes to the last derived pool
        sizes[open_pools[-1]] += left - sum(sizes.values())
    return PoolBudget(
        queries=queries if queries is not None else sizes["queries"],
        locks=locks if locks is not None else sizes["locks"],
        memory=memory if memory is not None else sizes["memory"])


def application_name(configured: str | None = None, *, hostname: str | None = None) -> str:
    """``pg_stat_activity.application_name`` of a replica: one name per pod.

    >>> application_name(hostname="diwaniya-7c9f-abcde")
    'diwaniya@diwaniya-7c9f-abcde'
    >>> application_name("shop-eu")
    'shop-eu'
    """
    name = configured or f"diwaniya@{hostname or socket.gethostname()}"
    return name[:63]  # PostgreSQL truncates at NAMEDATALEN - 1 anyway
