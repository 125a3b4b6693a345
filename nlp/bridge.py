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
    >>> dialect_to_msa("3ayez a3raf el as3ar")[:5]
    ['أريد', 'سعر', 'أسعار', 'اعرف', 'اعراف']
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from nlp.arabizi import arabizi_to_arabic, arabizi_word_score, looks_arabizi
from nlp.arabizi_spell import spellings, split_article
from nlp.bridge_forms import (
    MIN_STRIPPED,
    MIN_VERB_STEM,
    VERB_PREFIX,
    arabic_forms,
    hamza_seat,
    latin_forms,
    longest_first,
    msa_form,
    peeled_forms,
    verb_stems,
    weak_final,
)
from nlp.clitics import strip_proclitics
from nlp.normalize import clean, fold, latin_lower

__all__ = ["Bridge", "dialect_to_msa", "has_dialect_words", "lexicon_latin_word", "load_bridge"]

# Arabic words (after fold) and Latin/Arabizi words (digits 2/3/5/7/8/9 are letters there).
_ARABIC_WORD = re.compile("[\u0621-\u064a]+")
_LATIN_WORD = re.compile(r"[a-z0-9']+")
_ARABIZI_DIGIT = re.compile(r"[a-z][235789]|[235789][a-z]")
# Letters dialect writing borrows from Persian/Urdu, outside U+0621–U+064A: Iraqi and
# Gulf گ (U+06AF, the g of «اگدر» = أقدر, from ق), چ (U+0686, «چم» = كم), Maghrebi
# ڤ (U+06A4) and پ (U+067E).  Mapped to the letter they stand for before matching,
# so «اگدر» is one word, not «ا» + «در».
_BORROWED_WORD = re.compile("[\u0621-\u064a\u067e\u0686\u06a4\u06af]+")
_BORROWED = str.maketrans({"\u06af": "ق", "\u0686": "ك", "\u06a4": "ف", "\u067e": "ب"})
# Longest dialect phrase in the lexicon, in words.
_MAX_PHRASE = 3
# Region tags that say a word is not regional: shared by all, or MSA itself.
_SHARED = frozenset({"all", "msa", ""})
# Readings of an Arabizi word tried against the lexicon, and given as the
# word's Arabic forms when none is an entry (nlp.arabizi_spell orders them).
_ARABIZI_LOOKUPS = 12
_ARABIZI_READINGS = 6


