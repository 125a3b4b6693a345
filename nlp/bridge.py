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
# Enclitic pronouns a dialect word often carries (دوامكم، فلوسي، شلونك، حسابه،
# يوصلني) and the feminine plural a lexicon noun takes (كوبونات، جوالات).
_ENCLITICS = ("كم", "كو", "نا", "ها", "هم", "ات", "ني", "ك", "ي", "ه", "و")
# Below this many letters a word is too short to peel an enclitic from (مو + ك ≠ موك).
_MIN_STEM_FOR_ENCLITIC = 3
# Longest dialect phrase in the lexicon, in words.
_MAX_PHRASE = 3
# Distinct words whose forms, stems and lookup orders are kept (each a few
# hundred bytes): a message's words are looked up several times a turn (its
# phrases, its verbs, the dialect evidence) and most recur across turns.
_WORD_CACHE = 1 << 15
# Dialect verb prefixes on the imperfect: Egyptian/Levantine بـ (بيوصل، بتقبلوا),
# Egyptian future هـ (هترجع), Moroccan كـ (كتقبلو، كيخدم).  Without them the verb is
# the MSA imperfect (يوصل، تقبلوا، ترجع).  Only before ي/ت/ن and at least four
# letters, so بيت or كتب are left alone.
_VERB_PREFIX = re.compile("^[بهك](?=[يتن][\u0621-\u064a]{3})")


# Verb entries (``~stem`` in bridge.tsv) match every person of the verb.  Prefixes:
# the imperfect's person letter (ي/ت/ن/ا), the passive انـ (انشحن، انقفل); suffixes:
# subject and object pronouns of both tenses, and Moroccan ‑ات (تصيفطات «it was sent»).
_PERSON = "يتنا"
# ‑ل + pronoun, "to/for me, you, us": «نعيطلكم», «نفتحلكن», «بتبعتلنا».
_VERB_SUFFIXES = ("تولي", "ولكم", "ولنا", "ولي", "يلي", "تونا", "ناها", "لكم", "لكن", "لنا",
                  "لهم", "وها", "وني", "ون", "وا", "ين",
                  "تو", "تي", "تم", "نا", "ها", "هم", "كم", "ني", "لي", "لك", "ات", "و", "ي",
                  "ت", "ه", "ك")
_MIN_VERB_STEM = 3
# Region tags that say a word is not regional: shared by all, or MSA itself.
_SHARED = frozenset({"all", "msa", ""})
# Readings of an Arabizi word tried against the lexicon, and given as the
# word's Arabic forms when none is an entry (nlp.arabizi_spell orders them).
_ARABIZI_LOOKUPS = 12
_ARABIZI_READINGS = 6


# French elision, as Maghrebi Arabizi keeps it: «l'ordinateur», «d'identité».
_ELISION = re.compile("^[ld]'(?=[a-z]{2})")


@lru_cache(maxsize=_WORD_CACHE)
def _latin_forms(word: str) -> frozenset[str]:
    """A Latin word as written and without an elided article (an entry «l'eau» wins).

    >>> sorted(_latin_forms("l'ordinateur"))
    ["l'ordinateur", 'ordinateur']
    """
    return frozenset({word, _ELISION.sub("", word)})


def _weak_final(stem: str) -> str:
    """A defective verb's last letter unified: «بقا»، «بقى»، «بقي» → «بقي»."""
    return stem[:-1] + "ي" if stem and stem[-1] in "اي" else stem


