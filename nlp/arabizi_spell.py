"""Arabizi word → its plausible Arabic spellings, best first, for matching a vocabulary.

One Latin letter stands for several Arabic ones (t: ت/ط, s: س/ص, d: د/ض,
h: ه/ح, k: ك/ق, g: ج/ق/غ) and a short vowel is mostly not written, so
:func:`nlp.arabizi.arabizi_to_arabic`'s single reading often misses the word a
document holds: «talab» → «تلب», the policy says «طلب»; «7imaya» → «حيمايا»
for «حماية».  Here every reading is generated, scored by how usual each
choice is, and the caller keeps the readings its tenant's vocabulary actually
holds (``memory.arabizi_stage``): the vocabulary decides, not a lexicon, so
unseen words work too.

    >>> spellings("talab")[:4]
    ['تلب', 'تلاب', 'تالب', 'طلب']
    >>> "حماية" in spellings("7imaya"), "نقاط" in spellings("noqat"), "وصل" in spellings("wusal")
    (True, True, True)
"""

from __future__ import annotations

import heapq
import re
from functools import lru_cache

__all__ = ["MAX_SPELLINGS", "spellings", "split_article"]

# Readings kept per word.  A 6-letter word has at most a few hundred readings;
# the best 96 by score hold the right one on every Arabizi row of the four
# support dev sets (bench/support.py), and a vocabulary lookup of
# 96 × words keys is one indexed IN query.
MAX_SPELLINGS = 96

# Latin units, longest first; each with its Arabic readings and their cost
# (0 = the usual reading; higher = rarer).  Vowels may be unwritten ("").
_C = tuple[tuple[str, float], ...]
_UNITS: dict[str, _C] = {
    "3'": (("غ", 0),), "7'": (("خ", 0),), "9'": (("ض", 0),), "6'": (("ظ", 0),),
    "sh": (("ش", 0),), "ch": (("ش", 0),), "kh": (("خ", 0),), "gh": (("غ", 0),),
    "th": (("ث", 0), ("ذ", 1), ("ظ", 1.5)), "dh": (("ذ", 0), ("ض", 0.8), ("ظ", 1)),
    "aa": (("ا", 0),), "ee": (("ي", 0),), "ii": (("ي", 0),), "ei": (("ي", 0.3),),
    "ai": (("ي", 0.5), ("اي", 0.5)), "ay": (("اي", 0), ("ي", 0.8)),
    "oo": (("و", 0),), "ou": (("و", 0),), "uu": (("و", 0),), "ow": (("و", 0.3), ("او", 0.6)),
    # 2 is also ق as Cairo and Beirut say it: «a2aset» أقسط, «ra2m» رقم.
    "2": (("ء", 0), ("ا", 0.3), ("ق", 0.5), ("ئ", 0.6)), "3": (("ع", 0),), "5": (("خ", 0),),
    "6": (("ط", 0),), "7": (("ح", 0),), "8": (("ق", 0), ("غ", 1)), "9": (("ق", 0), ("ص", 0.5)),
    "b": (("ب", 0),), "p": (("ب", 0),), "c": (("ك", 0), ("س", 1)), "f": (("ف", 0),),
    "v": (("ف", 0),), "j": (("ج", 0),), "l": (("ل", 0),), "m": (("م", 0),), "n": (("ن", 0),),
    "r": (("ر", 0),), "w": (("و", 0),), "y": (("ي", 0),), "x": (("كس", 0),),
    "q": (("ق", 0),), "z": (("ز", 0), ("ظ", 1.2), ("ذ", 1.5)),
    "t": (("ت", 0), ("ط", 0.7)), "s": (("س", 0), ("ص", 0.7)), "d": (("د", 0), ("ض", 0.8)),
    "h": (("ه", 0), ("ح", 0.6)), "k": (("ك", 0), ("ق", 0.7)),
    "g": (("ج", 0.3), ("ق", 0.3), ("غ", 1.2)),
    # Short vowels: mostly unwritten inside a word; a long vowel is written.
    # A written vowel letter of another quality is the template changing, not
    # a misspelling: «wusal» (وصل) is said of «وصول», «talab» of «طالب».
    "a": (("", 0), ("ا", 0.6), ("و", 1.3), ("ي", 1.3)),
    "e": (("", 0), ("ي", 1.2), ("ا", 1.2), ("و", 1.5)),
    "i": (("", 0.2), ("ي", 0.3), ("ا", 1.3), ("و", 1.5)),
    "o": (("", 0.3), ("و", 0.3), ("ا", 1.3), ("ي", 1.5)),
    "u": (("", 0.3), ("و", 0.3), ("ا", 1.3), ("ي", 1.5)),
    "'": (("", 0),), "’": (("", 0),),
}
_UNIT_RE = re.compile("|".join(re.escape(u) for u in sorted(_UNITS, key=len, reverse=True)))
# A word-final vowel is written: ‑a as ة (تجربة، شركة), ا (يلا) or ى; ‑e as ة or
# ي; ‑i as ي (حسابي); ‑o/‑u as و.  ‑iya is ية.
_FINAL: dict[str, _C] = {
    # ‑a is also ‑اء, the plural of «عميل», «شريك»: «3omala» عملاء, «shoraka» شركاء.
    "a": (("ة", 0), ("ا", 0.4), ("اء", 0.8), ("ى", 0.9), ("", 1.2)),
    "e": (("ة", 0.2), ("ي", 0.3), ("", 0.8)),
    "i": (("ي", 0),), "o": (("و", 0),), "u": (("و", 0), ("", 1)),
    # ‑at/‑et is ة before a genitive: «khetat el 7imaya» خطة الحماية, «fatrat
    # tajruba» فترة تجربة, «khedmet el 3omala» خدمة العملاء.
    "t": (("ت", 0), ("ط", 0.7), ("ة", 0.8)),
}
# A word-initial vowel sits on alef (أ/إ/ا all fold to ا); rarely it is ع
# written without the 3.
_INITIAL: dict[str, _C] = {
    "a": (("ا", 0), ("ع", 1.5)), "e": (("ا", 0), ("ع", 1.5)), "i": (("ا", 0), ("ع", 1.5)),
    "o": (("ا", 0.2), ("او", 0.4)), "u": (("ا", 0.2), ("او", 0.4)),
}
# The Arabic article written apart or glued: «el talab», «l7anout», «fel far3»
# (في ال), «bel», «lal» (لل), «3al» (على ال), «wel».
_ARTICLE = re.compile(r"^(?:el|al|il|l)(?=[a-z235789]{3})")