@dataclass(frozen=True, slots=True)
class Bridge:
    """The lexicon, keyed by folded phrase (a tuple of words)."""

    entries: Mapping[tuple[str, ...], tuple[str, ...]]
    # Entries said in some regions only (not tagged ``all``): evidence the text is dialect.
    regional: frozenset[tuple[str, ...]] = frozenset()
    # Verb stems (``~stem`` entries): every person and tense of the verb matches.
    verbs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    regional_verbs: frozenset[str] = frozenset()
    # ``~stem`` entries tagged ``msa``: an MSA synonym family (يحتسب → تفرض رسوم),
    # matched on MSA forms too, yet no evidence of dialect.
    synonym_verbs: frozenset[str] = frozenset()

    def _verb(self, token: str) -> str | None:
        """The ``~stem`` entry a folded token is a form of, if any (sorted: deterministic).

        A stem tagged ``all`` (the verb is MSA too: رجع، وصل، شحن) matches only a
        form MSA does not have — «ترجعولي», «بيوصل», «اتقفل», «انشحن» — so an MSA
        question («متى يرجع تاريخ…») is not expanded.  A regional stem (صيفط، خابر)
        matches every form."""
        if not self.verbs:
            return None
        for stem in sorted(verb_stems(token)):
            if stem in self.verbs and (stem in self.regional_verbs or stem in self.synonym_verbs
                                       or not msa_form(token, stem)):
                return stem
        return None

    def has_dialect_words(self, text: str) -> bool:
        """Does ``text`` use a word the lexicon knows as regional (not shared with MSA)?"""
        folded = fold(clean(text))
        if folded != folded.translate(_BORROWED):
            return True  # گ/چ/ڤ/پ: Iraqi, Gulf or Maghrebi writing
        tokens = _ARABIC_WORD.findall(folded)
        latin_words = _LATIN_WORD.findall(latin_lower(text))
        if len(latin_words) > len(tokens) and looks_arabizi(latin_words):
            # Arabizi is how dialect is typed, never MSA: «shgad y9eer el taghleef?»
            # names no lexicon word, yet no policy is written that way.
            return True
        # A dialect verb prefix on a verb the lexicon knows: «بيغطي»، «كتقبلو».
        if any(VERB_PREFIX.sub("", t) != t and self._lookup_key([{VERB_PREFIX.sub("", t)}],
                                                                 enclitics=True)
               for t in tokens):
            return True
        if any((stem := self._verb(t)) is not None and stem in self.regional_verbs
               for t in tokens):
            return True
        words = [arabic_forms(w) for w in tokens]
        # English words the lexicon lists for Arabizi («order», «balance») are no
        # dialect evidence in an English sentence.
        english = sum(arabizi_word_score(w) for w in latin_words) < 0
        latin = [] if english else [latin_forms(w) for w in latin_words]
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
        folded = fold(clean(text)).translate(_BORROWED)
        tokens = _ARABIC_WORD.findall(folded)
        # Words written with گ/چ/ڤ/پ: the index keys (nlp.keys) keep those letters,
        # so the word's ق/ك/ف/ب spelling is what meets an MSA document.
        borrowed = {w.translate(_BORROWED) for w in _BORROWED_WORD.findall(fold(clean(text)))
                    if w != w.translate(_BORROWED)}
        arabic = [arabic_forms(w) for w in tokens]
        yield from self._scan(arabic, enclitics=True)
        for token, forms in zip(tokens, arabic, strict=True):
            if self._lookup([forms], enclitics=True) is not None:
                continue
            stem = self._verb(token)
            if stem is not None:
                yield self.verbs[stem]  # «كيصيفطو» → ~صيفط → أرسل شحن
                continue
            bare = VERB_PREFIX.sub("", token)
            if bare != token:
                yield (bare,)  # «كتقبلو» → «تقبلو»: without its prefix, the MSA verb
            elif token in borrowed:
                yield (token,)  # «وگت» → «وقت», «الگيمة» → «القيمة»: the MSA spelling
            elif (seated := hamza_seat(strip_proclitics(token))) is not None:
                yield (seated,)  # «زايدة» → «زائدة», «السايق» → «سائق»
        latin_words = _LATIN_WORD.findall(latin_lower(text))
        latin = [latin_forms(w) for w in latin_words]
        yield from self._scan(latin, enclitics=False)
        # Arabizi: the same word in Arabic letters meets the Arabic entries
        # («3ayez» → عايز → أريد), and is itself what an Arabic text would say
        # («yom» → يوم).  A word with a digit-letter (3, 7, 2…) is Arabizi; so is
        # a word alone (no context to tell), at worst one useless extra term.
        # A message mostly in Latin letters with no English majority is read as
        # Arabizi too («kam marra agdar asawi motalaba» has no digit and no
        # lexicon word): its Arabic readings only count where a document or a
        # sentence holds them.
        arabizi = len(latin_words) == 1 or (bool(latin_words) and (
            looks_arabizi(latin_words)
            or (len(tokens) < len(latin_words)
                and sum(arabizi_word_score(w) for w in latin_words) >= 0)))
        for word in latin_words:
            if self._lookup([latin_forms(word)], enclitics=False) is not None:
                continue
            if not (arabizi or _ARABIZI_DIGIT.search(word)):
                continue
            yield from self._arabizi_word(word)

    def knows_latin(self, word: str) -> bool:
        """Is the Latin word a lexicon entry, or does one of its readings meet one?

        >>> b = load_bridge()
        >>> b.knows_latin("emta"), b.knows_latin("twaslon"), b.knows_latin("tintehi")
        (True, True, False)
        """
        low = latin_lower(word)
        if self._lookup([{low}], enclitics=False) is not None:
            return True
        return self._arabizi_hit(low) is not None

    def _arabizi_readings(self, word: str) -> list[str]:
        spelled = fold(clean(arabizi_to_arabic(word)))
        readings = [spelled] if _ARABIC_WORD.fullmatch(spelled) else []
        if sum(ch.isalpha() for ch in word) > 2:  # «el», «fi», «3a»: the one reading
            readings += [r for r in (fold(x) for x in spellings(split_article(word)))
                         if r != spelled and _ARABIC_WORD.fullmatch(r)]
        return readings

    def _arabizi_hit(self, word: str) -> tuple[str, ...] | None:
        for reading in self._arabizi_readings(word)[:_ARABIZI_LOOKUPS]:
            hit = self._lookup([arabic_forms(reading)], enclitics=True)
            if hit is None and (stem := self._verb(reading)) is not None:
                hit = self.verbs[stem]
            if hit is not None:
                return hit
        return None

    def _arabizi_word(self, word: str) -> Iterator[tuple[str, ...]]:
        """An Arabizi word the Latin entries lack, in Arabic letters.

        Its cheapest readings (``nlp.arabizi_spell``) meet the Arabic entries
        and verbs first: «twaslon» → توصلون → ~وصل, though the single
        transliteration is «توسلون».  Failing that, the word's first
        ``_ARABIZI_READINGS`` readings are the words a document could hold
        («noqat» → نقت، نقط، نقاط …): a sentence or record holding none of them
        is not matched by any."""
        hit = self._arabizi_hit(word)
        yield hit if hit is not None else tuple(self._arabizi_readings(word)[:_ARABIZI_READINGS])

    def _scan(self, words: Sequence[AbstractSet[str]], *,
              enclitics: bool) -> Iterator[tuple[str, ...]]:
        for start in range(len(words)):
            for size in range(min(_MAX_PHRASE, len(words) - start), 0, -1):
                hit = self._lookup(words[start : start + size], enclitics=enclitics)
                if hit is not None:
                    yield hit

    def _lookup(self, forms: Sequence[AbstractSet[str]], *,
                enclitics: bool) -> tuple[str, ...] | None:
        key = self._lookup_key(forms, enclitics=enclitics)
        return None if key is None else self.entries[key]

    def _lookup_key(self, forms: Sequence[AbstractSet[str]], *,
                    enclitics: bool) -> tuple[str, ...] | None:
        candidates: list[tuple[str, ...]] = [()]
        peeled: list[tuple[str, ...]] = []
        for i, options in enumerate(forms):
            last = i == len(forms) - 1
            # Longest first, the word as written before its stripped forms («لإيمتى»،
            # until when, is an entry before «إيمتى», when); sorted: set order
            # varies between processes, the result must not.
            own = longest_first(frozenset(options))
            if enclitics and last:
                # The word as written wins over a peeled form: «فيني» (can I) is
                # not «فين» (where) + ي.
                peeled = [(*c, p) for c in candidates for p in peeled_forms(frozenset(options))]
            candidates = [(*c, w) for c in candidates for w in own]
        for key in (*candidates, *peeled):
            if key in self.entries:
                return key
        return None


