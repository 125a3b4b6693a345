"""How the bridge reads a written word: the forms its lexicon lookups try.

A customer's word rarely appears in ``data/bridge.tsv`` as written: it carries
a proclitic («والحين»), a dialect verb prefix («بيصير»), an enclitic
(«تلفوني»), a person and pronoun suffixes on a verb entry (``~stem``), a French
elided article («l'ordinateur») or a hamza seat dropped («زايده»).  Each
function here is one such reading, cached per distinct word (a message's words
are looked up several times a turn and most recur across turns); nlp.bridge
decides which reading is an entry.

    >>> sorted(arabic_forms("والحين")), "عطي" in verb_stems("تعطون")
    (['حين', 'والحين'], True)
    >>> hamza_seat("زايده"), sorted(latin_forms("l'ordinateur"))
    ('زائده', ["l'ordinateur", 'ordinateur'])
"""

from __future__ import annotations

import re
from functools import lru_cache

from nlp.clitics import strip_proclitics

__all__ = ["MIN_STRIPPED", "MIN_VERB_STEM", "VERB_PREFIX", "WORD_CACHE", "arabic_forms",
           "hamza_seat", "latin_forms", "longest_first", "msa_form", "peeled_forms", "verb_stems",
           "weak_final"]


# Enclitic pronouns a dialect word often carries (دوامكم، فلوسي، شلونك، حسابه،
# يوصلني) and the feminine plural a lexicon noun takes (كوبونات، جوالات).
_ENCLITICS = ("كم", "كو", "نا", "ها", "هم", "ات", "ني", "ك", "ي", "ه", "و")
# Below this many letters a word is too short to peel an enclitic from (مو + ك ≠ موك).
_MIN_STEM_FOR_ENCLITIC = 3


# Distinct words whose forms, stems and lookup orders are kept (each a few
# hundred bytes): a message's words are looked up several times a turn (its
# phrases, its verbs, the dialect evidence) and most recur across turns.
WORD_CACHE = 1 << 15
# Dialect verb prefixes on the imperfect: Egyptian/Levantine بـ (بيوصل، بتقبلوا),
# Egyptian future هـ (هترجع), Moroccan كـ (كتقبلو، كيخدم).  Without them the verb is
# the MSA imperfect (يوصل، تقبلوا، ترجع).  Only before ي/ت/ن and at least four
# letters, so بيت or كتب are left alone.
VERB_PREFIX = re.compile("^[بهك](?=[يتن][\u0621-\u064a]{3})")


# Verb entries (``~stem`` in bridge.tsv) match every person of the verb.  Prefixes:
# the imperfect's person letter (ي/ت/ن/ا), the passive انـ (انشحن، انقفل); suffixes:
# subject and object pronouns of both tenses, and Moroccan ‑ات (تصيفطات «it was sent»).
_PERSON = "يتنا"
# ‑ل + pronoun, "to/for me, you, us": «نعيطلكم», «نفتحلكن», «بتبعتلنا».
_VERB_SUFFIXES = ("تولي", "ولكم", "ولنا", "ولي", "يلي", "تونا", "ناها", "لكم", "لكن", "لنا",
                  "لهم", "وها", "وني", "ون", "وا", "ين",
                  "تو", "تي", "تم", "نا", "ها", "هم", "كم", "ني", "لي", "لك", "ات", "و", "ي",
                  "ت", "ه", "ك")
MIN_VERB_STEM = 3


# French elision, as Maghrebi Arabizi keeps it: «l'ordinateur», «d'identité».
_ELISION = re.compile("^[ld]'(?=[a-z]{2})")


@lru_cache(maxsize=WORD_CACHE)
def latin_forms(word: str) -> frozenset[str]:
    """A Latin word as written and without an elided article (an entry «l'eau» wins).

    >>> sorted(latin_forms("l'ordinateur"))
    ["l'ordinateur", 'ordinateur']
    """
    return frozenset({word, _ELISION.sub("", word)})


def weak_final(stem: str) -> str:
    """A defective verb's last letter unified: «بقا»، «بقى»، «بقي» → «بقي»."""
    return stem[:-1] + "ي" if stem and stem[-1] in "اي" else stem


