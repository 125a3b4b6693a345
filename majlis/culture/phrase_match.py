"""Whole-word phrase matching over folded word sequences.

A cue is a *phrase*: one or more whole words. Arabic-script phrases are folded
through the same word splitter as the user's text (``nlp.words``: folding,
clitic segmentation, Arabizi transliteration), so a table entry written
naturally ("مع السلامة") and the user's "ومع السلامه" meet as the same words.
Latin-script phrases (Arabizi and English, "yalla bye", "thx") are matched on
the raw lower-cased Latin words instead, because transliterating English would
turn "hi" into the Arabic pronoun هي.

The invariant this module guards: a phrase matches only a run of *whole*
words. "باي" never matches inside "الموبايل", because الموبايل is one word.

    >>> index = PhraseIndex([("مع السلامة", "farewell")], words=str.split)
    >>> [m.label for m in index.find_all(Words(arabic=("مع", "السلامة"), latin=()))]
    ['farewell']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = [
    "Match",
    "PhraseIndex",
    "Script",
    "WordSplitter",
    "Words",
    "arabizi_skeleton",
    "is_latin",
    "latin_words",
]

# Latin letters and the digits Arabizi uses for Arabic sounds (2=ء, 3=ع, 5=خ,
# 7=ح, 9=ق/ص): "3ayez", "7abibi" are single words. Apostrophes split words.
_LATIN_WORD = re.compile(r"[a-z0-9]+")
# Any Latin letter (U+0041–U+005A, U+0061–U+007A) marks a phrase as Latin-script.
_HAS_LATIN = re.compile(r"[A-Za-z]")

Script = Literal["arabic", "latin"]


class WordSplitter(Protocol):
    """Turns raw text into folded whole words (the contract of ``nlp.words``)."""

    def __call__(self, text: str, /) -> list[str]: ...


def is_latin(phrase: str) -> bool:
    """True for an Arabizi/English phrase: ``is_latin("yalla bye") -> True``."""
    return _HAS_LATIN.search(phrase) is not None


def latin_words(text: str) -> list[str]:
    """The raw Latin words of ``text``, lower-cased: ``"Yalla BYE!" -> ["yalla", "bye"]``."""
    return _LATIN_WORD.findall(text.casefold())


# Arabizi writes one Arabic word many ways: moshkila, mushkila, mshkla, mochkila.
# Its consonant skeleton is stable: digraphs as one letter (ch = sh, the French
# spelling of ش in the Maghreb), vowels dropped, doubled letters squeezed.
_DIGRAPHS = (("ch", "sh"), ("ou", "u"))
_VOWELS = re.compile(r"[aeiou]+")
_DOUBLE = re.compile(r"(.)\1+")
# Shorter skeletons collide with unrelated words ("abi" and "bye" share "b").
SKELETON_MIN = 3


def arabizi_skeleton(word: str) -> str:
    """The consonant skeleton of a lower-cased Latin (Arabizi) word; "" when too short.

    >>> {arabizi_skeleton(w) for w in ("moshkila", "mushkila", "mshkla", "mochkila")}
    {'mshkl'}
    >>> arabizi_skeleton("abi")
    ''
    """
    for a, b in _DIGRAPHS:
        word = word.replace(a, b)
    skeleton = _DOUBLE.sub(r"\1", _VOWELS.sub("", word))
    return skeleton if len(skeleton) >= SKELETON_MIN and len(word) >= 4 else ""


@dataclass(frozen=True, slots=True)
class Words:
    """One message as two word sequences: folded Arabic words and raw Latin words."""

    arabic: tuple[str, ...]
    latin: tuple[str, ...]

    @classmethod
    def of(cls, text: str, *, words: WordSplitter) -> Words:
        """Split ``text`` both ways: "هلا، thx" → arabic ("هلا", …), latin ("thx",)."""
        return cls(arabic=tuple(words(text)), latin=tuple(latin_words(text)))

    def sequence(self, script: Script) -> tuple[str, ...]:
        return self.arabic if script == "arabic" else self.latin


@dataclass(frozen=True, slots=True)
class Match:
    """One phrase found at words ``[start, end)`` of the ``script`` sequence."""

    label: str
    script: Script
    start: int
    end: int

    def positions(self) -> set[tuple[Script, int]]:
        return {(self.script, i) for i in range(self.start, self.end)}


class PhraseIndex:
    """Phrases keyed by their first word, so matching is one pass per message."""

    def __init__(self, phrases: Iterable[tuple[str, str]], *, words: WordSplitter) -> None:
        # first word → [(all words, label)], longest phrase first so that
        # "السلام عليكم" wins over "سلام" when both start at the same word.
        self._by_first: dict[Script, dict[str, list[tuple[tuple[str, ...], str]]]] = {
            "arabic": {},
            "latin": {},
        }
        for text, label in phrases:
            script: Script = "latin" if is_latin(text) else "arabic"
            key = tuple(latin_words(text)) if script == "latin" else tuple(words(text))
            if not key:
                continue
            bucket = self._by_first[script].setdefault(key[0], [])
            if (key, label) not in bucket:
                bucket.append((key, label))
        for table in self._by_first.values():
            for bucket in table.values():
                bucket.sort(key=lambda item: -len(item[0]))

    def _candidates(self, seq: Sequence[str], script: Script, at: int) -> list[Match]:
        found = []
        for key, label in self._by_first[script].get(seq[at], ()):
            if tuple(seq[at : at + len(key)]) == key:
                found.append(Match(label, script, at, at + len(key)))
        return found

    def find_all(
        self, words: Words, *, skip: frozenset[tuple[Script, int]] = frozenset()
    ) -> list[Match]:
        """Every occurrence (overlaps allowed) that touches no position in ``skip``."""
        found: list[Match] = []
        for script in ("arabic", "latin"):
            seq = words.sequence(script)
            for at in range(len(seq)):
                for match in self._candidates(seq, script, at):
                    if not (match.positions() & skip):
                        found.append(match)
        return found

    def find_longest(self, words: Words) -> list[Match]:
        """Non-overlapping matches, left to right, the longest phrase at each word."""
        found: list[Match] = []
        for script in ("arabic", "latin"):
            seq = words.sequence(script)
            at = 0
            while at < len(seq):
                candidates = self._candidates(seq, script, at)
                if candidates:
                    found.append(candidates[0])
                    at = candidates[0].end
                else:
                    at += 1
        return found