def _key(phrase: str) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """Lookup keys of one lexicon phrase: folded as written, and with proclitics
    stripped (``None`` when that is the same key or a too-short word)."""
    latin = latin_lower(phrase)
    if _LATIN_WORD.fullmatch(latin.replace(" ", "")):
        return tuple(latin.split()), None
    words = tuple(fold(clean(phrase)).translate(_BORROWED).split())
    stripped = tuple(strip_proclitics(w) for w in words)
    if stripped == words or any(len(w) < MIN_STRIPPED for w in stripped):
        return words, None
    return words, stripped


def parse_bridge(text: str) -> Bridge:
    """Build a :class:`Bridge` from TSV text (``dialect<TAB>msa[<TAB>regions]``).

    A dialect field ``~stem`` is a verb: «~صيفط» matches صيفطت، نصيفط، كيصيفطو، تصيفطات.
    Region ``msa`` marks an MSA synonym family: a policy may say «تفرض» where an
    MSA question says «تحتسب»; like ``all`` it is no dialect evidence, and a
    ``~stem`` tagged ``msa`` also matches the verb's MSA forms (يحتسب، تحتسبون).

    >>> parse_bridge("# comment\\nخربان\\tمعطل\\tgulf").expand("خربانة؟ لا، خربان")
    ['معطل']
    """
    entries: dict[tuple[str, ...], tuple[str, ...]] = {}
    regional: set[tuple[str, ...]] = set()
    verbs: dict[str, tuple[str, ...]] = {}
    regional_verbs: set[str] = set()
    synonym_verbs: set[str] = set()
    stripped_keys: dict[tuple[str, ...], list[tuple[tuple[str, ...], set[str], bool]]] = {}
    written_keys = {_key(line.split("\t")[0].strip())[0] for line in text.splitlines()
                    if line.strip() and not line.startswith(("#", "~")) and "\t" in line}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < 2 or not fields[0].strip() or not fields[1].strip():
            raise ValueError(f"bridge.tsv:{number}: expected 'dialect<TAB>msa', got {line!r}")
        msa = tuple(fields[1].split())
        regions = {r.strip() for r in fields[2].split(",")} if len(fields) > 2 else set()
        if fields[0].startswith("~"):
            stem = weak_final(fold(clean(fields[0][1:].strip())).translate(_BORROWED))
            if len(stem) == MIN_VERB_STEM - 1:
                stem += stem[-1]  # «~سد» (سدّ) is written doubled: «سدد»
            if len(stem) < MIN_VERB_STEM or " " in stem:
                raise ValueError(f"bridge.tsv:{number}: a ~verb stem is one word of 3+ letters")
            verbs[stem] = tuple(dict.fromkeys(verbs.get(stem, ()) + msa))
            if regions - _SHARED:
                regional_verbs.add(stem)
            if "msa" in regions:
                synonym_verbs.add(stem)
            continue
        # «چم» read as «كم» is the MSA word: a borrowed letter is itself the dialect
        # evidence (has_dialect_words sees it in the text), the key is not.
        borrowed = fields[0] != fields[0].translate(_BORROWED)
        written, stripped = _key(fields[0].strip())
        for key in (written,) if stripped is None else (written, stripped):
            if key != written:
                stripped_keys.setdefault(key, []).append((msa, regions, borrowed))
                continue
            # A phrase listed twice keeps both MSA renderings, in file order.
            entries[key] = tuple(dict.fromkeys(entries.get(key, ()) + msa))
            if regions - _SHARED and not borrowed:
                regional.add(key)
    # A stripped key serves only where no entry is written so: «بشحال» (كم سعر) must
    # not lend «سعر» to «شحال», which is listed on its own (كم).
    for key, found in stripped_keys.items():
        if key in written_keys:
            continue
        for msa, regions, borrowed in found:
            entries[key] = tuple(dict.fromkeys(entries.get(key, ()) + msa))
            if regions - _SHARED and not borrowed:
                regional.add(key)
    return Bridge(entries, frozenset(regional), verbs, frozenset(regional_verbs),
                  frozenset(synonym_verbs))


