"""Search keys for matching questions to sentences and tools.

The product's Arabic pipeline (``nlp.search_keys``) is the real key function
and is injected by the service. This module holds the seam and a small,
dependency-free fallback so the model layer works and is testable alone.

The fallback folds the orthographic variants users type interchangeably and
peels the commonest clitics, so «بالمدينة» and «المدينه» share the key «مدين».

    >>> fallback_search_keys("متى وُلِد في المدينةِ المنورة؟")
    ['متي', 'ولد', 'في', 'مدين', 'منور']
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

__all__ = ["FUNCTION_WORDS", "KeyFunction", "content_keys", "fallback_search_keys", "stop_keys_for"]

KeyFunction = Callable[[str], Sequence[str]]

# U+064B..U+0652 harakat, U+0670 superscript alef, U+0640 tatweel.
_MARKS = re.compile("[\u064b-\u0652\u0670\u0640]")
# U+0622 alef madda, U+0623 alef hamza above, U+0625 alef hamza below, U+0671 wasla → U+0627.
_ALEF = re.compile("[\u0622\u0623\u0625\u0671]")
# Arabic letters U+0621..U+064A, Latin letters and digits (Arabizi, order numbers).
_TOKEN = re.compile("[\u0621-\u064a]+|[A-Za-z0-9]+|[\u0660-\u0669]+")
# U+0649 alef maqsura → U+064A ya; U+0629 ta marbuta → U+0647 ha; U+0624/U+0626 hamza seats.
_FOLD = str.maketrans(
    {"\u0649": "\u064a", "\u0629": "\u0647", "\u0624": "\u0648", "\u0626": "\u064a"}
)
# Proclitic clusters, longest first: wa/fa + bi/ka/li + al, or lil.
_PREFIXES = ("وبال", "وكال", "فبال", "وال", "فال", "بال", "كال", "ولل", "لل", "ال")
# Suffixes peeled only when a stem of >= 3 letters remains; plural/feminine/pronoun.
_SUFFIXES = ("هما", "كما", "ات", "ون", "ين", "ان", "ها", "هم", "كم", "نا", "يه", "ه", "ي")

# Question words, particles and dialect fillers: they say *how* something is
# asked, not *what*, so they never count as evidence of a matching answer.
FUNCTION_WORDS: frozenset[str] = frozenset(
    """
    من ما ماذا متى أين كيف كم لماذا هل أي أية ماهو ماهي هو هي هم هن انا أنا انت أنت نحن
    في على عن إلى الى مع من ب ل و ف ثم او أو أم لا لم لن قد كان كانت يكون تكون
    هذا هذه ذلك تلك هذي هاذا هيدا هيدي هاد هادي دا دي ده اللي التي الذي الذين
    شو وش ايش إيش شنو شنهو شنوه ليش ليه علاش وين فين منين امتى إمتى امتا كيفاش
    قديش بكم بكام كام شلون اشلون إزاي ازاي عند عندي عندك عندكم لي لك لكم ال
    ابي ابغى ابغي بدي عايز عاوز بغيت نبغي اقدر أقدر ممكن اريد أريد
    شحال فوقاش واش باش ديال ديالي ديالك شنو بزاف حق حقي حقك تبع تبعي هيك هلق الحين دلوقتي هسه
    بعد قبل كل بعض غير بين حول عام سنة تم يا لو اذا إذا ان أن إن
    عشان علشان لازم خالص شوي شوية كمان برضو برضه زي كده كدا هيك هكا هيكا هاي هذي هادي
    هاد هادا عدكم عندكم عندنا قد قديه مالتي مالتك مالتكم مالي ديالكم تبع تبعك تبعكم حقكم
    بتاع بتاعي بتاعك بتاعكم يعني طب طيب اوك اوكي يلي الي ياخي فضلك سمحت عافاك غادي راح رح
    صار صارت بيصير اصلا أصلا بعدين اسوي أسوي نسوي اعمل أعمل نعمل ندير دير شي حد
    """.split()
)


def _stem(token: str) -> str:
    for prefix in _PREFIXES:
        if token.startswith(prefix) and len(token) - len(prefix) >= 2:
            token = token[len(prefix) :]
            break
    for suffix in _SUFFIXES:
        if token.endswith(suffix) and len(token) - len(suffix) >= 3:
            return token[: -len(suffix)]
    return token


def fallback_search_keys(text: str) -> list[str]:
    """Normalised, lightly stemmed keys, in text order (duplicates kept)."""
    folded = _ALEF.sub("\u0627", _MARKS.sub("", text)).translate(_FOLD).lower()
    return [_stem(tok) for tok in _TOKEN.findall(folded)]


def content_keys(text: str, keys: KeyFunction, stop: Iterable[str]) -> list[str]:
    """Keys of ``text`` that carry content, i.e. not in ``stop``, order kept."""
    stop_set = stop if isinstance(stop, (set, frozenset)) else set(stop)
    return [k for k in keys(text) if k not in stop_set and len(k) > 1]


@lru_cache(maxsize=32)
def stop_keys_for(keys: KeyFunction) -> frozenset[str]:
    """:data:`FUNCTION_WORDS` passed through ``keys``, so any key function agrees.

    Cached per key function: every turn builds a tool registry that asks again.
    """
    return frozenset(keys(" ".join(sorted(FUNCTION_WORDS))))
