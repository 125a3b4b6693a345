"""Highlighted snippets cut from the ORIGINAL text.

A word is highlighted when one of its own search keys is a query term, so
``والكتاب`` lights up for a query about ``كتاب`` while the snippet still shows
``والكتاب`` exactly as written: keys decide, the original is displayed.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache

from memory.terms import KeyFunction, indexable_terms

__all__ = ["CLOSE", "OPEN", "WordKeys", "highlight_snippet"]

OPEN = "[["
CLOSE = "]]"
ELLIPSIS = "…"  # U+2026

# A displayed word: word characters plus the Arabic combining marks that \w
# does not cover, so a vowelled word stays one word: Quranic marks
# U+0610–U+061A, harakat U+064B–U+065F, superscript alef U+0670, small high
# marks U+06D6–U+06ED.
_DISPLAY_WORD = re.compile(r"[\w\u0610-\u061A\u064B-\u065F\u0670\u06D6-\u06ED]+")


class WordKeys:
    """Search terms of single displayed words, memoised.

    Snippets ask for the keys of every word of every hit; words repeat a lot
    across a corpus, so a bounded cache turns ~1 ms per hit into ~0.1 ms.
    """

    def __init__(self, keys: KeyFunction, *, cache_size: int = 65_536) -> None:
        self._keys = keys
        self.terms = lru_cache(maxsize=cache_size)(self._terms)

    def _terms(self, word: str) -> frozenset[str]:
        return frozenset(indexable_terms(self._keys(word)))


def highlight_snippet(
    text: str,
    terms: Collection[str],
    keys: KeyFunction | WordKeys,
    *,
    window: int = 32,
) -> str:
    """The ``window``-word stretch of ``text`` with the most matched words.

    Matched words are wrapped in ``[[…]]``; an ellipsis marks a cut.

    >>> from memory.terms import whitespace_keys
    >>> highlight_snippet("سياسة الاسترجاع خلال 14 يوما", {"الاسترجاع"}, whitespace_keys)
    'سياسة [[الاسترجاع]] خلال 14 يوما'
    """
    words = list(_DISPLAY_WORD.finditer(text))
    if not words:
        return text[: window * 8]
    wanted = frozenset(terms)
    word_keys = keys if isinstance(keys, WordKeys) else WordKeys(keys, cache_size=1024)

    def matches(word: str) -> bool:
        return not wanted.isdisjoint(word_keys.terms(word))

    flags = [matches(m.group()) for m in words]
    start = _densest_window(flags, window)
    end = min(len(words), start + window)

    pieces: list[str] = []
    cursor = words[start].start() if start > 0 else 0
    if start > 0:
        pieces.append(ELLIPSIS + " ")
    for m, flag in zip(words[start:end], flags[start:end], strict=True):
        pieces.append(text[cursor : m.start()])
        pieces.append(f"{OPEN}{m.group()}{CLOSE}" if flag else m.group())
        cursor = m.end()
    if end < len(words):
        pieces.append(text[cursor : words[end - 1].end()] + " " + ELLIPSIS)
    else:
        pieces.append(text[cursor:])
    return "".join(pieces).strip()


def _densest_window(flags: list[bool], window: int) -> int:
    """Start index of the first ``window``-long run holding the most ``True``."""
    if len(flags) <= window:
        return 0
    count = sum(flags[:window])
    best, best_start = count, 0
    for start in range(1, len(flags) - window + 1):
        count += flags[start + window - 1] - flags[start - 1]
        if count > best:
            best, best_start = count, start
    if not best:
        return 0
    # The first window reaching the best count ends on a match and may open on
    # many unmatched words; slide it right to a few words before its first
    # match (lead-in context), never past best_start + its slack, so every
    # match it counted stays inside.
    first_hit = flags.index(True, best_start)
    return min(max(best_start, first_hit - 3), len(flags) - window)