@lru_cache(maxsize=_WORD_CACHE)
def verb_stems(word: str) -> frozenset[str]:
    """Candidate stems of a folded dialect verb form, to meet ``~stem`` entries.

    >>> sorted(s for s in verb_stems("كتصيفطو") if s == "صيفط")
    ['صيفط']
    >>> "عطي" in verb_stems("تعطون"), "لغي" in verb_stems("نلغيها"), "بقي" in verb_stems("كتبقاو")
    (True, True, True)
    """
    bases = set(_arabic_forms(word))
    for base in list(bases):
        # Egyptian and Maghrebi negation ما…ش: «ماوصلش», «تصلحاتش», «شارجيتش».
        if base.endswith("ش") and len(base) >= 5:
            bare = base[:-1]
            bases.update({bare, bare[2:]} if bare.startswith("ما") and len(bare) >= 5 else {bare})
    for base in list(bases):
        if base[:2] in ("ان", "ات") and len(base) >= 5:
            bases.add(base[2:])  # انفعل «انشحن» → «شحن», Egyptian اتفعل «اتقفل» → «قفل»
    for base in list(bases):
        if len(base) > _MIN_VERB_STEM and base[0] in _PERSON:
            bases.add(base[1:])
        elif len(base) == _MIN_VERB_STEM and base[0] in _PERSON:
            bases.add(base[1:] + base[-1])  # «اسد» (أسدّ) → «سدد»
    out = set()
    for base in bases:
        out.add(_weak_final(base))
        for suffix in _VERB_SUFFIXES:
            if base.endswith(suffix):
                stem = base[: -len(suffix)]
                if suffix == "ت" and stem.endswith("ا"):
                    continue  # «لغات» is the plural ‑ات of «لغة», not «لغا» + ت
                if len(stem) >= _MIN_VERB_STEM:
                    out.add(_weak_final(stem))
                elif len(stem) == _MIN_VERB_STEM - 1 and suffix[0] == "و":
                    # Only before the plural ‑و(ن/ا): «كتسدو» → سد → «سدد» (a doubled
                    # verb), «تعطون» → عط → «عطي» (the ي falls); never before ت/ي,
                    # where «وجدت», «مدى» would turn into جدد, مدد.
                    out.add(stem + stem[-1])
                    out.add(stem + "ي")
    return frozenset(stem for stem in out if len(stem) >= _MIN_VERB_STEM)


_MSA_PREFIXES = ("", "ي", "ت", "ن", "ا", "سي", "ست", "سن", "م")
_MSA_SUFFIXES = ("", "ون", "وا", "ين", "ان", "ت", "نا", "تم", "تن", "ه", "ها", "هم", "ي", "ك",
                 "كم", "ني", "وه", "وها", "وهم", "يه")


def _msa_form(token: str, stem: str) -> bool:
    """Could ``token`` be an MSA form of the verb ``stem`` (person prefix, MSA suffix)?

    >>> _msa_form("يرجع", "رجع"), _msa_form("ترجعولي", "رجع"), _msa_form("اتقفل", "قفل")
    (True, False, False)
    """
    bare = strip_proclitics(token)
    # A defective verb drops or changes its ي: «يلغون», «اشتراه», «اشترى» from «شتري».
    stems = {stem, stem[:-1], stem[:-1] + "ا"} if stem.endswith("ي") else {stem}
    return any(f"{p}{s}{x}" in (token, bare)
               for s in stems for p in _MSA_PREFIXES for x in _MSA_SUFFIXES)


@lru_cache(maxsize=_WORD_CACHE)
def _arabic_forms(word: str) -> frozenset[str]:
    """The folded word, without its proclitic, without a dialect verb prefix:
    «والحين» → {والحين, حين}; «بيصير» → {بيصير, يصير}.

    A two-letter rest after the article is no entry's word: the article never
    comes before كم or شو, so «الجم» (the gym) is not Iraqi «جم» (كم).

    >>> sorted(_arabic_forms("الجم")), sorted(_arabic_forms("والحين"))
    (['الجم'], ['حين', 'والحين'])
    """
    bare = strip_proclitics(word)
    forms = {word} if len(bare) < _MIN_STRIPPED and "ال" in word[: -len(bare) or None] \
        else {word, bare}
    return frozenset(forms | {_VERB_PREFIX.sub("", w) for w in forms})


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
                                       or not _msa_form(token, stem)):
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
        if any(_VERB_PREFIX.sub("", t) != t and self._lookup_key([{_VERB_PREFIX.sub("", t)}],
                                                                 enclitics=True)
               for t in tokens):
            return True
        if any((stem := self._verb(t)) is not None and stem in self.regional_verbs
               for t in tokens):
            return True
        words = [_arabic_forms(w) for w in tokens]
        # English words the lexicon lists for Arabizi («order», «balance») are no
        # dialect evidence in an English sentence.
        english = sum(arabizi_word_score(w) for w in latin_words) < 0
        latin = [] if english else [_latin_forms(w) for w in latin_words]
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
        arabic = [_arabic_forms(w) for w in tokens]
        yield from self._scan(arabic, enclitics=True)
        for token, forms in zip(tokens, arabic, strict=True):
            if self._lookup([forms], enclitics=True) is not None:
                continue
            stem = self._verb(token)
            if stem is not None:
                yield self.verbs[stem]  # «كيصيفطو» → ~صيفط → أرسل شحن
                continue
            bare = _VERB_PREFIX.sub("", token)
            if bare != token:
                yield (bare,)  # «كتقبلو» → «تقبلو»: without its prefix, the MSA verb
            elif token in borrowed:
                yield (token,)  # «وگت» → «وقت», «الگيمة» → «القيمة»: the MSA spelling
            elif (seated := _hamza_seat(strip_proclitics(token))) is not None:
                yield (seated,)  # «زايدة» → «زائدة», «السايق» → «سائق»
        latin_words = _LATIN_WORD.findall(latin_lower(text))
        latin = [_latin_forms(w) for w in latin_words]
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
            if self._lookup([_latin_forms(word)], enclitics=False) is not None:
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
            hit = self._lookup([_arabic_forms(reading)], enclitics=True)
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
            own = _longest_first(frozenset(options))
            if enclitics and last:
                # The word as written wins over a peeled form: «فيني» (can I) is
                # not «فين» (where) + ي.
                peeled = [(*c, p) for c in candidates for p in _peeled(frozenset(options))]
            candidates = [(*c, w) for c in candidates for w in own]
        for key in (*candidates, *peeled):
            if key in self.entries:
                return key
        return None