@lru_cache(maxsize=1)
def load_bridge() -> Bridge:
    """The shipped lexicon (``nlp/data/bridge.tsv``), parsed once per process."""
    raw = resources.files("nlp").joinpath("data/bridge.tsv").read_text("utf-8")
    return parse_bridge(raw)


def dialect_to_msa(text: str) -> list[str]:
    """MSA words for the dialect (and Arabizi) support words in ``text``; [] for plain MSA.

    >>> dialect_to_msa("وين فرعكم؟ وامتى تفتحون؟")
    ['أين', 'متى', 'مفتوح', 'ساعات', 'العمل', 'تعمل', 'أوقات']
    >>> dialect_to_msa("ما هي سياسة الاسترجاع؟")
    ['إرجاع', 'استرداد']
    """
    return load_bridge().expand(text)


def has_dialect_words(text: str) -> bool:
    """Does ``text`` use regional dialect words (the lexicon's, not its MSA-shared ones)?

    >>> has_dialect_words("الضمان بيغطي ده؟"), has_dialect_words("هل يشمل الضمان الكسر؟")
    (True, False)
    >>> has_dialect_words("shgad y9eer el taghleef?"), has_dialect_words("what is the fee?")
    (True, False)
    """
    return load_bridge().has_dialect_words(text)


def lexicon_latin_word(word: str) -> bool:
    """Does the lexicon cover this Latin/Arabizi word (so a vocabulary guess is not needed)?

    >>> lexicon_latin_word("taba3i"), lexicon_latin_word("tintehi")
    (True, False)
    """
    return load_bridge().knows_latin(word)
