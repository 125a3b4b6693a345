"""The PostgreSQL store's statistics path: tenant locks and term/stat deltas.

Every write of ``memory_records`` (put, replace, delete, re-key) runs, in one
transaction: lock its tenants, subtract the statistics of the rows it is
about to change, change them, add theirs back.  ``memory_terms`` and
``memory_stats`` then stay exactly those of the rows (memory.pg_schema).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

from memory.pg_schema import STATS_DELTA, TERM_DELTA

__all__ = ["apply_delta", "lock_tenants"]


async def lock_tenants(conn: asyncpg.Connection, tenants: Sequence[str]) -> None:
    # Sorted, so two writers touching the same tenants lock in the same order.
    for tenant in sorted(set(tenants)):
        await conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended('diwaniya.memory:' || $1, 0))", tenant
        )


async def apply_delta(conn: asyncpg.Connection, sign: int, where: str, *args: Any) -> None:
    touched = await conn.fetch(TERM_DELTA.format(where=where), sign, *args)
    await conn.execute(STATS_DELTA.format(where=where), sign, *args)
    if sign < 0:
        gone = [(row[0], row[1]) for row in touched if row[2] <= 0]
        if gone:
            await conn.execute(
                "DELETE FROM memory_terms WHERE (tenant, lexeme) IN"
                " (SELECT * FROM unnest($1::text[], $2::text[]))",
                [g[0] for g in gone], [g[1] for g in gone],
            )
