"""Turning search keys into terms that are safe in every query language.

Both stores receive keys from the same key function on the index and the
query path.  Before a key reaches FTS5 or a tsquery it is reduced to runs of
word characters (Unicode ``\\w``: letters, digits, underscore, any script),
so no quote, operator or parenthesis can ever reach a query parser, and the
same reduction is applied when indexing so both sides still agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from nlp.keys import KeyFunction

__all__ = [
    "MAX_K",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "KeyFunction",
    "indexable_terms",
    "query_terms",
    "search_terms",
    "whitespace_keys",
]

# Longest query we look at: a pasted 10,000-character message must not turn
# into a 2,000-term OR query.  The first distinct terms are the user's own
# opening words, usually the most specific ones.
MAX_QUERY_TERMS = 64
# Only the head of a pasted wall of text is analysed: 64 distinct terms come
# from far fewer characters, and the key function's cost grows with length.
MAX_QUERY_CHARS = 4_000
# Results per search; a caller asking for more gets this many.
MAX_K = 100
# Anything longer than this is not a word but a pasted blob (base64, URLs).
_MAX_TERM_CHARS = 64

# Runs of word characters.  \w in Python's re is Unicode-aware: it covers
# Arabic letters U+0621–U+064A, Arabic-Indic digits U+0660–U+0669, Latin.
# Arabic combining marks (harakat U+064B–U+0652) are NOT \w, so a key that
# still carried them would be split; the key function folds them away first.
_WORD_RUN = re.compile(r"\w+")


def _safe_pieces(keys: Iterable[str]) -> Iterable[str]:
    for key in keys:
        for piece in _WORD_RUN.findall(key):
            if len(piece) <= _MAX_TERM_CHARS:
                yield piece


def indexable_terms(keys: Iterable[str]) -> list[str]:
    """Keys as stored: word runs only, duplicates and order kept (for tf).

    >>> indexable_terms(["كتاب", "o'neil", "كتاب"])
    ['كتاب', 'o', 'neil', 'كتاب']
    """
    return list(_safe_pieces(keys))


def query_terms(keys: Iterable[str], limit: int = MAX_QUERY_TERMS) -> list[str]:
    """Distinct safe terms of a query, first occurrence order, at most ``limit``.

    >>> query_terms(['"سياسة"', "الاسترجاع*", "سياسة", "'; DROP"])
    ['سياسة', 'الاسترجاع', 'DROP']
    """
    seen: dict[str, None] = {}
    for piece in _safe_pieces(keys):
        seen.setdefault(piece, None)
        if len(seen) >= limit:
            break
    return list(seen)


def search_terms(query: str, keys: KeyFunction) -> list[str]:
    """The safe, bounded terms of a user's query, via the same key function as indexing.

    >>> search_terms("سياسة (الاسترجاع) | !", whitespace_keys)
    ['سياسة', 'الاسترجاع']
    """
    return query_terms(keys(query[:MAX_QUERY_CHARS]))


def whitespace_keys(text: str) -> list[str]:
    """A trivial key function (case-folded word runs) for tests and fallbacks.

    >>> whitespace_keys("My name is محمد")
    ['my', 'name', 'is', 'محمد']
    """
    return [w.casefold() for w in _WORD_RUN.findall(text)]