def split_article(word: str) -> str:
    """The word without a glued article: «l7anout» → «7anout», «elfatoura» → «fatoura».

    >>> split_article("l7anout"), split_article("lgarantie"), split_article("laban")
    ('7anout', 'garantie', 'laban')
    """
    # «laban» (لبن) keeps its l: only l + consonant, or el/al/il + anything, is the article.
    m = _ARTICLE.match(word)
    if m is None:
        return word
    rest = word[m.end():]
    if m.group() == "l" and rest[0] in "aeiou":
        return word
    return rest


def _collapse(word: str) -> str:
    """A doubled Latin consonant is one Arabic letter with shadda (unwritten)."""
    return re.sub(r"([b-df-hj-np-tv-z])\1", r"\1", word)


@lru_cache(maxsize=20_000)
def spellings(word: str, limit: int = MAX_SPELLINGS) -> list[str]:
    """Arabic readings of one Latin/digit word, cheapest first, at most ``limit``.

    Deterministic: equal costs keep the order of the readings tables.

    >>> spellings("3arboon")[0], spellings("sal7a")[:2]
    ('عربون', ['سلحة', 'سلحا'])
    """
    low = _collapse(word.lower())
    units = _UNIT_RE.findall(low)
    if not units or len(units) > 14:
        return []
    options: list[_C] = []
    last = len(units) - 1
    for i, unit in enumerate(units):
        if i == 0 and unit in _INITIAL:
            options.append(_INITIAL[unit])
        elif i == last and unit in _FINAL and i > 0:
            options.append(_FINAL[unit])
        else:
            options.append(_UNITS[unit])
    return _cheapest(options, limit)


def _cheapest(options: list[_C], limit: int) -> list[str]:
    """The ``limit`` cheapest combinations (a best-first walk over the choices)."""
    start = (sum(o[0][1] for o in options), (0,) * len(options))
    heap = [start]
    seen = {start[1]}
    out: dict[str, None] = {}
    while heap and len(out) < limit:
        cost, picks = heapq.heappop(heap)
        text = "".join(options[i][p][0] for i, p in enumerate(picks))
        if len(text) >= 2:
            out.setdefault(text, None)
        for i, p in enumerate(picks):
            if p + 1 < len(options[i]):
                nxt = (*picks[:i], p + 1, *picks[i + 1:])
                if nxt not in seen:
                    seen.add(nxt)
                    step = options[i][p + 1][1] - options[i][0][1]
                    base = cost - (options[i][p][1] - options[i][0][1])
                    heapq.heappush(heap, (base + step, nxt))
    return list(out)
