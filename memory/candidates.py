"""Which rows a search scores: the rarest query terms first, within a budget.

Scoring every row that shares a word with the question is exact but grows
with the knowledge base; FTS5's own ``bm25()`` order would bound it, but its
statistics are the whole file's (memory.sqlite_stats).  So the rows to score
are chosen from the tenant's own document frequencies, as the PostgreSQL
store's SEARCH does in SQL (memory.pg_search_sql): the query's terms the
tenant holds, rarest first, are OR-ed while their summed document frequencies
stay within ``CANDIDATE_BUDGET``.  Commoner terms still score the chosen rows
but do not widen the set: a row holding none of the rare terms scores at most
the commoner terms' IDF sum (max-score pruning, simplified).  Every row
matching the OR is scored (their number is at most the budget), so the
choice is exact and depends on the tenant's rows only.

When even the rarest term is over the budget (a question of common words
only), it is AND-ed with the rarest term that is not a form of the same word
(a stem inside its surface form, as يرحم in يرحمك, would narrow nothing), at
most ``SCAN_CANDIDATES`` rows in index order; if that leaves fewer than k,
rows holding the rarest term alone are added, again at most SCAN_CANDIDATES.

    >>> plan({"الاسترجاع": 3, "المنتج": 40, "خلال": 900})
    Plan(main=['الاسترجاع', 'المنتج'], conjunctive=False, alone=None, take=250)
    >>> plan({"المنتج": 400, "خلال": 900, "منتج": 300})
    Plan(main=['منتج', 'خلال'], conjunctive=True, alone='منتج', take=100)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CANDIDATE_BUDGET", "SCAN_CANDIDATES", "Plan", "plan"]

# The PostgreSQL store's values (memory.postgres_store), so both stores score
# the same rows: at most 250 rows by the budget, 100 when the rarest term is
# over it (those are the first matches in index order, not the best, so more
# of them bought no quality there).
CANDIDATE_BUDGET = 250
SCAN_CANDIDATES = 100


@dataclass(frozen=True, slots=True)
class Plan:
    """The candidate query: ``main`` OR-ed (or AND-ed when ``conjunctive``), at most ``take``.

    ``alone`` is the rarest term by itself, searched only when the AND leaves
    fewer than k rows.
    """

    main: list[str]
    conjunctive: bool
    alone: str | None
    take: int


def plan(df: Mapping[str, int], *, budget: int = CANDIDATE_BUDGET,
         scan: int = SCAN_CANDIDATES) -> Plan | None:
    """The candidate query for terms with their document frequencies (absent terms left out).

    None when the tenant holds none of the terms: nothing can match.
    """
    ranked = sorted((n, term) for term, n in df.items() if n > 0)
    if not ranked:
        return None
    rarest_df, rarest = ranked[0]
    if rarest_df <= budget:
        chosen, spent = [], 0
        for n, term in ranked:
            spent += n
            if spent > budget:
                break
            chosen.append(term)
        return Plan(main=chosen, conjunctive=False, alone=None, take=budget)
    partner = next((term for _, term in ranked[1:]
                    if term not in rarest and rarest not in term), None)
    main = [rarest] if partner is None else [rarest, partner]
    return Plan(main=main, conjunctive=True, alone=rarest, take=scan)