# Dialect writing drops the hamza's seat after a long ā: «فوايد، رسايل، سايق، زايد»
# for فوائد، رسائل، سائق، زائد.  Only inside a word (a letter on both sides).
# Not before a final ه/ا: «حمايه، نهايه، قضايا» are written so in MSA too.
_ALEF_YEH = re.compile("(?<=[\u0621-\u064a])اي(?=[\u0621-\u064a])(?![هوا]$)")


def _hamza_seat(word: str) -> str | None:
    """The MSA spelling of a word written without its hamza seat, or None.

    >>> _hamza_seat("زايده"), _hamza_seat("ايام"), _hamza_seat("حمايه"), _hamza_seat("دفع")
    ('زائده', None, None, None)
    """
    seated = _ALEF_YEH.sub("ائ", word)
    return seated if seated != word else None


@lru_cache(maxsize=_WORD_CACHE)
def _longest_first(options: frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted(options, key=lambda w: (-len(w), w)))


@lru_cache(maxsize=_WORD_CACHE)
def _peeled(options: frozenset[str]) -> tuple[str, ...]:
    """The forms without an enclitic that are not forms as written, sorted; ‑ني ("me":
    «وصلني») first, then ‑ي alone (a noun ending in ن: «تلفوني»): ('تلفو', 'تلفون')."""
    first = sorted({_peel(w) for w in options} - options)
    my = sorted({w[:-1] for w in options if w.endswith("ني")
                 and len(w) - 1 > _MIN_STEM_FOR_ENCLITIC} - options - set(first))
    return tuple(first + my)


def _peel(word: str) -> str:
    for suffix in _ENCLITICS:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_STEM_FOR_ENCLITIC:
            return word[: -len(suffix)]
    return word


# A proclitic-stripped key shorter than this (in letters, per word) is another
# word, not the entry without its و/ب/ل: «بكم» (for how much) → «كم» (how many),
# «لبس» (clothes) → «بس» (only).
_MIN_STRIPPED = 3


def _key(phrase: str) -> tuple[tuple[str, ...], tuple[str, ...] | None]:
    """Lookup keys of one lexicon phrase: folded as written, and with proclitics
    stripped (``None`` when that is the same key or a too-short word)."""
    latin = latin_lower(phrase)
    if _LATIN_WORD.fullmatch(latin.replace(" ", "")):
        return tuple(latin.split()), None
    words = tuple(fold(clean(phrase)).translate(_BORROWED).split())
    stripped = tuple(strip_proclitics(w) for w in words)
    if stripped == words or any(len(w) < _MIN_STRIPPED for w in stripped):
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
            stem = _weak_final(fold(clean(fields[0][1:].strip())).translate(_BORROWED))
            if len(stem) == _MIN_VERB_STEM - 1:
                stem += stem[-1]  # «~سد» (سدّ) is written doubled: «سدد»
            if len(stem) < _MIN_VERB_STEM or " " in stem:
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
