"""Arabizi stage: an Arabizi query's words, read in Arabic letters the tenant's documents hold.

A customer writes «el noqat tintehi ba3d kam?»; the policy says «تنتهي النقاط
بعد 12 شهرا».  One fixed transliteration gives «نوقت» (o written, ق/ط
unknown), a key no record holds.  Each Latin word instead gets its plausible
readings (``nlp.arabizi_spell.spellings``: ت/ط، س/ص، د/ض، ه/ح، ك/ق، vowels
written or not), keyed by the store's own key function; the store then keeps,
per word, the first readings whose key its tenant's vocabulary holds.  No
lexicon entry is needed, so unseen words work, and a reading no document
holds never reaches the ranking.

The stage runs for the Latin words of a query written mostly in Latin
letters and not English-dominant (``nlp.arabizi.arabizi_word_score`` summed
is not negative).
An Arabic query (every ARCD question) has no Latin word, so it is never
touched.  Chosen keys join the search like typo corrections, weighted
``memory.typo.TYPO_WEIGHT``.

    >>> from nlp import key_function
    >>> readings = arabizi_readings("el noqat tintehi ba3d kam?", key_function("builtin"))
    >>> [w for w, _ in readings]
    ['noqat', 'tintehi']
    >>> choose_readings(readings, {"نقاط", "تنتهي", "نقط"})
    ['نقط', 'نقاط', 'تنتهي']
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache

from memory.terms import KeyFunction
from nlp.arabizi import ARABIZI_WORDS, ENGLISH_WORDS, arabizi_word_score
from nlp.arabizi_spell import MAX_SPELLINGS, spellings, split_article
from nlp.bridge import lexicon_latin_word

__all__ = ["MAX_READINGS_PER_WORD", "all_keys", "arabizi_readings", "choose_readings"]

_LATIN_WORD = re.compile(r"[a-z0-9'’]+")
_ARABIC_WORD = re.compile("[\u0621-\u064a]+")
# Readings kept per Latin word, like memory.typo.MAX_CORRECTIONS: the best one
# and one alternative («noqat» → نقط and نقاط, both in a points policy).
MAX_READINGS_PER_WORD = 2
# Shorter words are function words the bridge lexicon already covers (kam,
# fi, el) or too ambiguous to read (2 letters match dozens of keys).
_MIN_LETTERS = 3
# A 3-letter word keeps only its few cheapest readings: «kam» has dozens, and
# a far one («قيم») is always in some vocabulary.
_SHORT_READINGS = 4
# A stem key alone must be this long to count: «عربون»'s stem «عرب» would
# meet «العربية».
_MIN_STEM = 4


def arabizi_readings(query: str, keys: KeyFunction) -> list[tuple[str, list[tuple[str, str]]]]:
    """Per Arabizi content word: its readings' (surface key, stem key), best reading first.

    Lexicon function words (``nlp.arabizi.ARABIZI_WORDS``), English words and
    words with fewer than three letters are left to the bridge.
    """
    words = _LATIN_WORD.findall(query.lower())
    # Not English-dominant is enough here (``looks_arabizi`` asks for positive
    # evidence): «kam marra agdar asawi motalaba» has no lexicon word and no
    # digit, yet no English either; a reading only counts when an Arabic
    # document holds it, so an English query against Arabic documents costs
    # one lookup and changes nothing.
    # And Latin-dominant: an Arabic question quoting «DNA» or «iPhone» (ARCD
    # has such) is read in its Arabic words alone.
    if (not words or len(_ARABIC_WORD.findall(query)) >= len(words)
            or sum(arabizi_word_score(w) for w in words) < 0):
        return []
    out: list[tuple[str, list[tuple[str, str]]]] = []
    seen: set[str] = set()
    for word in words:
        bare = split_article(word.replace("’", "'"))
        letters = sum(ch.isalpha() for ch in bare)
        if (bare in seen or bare in ARABIZI_WORDS or bare in ENGLISH_WORDS
                or letters < _MIN_LETTERS or bare.isdigit() or lexicon_latin_word(word)):
            continue  # the bridge's lexicon reads «taba3i», «emta»; no guess wanted
        seen.add(bare)
        keyed = _keyed(bare, keys, _SHORT_READINGS if letters <= _MIN_LETTERS else MAX_SPELLINGS)
        if keyed:
            out.append((word, list(keyed)))
    return out


@lru_cache(maxsize=20_000)
def _keyed(word: str, keys: KeyFunction, limit: int) -> tuple[tuple[str, str], ...]:
    """(surface key, stem key) of each reading; cached per key function (a store keeps one)."""
    keyed: list[tuple[str, str]] = []
    for i, reading in enumerate(spellings(word, limit)):
        k = keys(reading)
        if k:
            keyed.append((k[-1], k[0]))
        elif i == 0:
            break  # its usual reading is a stopword («kam» → كم): a function word
    return tuple(keyed)


def choose_readings(readings: list[tuple[str, list[tuple[str, str]]]],
                    known: Collection[str]) -> list[str]:
    """The keys to search: per word, its first ``MAX_READINGS_PER_WORD`` known readings.

    A reading counts by its surface key, or by its stem key when that is at
    least four letters (a 3-letter stem is too ambiguous).
    """
    chosen: dict[str, None] = {}
    for _word, keyed in readings:
        taken = 0
        for surface, stem in keyed:
            key = surface if surface in known else (
                stem if len(stem) >= _MIN_STEM and stem in known else None)
            if key is None or key in chosen:
                continue
            chosen.setdefault(key, None)
            taken += 1
            if taken == MAX_READINGS_PER_WORD:
                break
    return list(chosen)


def all_keys(readings: list[tuple[str, list[tuple[str, str]]]]) -> list[str]:
    """Every key the readings could use: what the store looks up in its vocabulary."""
    out: dict[str, None] = {}
    for _word, keyed in readings:
        for surface, stem in keyed:
            out.setdefault(surface, None)
            if len(stem) >= _MIN_STEM:
                out.setdefault(stem, None)
    return list(out)
