"""Dialect → MSA bridge: the MSA words a policy text would use for a customer's dialect words.

Customers write «وش»، «بكام»، «خربان»، «ببلاش»; a knowledge base written in MSA
says «ماذا»، «سعر»، «معطل»، «مجاني».  The lexicon (``data/bridge.tsv``, curated
data, not code) maps support-domain dialect words and phrases of the five
regions, and their common Arabizi spellings, to MSA words.  Search uses the
result as *extra* query words, weighted below the customer's own words; the
index never changes.

    >>> dialect_to_msa("الجهاز خربان، يشمله الضمان؟")
    ['معطل', 'تالف', 'عطل', 'يشمل', 'ضمان']
    >>> dialect_to_msa("بكام التوصيل لجدة؟ ابي ادفع كاش")
    ['كم', 'سعر', 'توصيل', 'أريد', 'نقدا', 'نقدي', 'الدفع', 'عند', 'الاستلام']
    >>> dialect_to_msa("3ayez a3raf el as3ar")
    ['أريد', 'سعر', 'أسعار', 'اعرف', 'ال']
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from nlp.arabizi import arabizi_to_arabic, looks_arabizi
from nlp.clitics import strip_proclitics
from nlp.normalize import clean, fold

__all__ = ["Bridge", "dialect_to_msa", "has_dialect_words", "load_bridge"]

# Arabic words (after fold) and Latin/Arabizi words (digits 2/3/5/7/8/9 are letters there).
_ARABIC_WORD = re.compile("[\u0621-\u064a]+")
_LATIN_WORD = re.compile(r"[a-z0-9']+")
_ARABIZI_DIGIT = re.compile(r"[a-z][235789]|[235789][a-z]")
# Enclitic pronouns a dialect word often carries: دوامكم، فلوسي، شلونك، حسابه.
_ENCLITICS = ("كم", "كو", "نا", "ها", "هم", "ك", "ي", "ه", "و")
# Below this many letters a word is too short to peel an enclitic from (مو + ك ≠ موك).
_MIN_STEM_FOR_ENCLITIC = 3
# Longest dialect phrase in the lexicon, in words.
_MAX_PHRASE = 3
# Dialect verb prefixes on the imperfect: Egyptian/Levantine بـ (بيوصل، بتقبلوا),
# Egyptian future هـ (هترجع), Moroccan كـ (كتقبلو، كيخدم).  Without them the verb is
# the MSA imperfect (يوصل، تقبلوا، ترجع).  Only before ي/ت/ن and at least four
# letters, so بيت or كتب are left alone.
_VERB_PREFIX = re.compile("^[بهك](?=[يتن][\u0621-\u064a]{3})")


def _arabic_forms(word: str) -> set[str]:
    """The folded word, without its proclitic, without a dialect verb prefix:
    «والحين» → {والحين, حين}; «بيصير» → {بيصير, يصير}."""
    forms = {word, strip_proclitics(word)}
    return forms | {_VERB_PREFIX.sub("", w) for w in forms}


@dataclass(frozen=True, slots=True)
class Bridge:
    """The lexicon, keyed by folded phrase (a tuple of words)."""

    entries: Mapping[tuple[str, ...], tuple[str, ...]]
    # Entries said in some regions only (not tagged ``all``): evidence the text is dialect.
    regional: frozenset[tuple[str, ...]] = frozenset()

    def has_dialect_words(self, text: str) -> bool:
        """Does ``text`` use a word the lexicon knows as regional (not shared with MSA)?"""
        folded = fold(clean(text))
        tokens = _ARABIC_WORD.findall(folded)
        # A dialect verb prefix on a verb the lexicon knows: «بيغطي»، «كتقبلو».
        if any(_VERB_PREFIX.sub("", t) != t and self._lookup_key([{_VERB_PREFIX.sub("", t)}],
                                                                 enclitics=True)
               for t in tokens):
            return True
        words = [_arabic_forms(w) for w in tokens]
        latin = [{w} for w in _LATIN_WORD.findall(text.lower())]
        for forms, enclitics in ((words, True), (latin, False)):
            for start in range(len(forms)):
                for size in range(min(_MAX_PHRASE, len(forms) - start), 0, -1):
                    key = self._lookup_key(forms[start : start + size], enclitics=enclitics)
                    if key is not None and key in self.regional:
                        return True
        return False

    def expand(self, text: str) -> list[str]:
        """MSA words for the dialect words of ``text``, first occurrence order, no repeats."""
        out: dict[str, None] = {}
        for msa in self._matches(text):
            for word in msa:
                out.setdefault(word, None)
        return list(out)

    def _matches(self, text: str) -> Iterator[tuple[str, ...]]:
        folded = fold(clean(text))
        tokens = _ARABIC_WORD.findall(folded)
        arabic = [_arabic_forms(w) for w in tokens]
        yield from self._scan(arabic, enclitics=True)
        for token, forms in zip(tokens, arabic, strict=True):
            bare = _VERB_PREFIX.sub("", token)
            if bare != token and self._lookup([forms], enclitics=True) is None:
                yield (bare,)  # «كتقبلو» → «تقبلو»: without its prefix, the MSA verb
        latin_words = _LATIN_WORD.findall(text.lower())
        latin = [{w} for w in latin_words]
        yield from self._scan(latin, enclitics=False)
        # Arabizi: the same word in Arabic letters meets the Arabic entries
        # («3ayez» → عايز → أريد), and is itself what an Arabic text would say
        # («yom» → يوم).  A word with a digit-letter (3, 7, 2…) is Arabizi; so is
        # a word alone (no context to tell), at worst one useless extra term.
        arabizi = len(latin_words) == 1 or (bool(latin_words) and looks_arabizi(latin_words))
        for word in latin_words:
            if self._lookup([{word}], enclitics=False) is not None:
                continue
            if not (arabizi or _ARABIZI_DIGIT.search(word)):
                continue
            spelled = fold(clean(arabizi_to_arabic(word)))
            if not _ARABIC_WORD.fullmatch(spelled):
                continue
            hit = self._lookup([_arabic_forms(spelled)], enclitics=True)
            yield hit if hit is not None else (spelled,)

    def _scan(self, words: list[set[str]], *, enclitics: bool) -> Iterator[tuple[str, ...]]:
        for start in range(len(words)):
            for size in range(min(_MAX_PHRASE, len(words) - start), 0, -1):
                hit = self._lookup(words[start : start + size], enclitics=enclitics)
                if hit is not None:
                    yield hit

    def _lookup(self, forms: list[set[str]], *, enclitics: bool) -> tuple[str, ...] | None:
        key = self._lookup_key(forms, enclitics=enclitics)
        return None if key is None else self.entries[key]

    def _lookup_key(self, forms: list[set[str]], *, enclitics: bool) -> tuple[str, ...] | None:
        candidates: list[tuple[str, ...]] = [()]
        for i, options in enumerate(forms):
            last = i == len(forms) - 1
            grown = set(options)
            if enclitics and last:
                grown |= {_peel(w) for w in options}
            # Sorted: set order varies between processes, the result must not.
            candidates = [(*c, w) for c in candidates for w in sorted(grown)]
        for key in candidates:
            if key in self.entries:
                return key
        return None


def _peel(word: str) -> str:
    for suffix in _ENCLITICS:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM_FOR_ENCLITIC:
            return word[: -len(suffix)]
    return word


def _key(phrase: str) -> list[tuple[str, ...]]:
    """Lookup keys of one lexicon phrase: folded, and with proclitics stripped."""
    if _LATIN_WORD.fullmatch(phrase.replace(" ", "").lower()):
        return [tuple(phrase.lower().split())]
    words = fold(clean(phrase)).split()
    return sorted({tuple(words), tuple(strip_proclitics(w) for w in words)})


def parse_bridge(text: str) -> Bridge:
    """Build a :class:`Bridge` from TSV text (``dialect<TAB>msa[<TAB>regions]``).

    >>> parse_bridge("# comment\\nخربان\\tمعطل\\tgulf").expand("خربانة؟ لا، خربان")
    ['معطل']
    """
    entries: dict[tuple[str, ...], tuple[str, ...]] = {}
    regional: set[tuple[str, ...]] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < 2 or not fields[0].strip() or not fields[1].strip():
            raise ValueError(f"bridge.tsv:{number}: expected 'dialect<TAB>msa', got {line!r}")
        msa = tuple(fields[1].split())
        for key in _key(fields[0].strip()):
            # A phrase listed twice keeps both MSA renderings, in file order.
            merged = dict.fromkeys(entries.get(key, ()) + msa)
            entries[key] = tuple(merged)
            regions = {r.strip() for r in fields[2].split(",")} if len(fields) > 2 else set()
            if regions - {"all", ""}:
                regional.add(key)
    return Bridge(entries, frozenset(regional))


@lru_cache(maxsize=1)
def load_bridge() -> Bridge:
    """The shipped lexicon (``nlp/data/bridge.tsv``), parsed once per process."""
    raw = resources.files("nlp").joinpath("data/bridge.tsv").read_text("utf-8")
    return parse_bridge(raw)


def dialect_to_msa(text: str) -> list[str]:
    """MSA words for the dialect (and Arabizi) support words in ``text``; [] for plain MSA.

    >>> dialect_to_msa("وين فرعكم؟ وامتى تفتحون؟")
    ['أين', 'متى', 'مفتوح', 'ساعات', 'العمل']
    >>> dialect_to_msa("ما هي سياسة الاسترجاع؟")
    ['إرجاع', 'استرداد']
    """
    return load_bridge().expand(text)


def has_dialect_words(text: str) -> bool:
    """Does ``text`` use regional dialect words (the lexicon's, not its MSA-shared ones)?

    >>> has_dialect_words("الضمان بيغطي ده؟"), has_dialect_words("هل يشمل الضمان الكسر؟")
    (True, False)
    """
    return load_bridge().has_dialect_words(text)
