"""Word forms for cue matching (``words``) and for search (``search_keys``).

Both run the same pipeline — clean → tokenize → fold — and differ only in how
far they reduce a word: ``words`` removes proclitics only (the Majlis cue
lists are written as whole words: مشكله، موبايل), ``search_keys`` also removes
enclitics and inflectional suffixes and drops stopwords, so that BM25 sees
كتاب for والكتاب، كتابها، الكتب is left alone (no broken-plural analysis).

:data:`KeyFunction` is the one shape of a key function in the product: the
memory stores take one in their constructor (index and query must agree), the
offline responder and the tool registry match with one.
:func:`stem_and_surface_keys` is the built-in backend the memory stores index
with; ``nlp.backends.key_function`` chooses between it and camel-tools.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from weakref import WeakKeyDictionary

from nlp.arabizi import _word_to_arabic, looks_arabizi
from nlp.clitics import light_stem, strip_proclitics
from nlp.lexicon import DIALECT_FUNCTION_WORDS, ENGLISH_STOPWORDS, REQUEST_WORDS, STOPWORDS
from nlp.normalize import clean, fold
from nlp.number_words import number_words_to_digits
from nlp.tokens import TokenKind, typed_texts

__all__ = [
    "KEYS_VERSION",
    "KeyFunction",
    "content_keys",
    "keys_fingerprint",
    "register_fingerprint",
    "search_keys",
    "split_function_words",
    "stem_and_surface_keys",
    "stop_keys_for",
    "words",
]

# Text in, keys out (in text order, duplicates kept: BM25 counts them).
KeyFunction = Callable[[str], list[str]]

# The version of the keys this module (and nlp.camel, which shares its
# tokens, folding, stopwords and counts) gives a text.  BUMP IT IN THE SAME
# COMMIT as any change that makes some text key differently (folding,
# stemming, stopwords, number words, lexicon data): the memory stores record
# the fingerprint their rows were keyed with and `diwaniya migrate` re-keys
# every stored row when it differs (memory.rekey), so old rows stay findable.
#   1: before counts as digits (never recorded: a store with rows and no
#      fingerprint is taken to be older than any version);
#   2: counts as digits (nlp.number_words): «ثلاثة أيام» keys as «3 أيام»;
#   3: nouns whose ending only looks like a suffix stay whole (nlp.lexicon.STEM_KEPT):
#      «تلفون» keys as «تلفون», no longer «تلف» (damage).
KEYS_VERSION = 3

# Fingerprints of the key functions the product builds (builtin, camel per
# database); weak so a camel closure dropped by its caller is not kept alive.
_FINGERPRINTS: WeakKeyDictionary[KeyFunction, str] = WeakKeyDictionary()


def register_fingerprint(keys: KeyFunction, fingerprint: str) -> KeyFunction:
    """Name ``keys`` (a stable string with its version); returns ``keys``."""
    _FINGERPRINTS[keys] = fingerprint
    return keys


def keys_fingerprint(keys: KeyFunction) -> str | None:
    """The fingerprint of ``keys``, or ``None`` for a function nlp did not name.

    >>> keys_fingerprint(stem_and_surface_keys)
    'builtin/3'
    >>> keys_fingerprint(str.split) is None
    True
    """
    try:
        return _FINGERPRINTS.get(keys)
    except TypeError:  # not weak-referenceable (a builtin method): never named
        return None


# A turn folds and tokenises its message about four times (dialect, cues,
# the memory query and its function words, the offline responder's keys,
# facts): the tokens are remembered for the last few hundred texts, immutable.
_FOLDED_TEXTS = 256


@lru_cache(maxsize=_FOLDED_TEXTS)
def _folded_tokens(text: str) -> tuple[tuple[tuple[TokenKind, str], ...], bool]:
    """(kind, text) tokens of the folded text, and whether its Latin words are Arabizi."""
    toks = tuple(typed_texts(fold(clean(text))))
    latin = [t for k, t in toks if k is TokenKind.LATIN]
    return toks, bool(latin) and looks_arabizi(latin)


# Token kinds a count can span: «خمسه وعشرين», «3 ايام», Arabizi «talata ayam».
_COUNTABLE = (TokenKind.WORD, TokenKind.NUMBER, TokenKind.LATIN)
_DIGITS = re.compile(r"[0-9][0-9.,\u066b\u066c]*")
_LATIN = re.compile(r"[a-z0-9']+")


def _counts_as_digits(toks: Sequence[tuple[TokenKind, str]],
                      arabizi: bool) -> list[tuple[TokenKind, str]]:
    """Runs of word and number tokens through :func:`nlp.number_words.number_words_to_digits`.

    English words are left alone (only Arabizi Latin words are read as
    Arabic counts), so are hashtags and punctuation, which end a run.
    """
    out: list[tuple[TokenKind, str]] = []
    run: list[str] = []
    kept: list[tuple[TokenKind, str]] = []  # the run's tokens as they came

    def flush() -> None:
        rewritten = number_words_to_digits(run)
        if rewritten == run:  # no count (most runs): keep the tokens and their kinds
            out.extend(kept)
            run.clear()
            kept.clear()
            return
        for text in rewritten:
            kind = (TokenKind.NUMBER if _DIGITS.fullmatch(text)
                    else TokenKind.LATIN if _LATIN.fullmatch(text) else TokenKind.WORD)
            out.append((kind, text))
        run.clear()
        kept.clear()

    for kind, tok in toks:
        if kind in _COUNTABLE and (kind is not TokenKind.LATIN or arabizi):
            run.append(tok)
            kept.append((kind, tok))
        else:
            flush()
            out.append((kind, tok))
    flush()
    return out


def _hashtag_parts(tag: str) -> list[str]:
    return [p for p in tag[1:].split("_") if p]


def words(text: str) -> list[str]:
    """Folded whole words, proclitics (و/ف/ب/ك/ل/ال) stripped, nothing else removed.

    >>> words("هلا، عندي مشكلة في الموبايل")
    ['هلا', 'عندي', 'مشكله', 'في', 'موبايل']
    >>> words("shlonak 7abibi")
    ['شلونك', 'حبيبي']
    """
    toks, arabizi = _folded_tokens(text)
    out: list[str] = []
    for kind, tok in toks:
        if kind is TokenKind.WORD:
            out.append(strip_proclitics(tok))
        elif kind is TokenKind.LATIN:
            out.append(strip_proclitics(_word_to_arabic(tok)) if arabizi else tok)
        elif kind is TokenKind.NUMBER:
            out.append(tok)
        elif kind is TokenKind.HASHTAG:
            out.extend(strip_proclitics(p) for p in _hashtag_parts(tok))
    return out


def _latin_key(word: str) -> str:
    # Light English stemming: plural -s only (routers → router), never below
    # three letters and not -ss (access).
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def search_keys(text: str) -> list[str]:
    """Index and query keys: stems in order, duplicates kept, stopwords dropped.

    Counts are digits on both sides (:func:`nlp.number_words.number_words_to_digits`):
    «تلات تيام» and «3 أيام» give the same keys.

    >>> search_keys("ما هي عاصمة المملكة العربية السعودية؟")
    ['عاصم', 'مملك', 'عرب', 'سعود']
    >>> search_keys("والكتاب في المكتبة 3 Routers")
    ['كتاب', 'مكتب', '3', 'router']
    >>> search_keys("يرجع المبلغ خلال ثلاثة أيام") == search_keys("يرجع المبلغ خلال 3 ايام")
    True
    """
    folded, arabizi = _folded_tokens(text)
    toks = _counts_as_digits(folded, arabizi)
    out: list[str] = []
    stop = STOPWORDS
    for kind, tok in toks:
        if kind is TokenKind.WORD:
            w = tok
        elif kind is TokenKind.LATIN:
            if not arabizi:
                if tok not in ENGLISH_STOPWORDS:
                    out.append(_latin_key(tok))
                continue
            w = _word_to_arabic(tok)
        elif kind is TokenKind.NUMBER:
            out.append(tok)
            continue
        elif kind is TokenKind.HASHTAG:
            out.extend(light_stem(p) for p in _hashtag_parts(tok) if p not in stop)
            continue
        else:
            continue
        if w in stop:
            continue
        stem = light_stem(w)
        if stem not in stop:
            out.append(stem)
    return out


def stem_and_surface_keys(text: str) -> list[str]:
    """Stems (``search_keys``) then whole folded words (``words``), stopwords dropped.

    The memory stores' built-in keys, the same on index and query.  Stems give
    recall across inflections; the whole form lets an exact-form match outrank
    a mere shared stem.  Measured on ARCD with BM25 (bench/retrieval.py):
    +0.2 pt recall@1 and +0.8 pt recall@5 over stems alone.

    >>> stem_and_surface_keys("والكتابات في المكتبة")
    ['كتاب', 'مكتب', 'كتابات', 'مكتبه']
    """
    out = search_keys(text)
    out.extend(w for w in words(text) if w not in STOPWORDS)
    return out


def split_function_words(text: str) -> tuple[str, list[str]]:
    """``text`` without its dialect function words, and those words (folded).

    The words are :data:`~nlp.lexicon.DIALECT_FUNCTION_WORDS` (as written or
    after و/ف/ب/ل; Arabizi words in their Arabic reading): search gives their
    keys a low weight (memory.expansion) instead of dropping them.

    >>> split_function_words("بدي سكّر الحساب، ولازم ادفع؟")
    ('سكر الحساب ، ادفع ؟', ['بدي', 'ولازم'])
    >>> split_function_words("شو لون الزي؟")[1]
    []
    >>> split_function_words("abi a3raf el as3ar")[1]
    ['ابي']
    """
    toks, arabizi = _folded_tokens(text)
    kept: list[str] = []
    found: list[str] = []
    for kind, tok in toks:
        word = tok if kind is TokenKind.WORD else (
            _word_to_arabic(tok) if kind is TokenKind.LATIN and arabizi else "")
        # As written or after one conjunction/preposition letter (وبدي، ولازم),
        # never after the article: «الزي» is the uniform, «زي» "like".
        if word and (word in DIALECT_FUNCTION_WORDS
                     or (word[0] in "وفبل" and word[1:] in DIALECT_FUNCTION_WORDS)):
            found.append(word)
        else:
            kept.append(tok)
    return " ".join(kept), found


def content_keys(text: str, keys: KeyFunction, stop: Iterable[str]) -> list[str]:
    """Keys of ``text`` that carry content: not in ``stop``, longer than one letter.

    >>> content_keys("ابي اعرف سياسة الاسترجاع", search_keys, stop_keys_for(search_keys))
    ['اعرف', 'سياس', 'استرجاع']
    """
    stop_set = stop if isinstance(stop, (set, frozenset)) else set(stop)
    return [k for k in keys(text) if k not in stop_set and len(k) > 1]


@lru_cache(maxsize=32)
def stop_keys_for(keys: KeyFunction) -> frozenset[str]:
    """:data:`~nlp.lexicon.STOPWORDS` and :data:`~nlp.lexicon.REQUEST_WORDS`
    passed through ``keys``, so that any key function agrees with itself.

    Cached per key function: every turn builds a tool registry that asks again.

    >>> sorted(stop_keys_for(search_keys))[:3]
    ['ابغ', 'ابي', 'اريد']
    """
    return frozenset(keys(" ".join(sorted(STOPWORDS | REQUEST_WORDS))))


register_fingerprint(stem_and_surface_keys, f"builtin/{KEYS_VERSION}")