@lru_cache(maxsize=WORD_CACHE)
def verb_stems(word: str) -> frozenset[str]:
    """Candidate stems of a folded dialect verb form, to meet ``~stem`` entries.

    >>> sorted(s for s in verb_stems("كتصيفطو") if s == "صيفط")
    ['صيفط']
    >>> "عطي" in verb_stems("تعطون"), "لغي" in verb_stems("نلغيها"), "بقي" in verb_stems("كتبقاو")
    (True, True, True)
    """
    bases = set(arabic_forms(word))
    for base in list(bases):
        # Egyptian and Maghrebi negation ما…ش: «ماوصلش», «تصلحاتش», «شارجيتش».
        if base.endswith("ش") and len(base) >= 5:
            bare = base[:-1]
            bases.update({bare, bare[2:]} if bare.startswith("ما") and len(bare) >= 5 else {bare})
    for base in list(bases):
        if base[:2] in ("ان", "ات") and len(base) >= 5:
            bases.add(base[2:])  # انفعل «انشحن» → «شحن», Egyptian اتفعل «اتقفل» → «قفل»
    for base in list(bases):
        if len(base) > MIN_VERB_STEM and base[0] in _PERSON:
            bases.add(base[1:])
        elif len(base) == MIN_VERB_STEM and base[0] in _PERSON:
            bases.add(base[1:] + base[-1])  # «اسد» (أسدّ) → «سدد»
    out = set()
    for base in bases:
        out.add(weak_final(base))
        for suffix in _VERB_SUFFIXES:
            if base.endswith(suffix):
                stem = base[: -len(suffix)]
                if suffix == "ت" and stem.endswith("ا"):
                    continue  # «لغات» is the plural ‑ات of «لغة», not «لغا» + ت
                if len(stem) >= MIN_VERB_STEM:
                    out.add(weak_final(stem))
                elif len(stem) == MIN_VERB_STEM - 1 and suffix[0] == "و":
                    # Only before the plural ‑و(ن/ا): «كتسدو» → سد → «سدد» (a doubled
                    # verb), «تعطون» → عط → «عطي» (the ي falls); never before ت/ي,
                    # where «وجدت», «مدى» would turn into جدد, مدد.
                    out.add(stem + stem[-1])
                    out.add(stem + "ي")
    return frozenset(stem for stem in out if len(stem) >= MIN_VERB_STEM)


_MSA_PREFIXES = ("", "ي", "ت", "ن", "ا", "سي", "ست", "سن", "م")
_MSA_SUFFIXES = ("", "ون", "وا", "ين", "ان", "ت", "نا", "تم", "تن", "ه", "ها", "هم", "ي", "ك",
                 "كم", "ني", "وه", "وها", "وهم", "يه")


def msa_form(token: str, stem: str) -> bool:
    """Could ``token`` be an MSA form of the verb ``stem`` (person prefix, MSA suffix)?

    >>> msa_form("يرجع", "رجع"), msa_form("ترجعولي", "رجع"), msa_form("اتقفل", "قفل")
    (True, False, False)
    """
    bare = strip_proclitics(token)
    # A defective verb drops or changes its ي: «يلغون», «اشتراه», «اشترى» from «شتري».
    stems = {stem, stem[:-1], stem[:-1] + "ا"} if stem.endswith("ي") else {stem}
    return any(f"{p}{s}{x}" in (token, bare)
               for s in stems for p in _MSA_PREFIXES for x in _MSA_SUFFIXES)


@lru_cache(maxsize=WORD_CACHE)
def arabic_forms(word: str) -> frozenset[str]:
    """The folded word, without its proclitic, without a dialect verb prefix:
    «والحين» → {والحين, حين}; «بيصير» → {بيصير, يصير}.

    A two-letter rest after the article is no entry's word: the article never
    comes before كم or شو, so «الجم» (the gym) is not Iraqi «جم» (كم).

    >>> sorted(arabic_forms("الجم")), sorted(arabic_forms("والحين"))
    (['الجم'], ['حين', 'والحين'])
    """
    bare = strip_proclitics(word)
    forms = {word} if len(bare) < MIN_STRIPPED and "ال" in word[: -len(bare) or None] \
        else {word, bare}
    return frozenset(forms | {VERB_PREFIX.sub("", w) for w in forms})


# Dialect writing drops the hamza's seat after a long ā: «فوايد، رسايل، سايق، زايد»
# for فوائد، رسائل، سائق، زائد.  Only inside a word (a letter on both sides).
# Not before a final ه/ا: «حمايه، نهايه، قضايا» are written so in MSA too.
_ALEF_YEH = re.compile("(?<=[\u0621-\u064a])اي(?=[\u0621-\u064a])(?![هوا]$)")


def hamza_seat(word: str) -> str | None:
    """The MSA spelling of a word written without its hamza seat, or None.

    >>> hamza_seat("زايده"), hamza_seat("ايام"), hamza_seat("حمايه"), hamza_seat("دفع")
    ('زائده', None, None, None)
    """
    seated = _ALEF_YEH.sub("ائ", word)
    return seated if seated != word else None


@lru_cache(maxsize=WORD_CACHE)
def longest_first(options: frozenset[str]) -> tuple[str, ...]:
    return tuple(sorted(options, key=lambda w: (-len(w), w)))


@lru_cache(maxsize=WORD_CACHE)
def peeled_forms(options: frozenset[str]) -> tuple[str, ...]:
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
MIN_STRIPPED = 3
