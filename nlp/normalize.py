"""The two normal forms: ``clean`` for storage and display, ``fold`` for matching.

They are never confused: ``clean`` keeps every letter and diacritic the user
typed (it only removes invisible control characters that corrupt display or
split words, then applies NFC); ``fold`` throws away distinctions that people
do not type consistently so that a query and a document meet.

Decision on ``ؤ`` (U+0624) and ``ئ`` (U+0626): they are **kept**. Unlike
أ/إ/آ, which people swap freely, the seated hamzas are written consistently
enough that folding them to و/ي merges real words (سؤال "question" vs سوال is
a typo, but رئيس "president" vs ريس "captain/boss" in Gulf usage, مسؤول vs
مسوول).  Lucene's ArabicNormalizationFilter and camel-tools'
``normalize_alef_ar`` keep them as well, so keeping them also keeps parity.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["clean", "drop_overrides", "fold", "latin_lower"]

# Display spoofing.  Bidi embeddings and overrides — U+202A LRE, U+202B RLE,
# U+202D LRO, U+202E RLO and their closer U+202C PDF — are ALWAYS removed,
# balanced or not: an override reverses strong characters, so «\u202e1234\u202c»
# shows an order number backwards to a human agent, and an embedding can be
# turned into one.  The deprecated format controls U+206A–U+206F are removed
# too.  Isolates — U+2066 LRI, U+2067 RLI, U+2068 FSI closed by U+2069 PDI —
# never override a character's own direction; a *balanced* isolate is a
# deliberate display choice (an English product name inside Arabic:
# «السعر \u2067iPhone 15\u2069») and is kept; an unbalanced one is removed.
# LRM/RLM (U+200E/F) and ALM (U+061C) are plain marks: kept between words.
_BIDI_RE = re.compile("[\u202a-\u202e\u2066-\u2069\u206a-\u206f]")
_ALWAYS_DROP = frozenset("\u202a\u202b\u202c\u202d\u202e\u206a\u206b\u206c\u206d\u206e\u206f")
_OVERRIDE_RE = re.compile("[\u202a-\u202e\u206a-\u206f]")
_ISOLATE_OPEN = frozenset("\u2066\u2067\u2068")
_ISOLATE_CLOSE = "\u2069"

# Zero-width characters *inside a word* (between two letters/marks) split the
# word for every tokenizer and search engine while being invisible:
# U+200B ZWSP, U+200C ZWNJ, U+200D ZWJ, U+200E LRM, U+200F RLM, U+2060 WJ,
# U+FEFF ZWNBSP/BOM.  Between words (or inside emoji ZWJ sequences, whose
# neighbours are not letters) they are left alone.
_WORDCHAR = "\\w\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed"
_ZW_IN_WORD_RE = re.compile(
    f"(?<=[{_WORDCHAR}])[\u200b-\u200f\u2060\ufeff]+(?=[{_WORDCHAR}])"
)
# U+FEFF anywhere is a byte-order mark that leaked into text: never meaningful.
_ANY_ZW_RE = re.compile("[\u200b-\u200f\u2060\ufeff]")


def _non_starter_class() -> str:
    """A regex class of every code point with a non-zero canonical combining class.

    Computed from unicodedata at import (≈20 ms) rather than hard-coded, so it
    follows the interpreter's Unicode version; no non-starter lies above
    U+1E94A today, and scanning to U+2FFFF leaves room.
    """
    ranges: list[tuple[int, int]] = []
    for cp in range(0x30000):
        if unicodedata.combining(chr(cp)):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    return "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)


# NFC sorts each run of non-starters (combining marks) by combining class with
# an insertion sort, so a hostile run of alternating marks (فتحة U+064E, كسرة
# U+0650, …) costs O(n²): 10 s for 100,000 of them.  Unicode's Stream-Safe Text
# Format (UAX #15 §13) bounds runs at 30 non-starters by inserting U+034F
# COMBINING GRAPHEME JOINER, which is invisible, has class 0 and so stops the
# reordering: NFC becomes linear, and no character the user typed is touched.
# No real text has 31 marks on one letter (Arabic stacks at most 3–4).
_CGJ = "͏"
_LONG_MARK_RUN_RE = re.compile(f"[{_non_starter_class()}]{{31,}}")


def _stream_safe(text: str) -> str:
    """Insert U+034F after every 30th mark of an overlong mark run (UAX #15).

    >>> _stream_safe("ب" + "\u064e" * 31) == "ب" + "\u064e" * 30 + "\u034f\u064e"
    True
    """
    def split(m: re.Match[str]) -> str:
        run = m.group()
        return _CGJ.join(run[i : i + 30] for i in range(0, len(run), 30))

    return _LONG_MARK_RUN_RE.sub(split, text)


def _drop_unbalanced_bidi(text: str) -> str:
    """Remove every embedding/override control, and isolates that are not properly nested."""
    stack: list[int] = []  # positions of isolate openers still waiting
    keep: set[int] = set()
    for m in _BIDI_RE.finditer(text):
        ch, pos = m.group(), m.start()
        if ch in _ALWAYS_DROP:
            continue
        if ch in _ISOLATE_OPEN:
            stack.append(pos)
        elif stack:  # PDI closes the innermost open isolate
            keep.update((stack.pop(), pos))
    return "".join(_split_keep(text, keep))


def _split_keep(text: str, keep: set[int]) -> list[str]:
    # Rebuild the string without the bidi controls whose index is not kept.
    out: list[str] = []
    last = 0
    for m in _BIDI_RE.finditer(text):
        if m.start() not in keep:
            out.append(text[last : m.start()])
            last = m.end()
    out.append(text[last:])
    return out


def drop_overrides(text: str) -> str:
    """Remove the bidi embeddings and overrides (U+202A–U+202E) and U+206A–U+206F only.

    Stateless — these go balanced or not — so it is safe on each chunk of a streamed
    model reply, where ``clean``'s isolate balancing could not see the whole text.

    >>> drop_overrides("طلبك رقم \u202e48213\u202c وصل \u2067iPhone\u2069")
    'طلبك رقم 48213 وصل \u2067iPhone\u2069'
    """
    return _OVERRIDE_RE.sub("", text) if _OVERRIDE_RE.search(text) else text


def clean(text: str) -> str:
    """Storage/display form: drop invisible breakers, keep every typed letter, NFC.

    >>> clean("مر\\u200cحبا \\u202eيا")   # ZWNJ inside a word, stray RLO
    'مرحبا يا'
    >>> clean("كَتَبَ")                    # diacritics are the user's: kept
    'كَتَبَ'
    >>> clean("طلبي \\u202e12345\\u202c")   # a balanced override is spoofing too
    'طلبي 12345'
    """
    # Bidi first: removing a stray control can bring a zero-width character
    # between two letters, and clean() must be idempotent.
    if _BIDI_RE.search(text):
        text = _drop_unbalanced_bidi(text)
    if _ANY_ZW_RE.search(text):
        text = _ZW_IN_WORD_RE.sub("", text).replace("\ufeff", "")
    if not unicodedata.is_normalized("NFC", text):
        # Only text that needs NFC can hit its quadratic sort (a sorted run
        # is already NFC), and the search costs ~200 ns/char: checked here only.
        text = unicodedata.normalize("NFC", _stream_safe(text))
    return text


def _fold_table() -> dict[int, int | str | None]:
    table: dict[int, int | str | None] = {}
    # Harakat U+064B fathatan … U+0652 sukun, U+0653–U+065F (maddah, hamza
    # marks, other Quranic/Persian vowel signs), U+0670 dagger alef,
    # U+0640 tatweel, Quranic annotation marks U+0610–U+061A, U+06D6–U+06ED.
    # U+034F combining grapheme joiner: invisible, inserted by _stream_safe.
    for cp in (*range(0x064B, 0x0660), 0x0670, 0x0640, *range(0x0610, 0x061B),
               *range(0x06D6, 0x06EE), 0x034F):
        table[cp] = None
    for src in "أإآٱ":  # U+0623 U+0625 U+0622 U+0671 → U+0627 bare alef
        table[ord(src)] = "ا"
    table[ord("ى")] = "ي"  # U+0649 alef maksura → U+064A yeh
    table[ord("ة")] = "ه"  # U+0629 teh marbuta → U+0647 heh
    table[ord("ک")] = "ك"  # U+06A9 keheh (Persian/Urdu) → U+0643 kaf
    table[ord("ی")] = "ي"  # U+06CC Farsi yeh → U+064A
    table[ord("ې")] = "ي"  # U+06D0 yeh (Pashto/Uyghur keyboards)
    table[ord("ھ")] = "ه"  # U+06BE heh doachashmee (Urdu keyboards)
    table[ord("ە")] = "ه"  # U+06D5 ae (Kurdish keyboards)
    table[ord("ۀ")] = "ه"  # U+06C0 heh with yeh above
    table[ord("ۃ")] = "ه"  # U+06C3 teh marbuta goal
    for i in range(10):
        table[0x0660 + i] = str(i)  # Arabic-Indic digits ٠–٩
        table[0x06F0 + i] = str(i)  # Extended (Persian/Urdu) digits ۰–۹
    return table


_FOLD_TABLE = _fold_table()
# str.translate with a dict boxes every non-Latin-1 code point into an int
# and looks it up (≈9 MB/s on Arabic).  The same table applied as one regex
# deletion plus a handful of C-level str.replace calls, each only when its
# letter occurs, is ≈5× faster and gives the identical result because no
# replacement produces a character that another entry touches.
_DELETE_RE = re.compile(
    "[" + "".join(re.escape(chr(k)) for k, v in _FOLD_TABLE.items() if v is None) + "]"
)
_REPLACEMENTS: tuple[tuple[str, str], ...] = tuple(
    (chr(k), v) for k, v in _FOLD_TABLE.items() if isinstance(v, str) and not v.isdigit()
)
_DIGIT_RE = re.compile("[\u0660-\u0669\u06f0-\u06f9]")  # ٠–٩ and ۰–۹
_DIGIT_TABLE = {k: v for k, v in _FOLD_TABLE.items() if isinstance(v, str) and v.isdigit()}
# Arabic presentation forms (U+FB50–U+FDFF, U+FE70–U+FEFF) and other
# compatibility characters only appear in copy-pasted PDF text; NFKC maps them
# to letters (ﻻ → لا, ﷺ → صلى الله عليه وسلم).  Checked first because NFKC on
# every message would cost more than the rest of fold.
_NEEDS_NFKC_RE = re.compile("[\ufb50-\ufdff\ufe70-\ufefe\u00a0-\u00bf\uff00-\uffef]")


def fold(text: str) -> str:
    """Matching form: no diacritics/tatweel, unified letter variants, ASCII digits.

    Idempotent: ``fold(fold(s)) == fold(s)``.

    >>> fold("إِلَى المَدْرَسَةِ ٣ مـــرات")
    'الي المدرسه 3 مرات'
    >>> fold("iPhone ١٥")
    'iphone 15'
    """
    if _NEEDS_NFKC_RE.search(text):
        text = unicodedata.normalize("NFKC", _stream_safe(text))
    elif not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", _stream_safe(text))
    text = _DELETE_RE.sub("", text)
    for src, dst in _REPLACEMENTS:
        if src in text:
            text = text.replace(src, dst)
    if _DIGIT_RE.search(text):
        text = text.translate(_DIGIT_TABLE)
    return text.casefold()


# Maghrebi Arabizi borrows French words with their accents («réclamation», «pièce»,
# «fièvre», «l'école»): without folding, [a-z] cuts «fièvre» into «fi» + «vre».
# Latin combining marks (U+0300–U+036F, left by NFD: é → e + U+0301) and the
# ligature œ are folded for matching only; the message as stored keeps them.
_LATIN_MARKS = re.compile("[\u0300-\u036f]")
_LIGATURES = str.maketrans({"œ": "oe", "æ": "ae"})
_ACCENTED = re.compile("[\u00c0-\u024f]")  # Latin-1 Supplement to Latin Extended-B


def latin_lower(text: str) -> str:
    """``text`` lowercased with its Latin accents folded, for finding Latin words.

    >>> latin_lower("Réclamation, la FIÈVRE, sœur")
    'reclamation, la fievre, soeur'
    """
    low = text.lower()
    if _ACCENTED.search(low) is None:  # nearly every message: nothing to fold
        return low
    decomposed = unicodedata.normalize("NFD", low.translate(_LIGATURES))
    return unicodedata.normalize("NFC", _LATIN_MARKS.sub("", decomposed))
