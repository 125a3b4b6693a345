"""Query expansion: extra search words, weighted below the customer's own.

A customer asks «بكام التوصيل؟»; the policy says «رسوم التوصيل … سعر».  An
*expander* (the service injects ``nlp.dialect_to_msa``, a curated dialect →
MSA lexicon) gives the MSA words a document would use; they pass through the
store's own key function, so index and query keys still come from one
function and nothing is re-indexed.  Expanded terms count ``BRIDGE_WEIGHT``
of an own term: a document that matches what the customer actually wrote
still outranks one that matches only the lexicon's guess.  So do the
customer's dialect function words (بكام، ابي، لازم: nlp.lexicon
``DIALECT_FUNCTION_WORDS``), whose meaning the bridge gives in MSA.

    >>> from memory.terms import whitespace_keys
    >>> expand = lambda text: ["سعر", "التوصيل"] if "بكام" in text else []
    >>> t = weighted_terms("بكام التوصيل", whitespace_keys, expand)
    >>> t.own, t.bridged
    (['التوصيل'], ['سعر', 'بكام'])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memory.terms import MAX_QUERY_CHARS, MAX_QUERY_TERMS, KeyFunction, query_terms, search_terms
from nlp.keys import split_function_words

__all__ = ["BRIDGE_WEIGHT", "OWN_REPEATS", "Expander", "WeightedTerms", "weighted_terms"]

Expander = Callable[[str], list[str]]

# Weight of an expanded term relative to an own term.  SQLite's FTS5 cannot
# weight a single query phrase, but bm25() sums over phrases, so own terms are
# listed OWN_REPEATS times and the score divided back: the weight is
# 1 / OWN_REPEATS.  Half: a document matching one of the customer's own
# words beats one matching a single bridge word of the same rarity.
OWN_REPEATS = 2
BRIDGE_WEIGHT = 1.0 / OWN_REPEATS
# Bridge terms per query, after the own terms: a long dialect message must
# not turn into a query dominated by the lexicon.
MAX_BRIDGE_TERMS = 24


@dataclass(frozen=True, slots=True)
class WeightedTerms:
    own: list[str]  # the query's own safe terms, as search_terms gives them
    bridged: list[str]  # expansion terms the query does not already hold

    @property
    def all(self) -> list[str]:
        return self.own + self.bridged


def _function_terms(query: str, own: list[str], keys: KeyFunction) -> list[str]:
    """Own terms that only the query's dialect function words give (nlp.keys).

    «بدي سكر الحساب»: «بدي» is how the customer asks, «سكر الحساب» what
    about; a term also given by a content word of the query stays own.
    """
    rest, found = split_function_words(query[:MAX_QUERY_CHARS])
    if not found:
        return []
    theirs = set(keys(" ".join(found)))
    content = set(keys(rest))
    return [t for t in own if t in theirs and t not in content]


def weighted_terms(query: str, keys: KeyFunction, expand: Expander | None) -> WeightedTerms:
    """The query's own terms and, separately, the expansion terms it lacks.

    Terms of dialect function words (ابي، بدي، لازم، عندي …) count as
    expansion terms, below the customer's content words (after the bridge's
    own, so its cap never drops a bridge word for one of them).
    """
    own = search_terms(query, keys)
    if not query.strip():
        return WeightedTerms(own, [])
    light = _function_terms(query, own, keys)
    if light:
        own = [t for t in own if t not in set(light)]
    extra = expand(query[:MAX_QUERY_CHARS]) if expand is not None else []
    have = set(own) | set(light)
    bridged = [t for t in query_terms(keys(" ".join(extra)), MAX_QUERY_TERMS)
               if t not in have] if extra else []
    return WeightedTerms(own, bridged[:MAX_BRIDGE_TERMS] + light)
