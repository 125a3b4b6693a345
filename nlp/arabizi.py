"""Arabizi (Arabic chat alphabet) → Arabic script, and Arabizi detection.

Good enough for search and dialect identification, not for display: short
vowels are mostly unwritten in Arabic, so word-internal ``a/e`` are dropped
and long vowels ``aa/ee/oo/ou/i/o/u`` become ا/ي/و.  Digits stand for the
letters Latin lacks: 2 ء, 3 ع, 3' غ, 5 خ, 6 ط, 7 ح, 7' خ, 8 ق, 9 ق (Gulf ص is
rarer in support chat).
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["arabizi_to_arabic", "arabizi_word_score", "looks_arabizi"]

_WORD_RE = re.compile(r"[A-Za-z0-9'’]+")
# Multi-character units first (the regex alternation is ordered).
_UNITS: tuple[tuple[str, str], ...] = (
    ("3'", "غ"), ("7'", "خ"), ("sh", "ش"), ("ch", "ش"), ("kh", "خ"), ("gh", "غ"),
    ("th", "ث"), ("dh", "ذ"), ("ou", "و"), ("oo", "و"), ("ee", "ي"), ("ei", "ي"),
    ("ai", "ي"), ("ay", "اي"), ("aa", "ا"), ("2", "ء"), ("3", "ع"), ("5", "خ"),
    ("6", "ط"), ("7", "ح"), ("8", "ق"), ("9", "ق"), ("b", "ب"), ("c", "ك"),
    ("d", "د"), ("f", "ف"), ("g", "ج"), ("h", "ه"), ("j", "ج"), ("k", "ك"),
    ("l", "ل"), ("m", "م"), ("n", "ن"), ("p", "ب"), ("q", "ق"), ("r", "ر"),
    ("s", "س"), ("t", "ت"), ("v", "ف"), ("w", "و"), ("x", "كس"), ("y", "ي"),
    ("z", "ز"), ("i", "ي"), ("o", "و"), ("u", "و"), ("a", "a"), ("e", "e"),
    ("'", ""), ("’", ""),
)
_UNIT_RE = re.compile("|".join(re.escape(u) for u, _ in _UNITS))
_UNIT_MAP = dict(_UNITS)
_DOUBLE_RE = re.compile(r"([\u0628-\u064a])\1")  # شدّة is not written: لل → ل

# Common Arabizi words that contain no digit, so digits alone cannot flag them.
ARABIZI_WORDS = frozenset(
    """ana enta enti inta inti ahlan habibi habibti yalla yallah inshallah inshalla
    mashallah wallah walla shukran shokran tayeb tayyeb mesh msh mish ma3lesh
    kifak kifik keefak shlonak shlonich shlon shu shou eh ezay izzay ezzay
    leh lesh laish wein wen fein feen ba3den ba3d 3ayez 3ayz 3awz bidi badi
    bghit wakha daba bzaf kifash wesh labas hamdulillah alhamdulillah akeed
    tamam khalas yaani ya3ni ma3 ma3ak 3andi andi 3ndi fi mafi mafish mafeesh
    zain zein zeen hala marhaba mar7aba salam salamat ahla el al il wel bel
    sho ktir kteer hek hayda hadi hada hatha ello elli illi lazem lazim""".split()
)
# High-frequency English words: evidence against Arabizi.
ENGLISH_WORDS = frozenset(
    """the a an is are was were be been to of and or in on at for with my your
    i you he she it we they this that not no yes can can't cannot do does did
    have has had will would please help account order phone card password
    internet bill payment refund problem issue service app login error hi
    hello thanks thank what when where why how is it me our us from by as""".split()
)
_ARABIZI_DIGIT_RE = re.compile(r"[a-z][235789]|[235789][a-z]|[235789]'", re.IGNORECASE)


def arabizi_word_score(word: str) -> int:
    """+1 for Arabizi evidence, -1 for English evidence, 0 when unsure."""
    low = word.lower()
    if low in ENGLISH_WORDS:
        return -1
    if low in ARABIZI_WORDS or _ARABIZI_DIGIT_RE.search(low):
        return 1
    return 0


def looks_arabizi(latin_words: list[str]) -> bool:
    """A Latin-script message is Arabizi when Arabizi evidence outweighs English."""
    return sum(arabizi_word_score(w) for w in latin_words) > 0


@lru_cache(maxsize=50_000)
def _word_to_arabic(word: str) -> str:
    units = [_UNIT_MAP[m] for m in _UNIT_RE.findall(word.lower())]
    out: list[str] = []
    last = len(units) - 1
    for i, u in enumerate(units):
        if u in ("a", "e"):
            # initial vowel: alef seat; final a: ا (يلا، انا); final e: ي
            # (Lebanese شي); otherwise a short vowel, unwritten.
            if i == 0:
                out.append("ا")
            elif i == last:
                out.append("ا" if u == "a" else "ي")
            elif u == "a" and i + 1 <= last and units[i + 1] in ("ي", "و", "a", "e"):
                out.append("ا")  # 3ayez → عايز
        elif i == 0 and u in ("ي", "و") and len(word) > 1 and word[0].lower() in "iou":
            out.append("ا" + ("" if u == "ي" and word[0].lower() == "i" else u))
        else:
            out.append(u)
    return _DOUBLE_RE.sub(r"\1", "".join(out))


def arabizi_to_arabic(text: str) -> str:
    """Transliterate every Latin/digit word in ``text``; other characters pass through.

    >>> arabizi_to_arabic("shlonak 7abibi")
    'شلونك حبيبي'
    >>> arabizi_to_arabic("ana 3ayez a2ol")
    'انا عايز اءول'
    """
    return _WORD_RE.sub(lambda m: _word_to_arabic(m.group()), text)
