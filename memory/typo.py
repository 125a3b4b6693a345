"""Typo tolerance: a second stage that corrects query keys the tenant never indexed.

Customers type fast: a hamza left out (اسأل → اسال), ة typed as ه, ى as ي,
ض for ظ, two letters swapped (الاسترجاع → الاستجراع).  The key function
already folds hamza, ة/ه and ى/ي, so those meet their keys; the rest give
keys no record holds, and the exact-key stage silently drops them.

The stage runs only when the exact-key stage is *weak* in the one way that
can be decided without guessing: some of the query's own keys (3+ letters)
are absent from the tenant's vocabulary (the keys its records hold).  A
query whose keys are all known is never touched, so a correctly spelled
query keeps exactly its results.  Each unknown key is replaced by the
vocabulary keys most similar to it by trigram similarity, pg_trgm's
definition (below), and the normal ranked search runs again with them,
weighted ``TYPO_WEIGHT``.  PostgreSQL finds the candidates with pg_trgm's
``%`` over ``memory_terms`` (GIN ``gin_trgm_ops``); SQLite with an FTS5
``trigram`` table over its own vocabulary table; both then choose among the
candidates here, so the choice is the same in both stores.

    >>> similarity("الاسترجاع", "الاستجراع") >= THRESHOLD
    True
    >>> best_corrections("الاستجراع", [("الاسترجاع", 3), ("الاستلام", 9), ("كتاب", 50)])
    ['الاسترجاع', 'الاستلام']
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "MAX_CORRECTIONS",
    "MIN_TERM_CHARS",
    "THRESHOLD",
    "TYPO_WEIGHT",
    "best_corrections",
    "candidate_trigrams",
    "corrections_for",
    "similarity",
    "trigrams",
    "unknown_terms",
]

# Trigram similarity a vocabulary key needs to count as a correction.  The
# PostgreSQL store sets pg_trgm's similarity_threshold to it for its ``%``.
THRESHOLD = 0.3
# Vocabulary keys kept per unknown key.  Measured on misspelled ARCD (bench/
# retrieval.py --misspell 16, SQLite, recall@1 / recall@5): threshold 0.3,
# 2 keys, weight 0.8: 0.6502 / 0.8961; threshold 0.25: 0.6523 / 0.8961; 1 key:
# 0.6487 / 0.8968; 3 keys: 0.6502 / 0.8975; weight 1.0: 0.6466 / 0.8975;
# without the stage 0.843 at recall@5.  Flat around the choice, so pg_trgm's
# own default threshold is kept.
MAX_CORRECTIONS = 2
# Shorter keys have too few trigrams for a similarity to mean anything (a
# 2-letter key shares a third of its trigrams with any key starting alike).
MIN_TERM_CHARS = 3
# A corrected key counts this much of a key the customer typed correctly:
# the correction is a guess.
TYPO_WEIGHT = 0.8
# Candidates read per unknown key before choosing (both stores).
CANDIDATES_PER_TERM = 40


def trigrams(term: str) -> frozenset[str]:
    """pg_trgm's trigrams of one word: padded with two spaces before, one after.

    >>> sorted(trigrams("باب"))
    ['  ب', ' با', 'اب ', 'باب']
    """
    padded = f"  {term} "
    return frozenset(padded[i : i + 3] for i in range(len(padded) - 2))


def similarity(a: str, b: str) -> float:
    """Shared trigrams over all distinct trigrams (pg_trgm ``similarity``)."""
    ta, tb = trigrams(a), trigrams(b)
    union = len(ta | tb)
    return len(ta & tb) / union if union else 0.0


def candidate_trigrams(term: str) -> list[str]:
    """The unpadded trigrams of ``term``: what an FTS5 ``trigram`` index can match.

    A key at or above THRESHOLD that shares none of them shares only padded
    trigrams, so it starts with the same two letters (``prefix_of``).

    >>> candidate_trigrams("كتاب")
    ['كتا', 'تاب']
    """
    return list(dict.fromkeys(term[i : i + 3] for i in range(len(term) - 2)))


def unknown_terms(own: Iterable[str], known: Iterable[str]) -> list[str]:
    """Own query keys worth correcting: 3+ characters, not all digits, not in ``known``.

    >>> unknown_terms(["الاستجراع", "خلال", "14"], {"خلال"})
    ['الاستجراع']
    """
    have = set(known)
    return [t for t in own
            if t not in have and len(t) >= MIN_TERM_CHARS and not t.isdigit()]


def best_corrections(term: str, candidates: Iterable[tuple[str, int]],
                     limit: int = MAX_CORRECTIONS) -> list[str]:
    """The ``limit`` vocabulary keys most similar to ``term`` (ties: commoner first).

    ``candidates`` are (key, document frequency) pairs; keys below THRESHOLD
    are dropped, so an unrelated candidate never becomes a correction.
    """
    scored = []
    for cand, df in candidates:
        if cand == term:
            continue
        sim = similarity(term, cand)
        if sim >= THRESHOLD - 1e-9:
            scored.append((-sim, -df, cand))
    scored.sort()
    return [cand for _, _, cand in scored[:limit]]


def corrections_for(unknown: Iterable[str], found: Iterable[tuple[str, str, int]],
                    have: set[str]) -> list[str]:
    """The corrections of every ``unknown`` key, in its order, from ``found`` (key, candidate,
    df) rows, leaving out keys in ``have``.

    >>> corrections_for(["الاستجراع"], [("الاستجراع", "الاسترجاع", 3)], set())
    ['الاسترجاع']
    """
    by_term: dict[str, list[tuple[str, int]]] = {}
    for term, lexeme, df in found:
        by_term.setdefault(term, []).append((lexeme, int(df)))
    fixes: dict[str, None] = {}
    for term in unknown:
        for fix in best_corrections(term, by_term.get(term, ())):
            if fix not in have:
                fixes.setdefault(fix, None)
    return list(fixes)
