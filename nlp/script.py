"""Which script (and, for Latin, which language) a message is written in."""

from __future__ import annotations

from enum import StrEnum

from nlp.arabizi import looks_arabizi
from nlp.tokens import TokenKind, tokenize

__all__ = ["Script", "detect_script"]


class Script(StrEnum):
    ARABIC = "arabic"  # Arabic script (any dialect), maybe with digits/emoji
    LATIN = "latin"  # English or another Latin-script language
    ARABIZI = "arabizi"  # Arabic written in Latin letters and digits
    MIXED = "mixed"  # Arabic-script and Latin words together (code-switching)
    OTHER = "other"  # no letters at all, or a non-Arabic, non-Latin script


def _is_latin_word(word: str) -> bool:
    # Latin proper: ASCII letters or Latin-1/Extended-A/B (é, ç, ş …).
    return all(c.isdigit() or c in "'’" or c.isascii() or "\u00c0" <= c <= "\u024f" for c in word)


def detect_script(text: str) -> Script:
    """Classify one message.

    >>> detect_script("شلونك حبيبي"), detect_script("shlonak 7abibi")
    (<Script.ARABIC: 'arabic'>, <Script.ARABIZI: 'arabizi'>)
    >>> detect_script("الـ router ما يشتغل"), detect_script("my router is down")
    (<Script.MIXED: 'mixed'>, <Script.LATIN: 'latin'>)
    """
    arabic = 0
    latin: list[str] = []
    other = 0
    for tok in tokenize(text):
        if tok.kind is TokenKind.WORD:
            arabic += 1
        elif tok.kind is TokenKind.LATIN:
            if _is_latin_word(tok.text):
                latin.append(tok.text)
            else:
                other += 1
    if arabic and latin:
        return Script.MIXED
    if arabic:
        return Script.ARABIC
    if latin and len(latin) >= other:
        return Script.ARABIZI if looks_arabizi(latin) else Script.LATIN
    return Script.OTHER
