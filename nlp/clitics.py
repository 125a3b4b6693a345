"""Clitic segmentation and light stemming of single *folded* Arabic words.

Segmentation is rule based with guards instead of a dictionary: a split is
only made when what remains is long enough to be a word (≥ 3 letters) or is a
known short function word (هو، في، من …), and a list of whole words whose
first or last letters merely look like clitics (والد، فيل، بلد، كلب …) is never
split.  Invariant: ``"".join(segment(w)) == w`` — segments are substrings, so
``للكتاب`` gives ``ل + ل + كتاب`` (the second ل is the article whose alef was
elided), never an invented ``ال``.
"""

from __future__ import annotations

from functools import lru_cache

from nlp.lexicon import FINAL_ALEF_KEPT, NEVER_SPLIT, SHORT_WORDS, STEM_KEPT, STOPWORDS

__all__ = ["light_stem", "segment", "strip_proclitics"]

_CONJ = ("و", "ف")  # and, so
_PREP = ("ب", "ك", "ل")  # with/in, like, for
_ARTICLE = "ال"
# Dialect future prefixes on an imperfective verb: ح/ه (Levantine/Egyptian:
# حيروح، هيموت).  Progressive ب (بيقول) is handled with the preposition ب.
# Levantine ع + verb is left alone: on ../shared/data it split عندما far more
# often than it found a verb.
_VERB_PREFIX = {"ح": "يتن", "ه": "يتن"}
# Pronoun enclitics, longest first so هما wins over ها/ه.
_ENCLITICS = ("هما", "كما", "هم", "هن", "كم", "كن", "نا", "ها", "ني", "ه", "ك", "ي")
# Light-stemmer suffixes, in Lucene's light10 order (each tried once); ة/ية
# are already folded to ه/يه.
_STEM_SUFFIXES = ("ها", "ان", "ات", "ون", "ين", "يه", "ه", "ي")
_MIN_STEM = 3


def _is_word(rest: str) -> bool:
    """Can ``rest`` stand on its own once a clitic is split off?"""
    return len(rest) >= _MIN_STEM or rest in SHORT_WORDS


def _split_article(rest: str) -> list[str] | None:
    """``ال`` + stem, or None when the article reading is impossible."""
    if rest.startswith(_ARTICLE) and len(rest) >= len(_ARTICLE) + 2:
        return [_ARTICLE, rest[2:]]
    return None


def _split_prefixes(word: str) -> tuple[list[str], str]:
    prefixes: list[str] = []
    rest = word
    if _split_enclitic(word)[0] in NEVER_SPLIT:  # لديهم، وجوده: protected host
        return prefixes, rest
    if len(rest) > 3 and rest[0] in _CONJ and rest not in NEVER_SPLIT:
        cand = rest[1:]
        # ف is far more often a root letter (فاتوره، فكره) than the
        # conjunction, which dialects rarely use: only split it before the
        # article, an imperfective verb or a short function word.
        if rest[0] == "ف" and not (
            cand.startswith(_ARTICLE) or cand in SHORT_WORDS
            or (cand[0] in "يتن" and len(cand) >= 4)
        ):
            return prefixes, rest
        # والد → و+الد would leave a bare "ال"+1 letter: refuse the و split too.
        if _is_word(cand) and not (cand.startswith(_ARTICLE) and _split_article(cand) is None
                                   and cand not in SHORT_WORDS):
            prefixes.append(rest[0])
            rest = cand
    if rest in NEVER_SPLIT or rest in SHORT_WORDS:
        return prefixes, rest
    if rest.startswith("لل") and len(rest) >= 4:  # ل + (ا)ل elided article
        return [*prefixes, "ل", "ل"], rest[2:]
    if rest[:1] in _PREP and len(rest) >= 3:
        cand = rest[1:]
        art = _split_article(cand)
        if art is not None:
            return [*prefixes, rest[0], *art[:1]], art[1]
        # Bare ك (كطالب) is rare and كان/كبير/كلينتون are not: ك only
        # before the article.  Bare ب/ل need a 4-letter host (بسبب is lost,
        # بدات، لاحقا are saved) or a function word (بكل، لكل).
        if rest[0] != "ك" and not cand.startswith(_ARTICLE) and (
            len(cand) >= 4 or cand in SHORT_WORDS
        ):
            prefixes.append(rest[0])
            return prefixes, cand
    art = _split_article(rest)
    if art is not None:
        return [*prefixes, art[0]], art[1]
    head = rest[:1]
    if head in _VERB_PREFIX and len(rest) >= 5 and rest[1] in _VERB_PREFIX[head]:
        return [*prefixes, head], rest[1:]
    return prefixes, rest


def _split_enclitic(stem: str) -> tuple[str, str]:
    if stem in NEVER_SPLIT:
        return stem, ""
    for suf in _ENCLITICS:
        if stem.endswith(suf):
            base = stem[: -len(suf)]
            if len(base) >= _MIN_STEM or base in SHORT_WORDS:
                return base, suf
    return stem, ""


@lru_cache(maxsize=200_000)
def _segment(word: str) -> tuple[str, ...]:
    if len(word) < 3 or word in NEVER_SPLIT:
        return (word,)
    prefixes, rest = _split_prefixes(word)
    if prefixes and prefixes[-1] in ("ال", "ل") and len(prefixes) >= 1 and (
        prefixes[-1] == "ال" or prefixes[-2:] == ["ل", "ل"]
    ):
        # The article and a possessive enclitic exclude each other, so the
        # final ه of المملكه is the folded ة, not "his".
        return (*prefixes, rest)
    base, suf = _split_enclitic(rest)
    return (*prefixes, base, suf) if suf else (*prefixes, base)


def segment(word: str) -> list[str]:
    """Clitic segmentation of ONE folded Arabic word; segments join back to it.

    >>> segment("والكتاب")
    ['و', 'ال', 'كتاب']
    >>> segment("وبيقولها")
    ['و', 'ب', 'يقول', 'ها']
    >>> segment("والد")
    ['والد']
    """
    return list(_segment(word))


@lru_cache(maxsize=200_000)
def strip_proclitics(word: str) -> str:
    """The folded word without its proclitics (و/ف/ب/ك/ل/ال, dialect ب/ح/ه).

    >>> strip_proclitics("بالموبايل")
    'موبايل'
    """
    if len(word) < 3 or word in NEVER_SPLIT or word in STEM_KEPT:  # بالون، بروتين
        return word
    _, rest = _split_prefixes(word)
    return rest


def _drop_final_alef(stem: str) -> str:
    """Drop a final ا, mostly tanween fatha, keeping ≥ 3 letters: شرقا → شرق.

    It also conflates a country with its nisba adjective (سوريا → سوري → سور,
    as سوري → سور), which is most of the measured gain.  The ا is kept for
    FINAL_ALEF_KEPT (دنيا, عليا, امريكا …) and when dropping it would leave a
    function word (the stopword check runs after stemming).
    """
    if (len(stem) > _MIN_STEM and stem[-1] == "ا" and stem not in FINAL_ALEF_KEPT
            and stem[:-1] not in STOPWORDS and stem[:-1] not in SHORT_WORDS):
        return stem[:-1]
    return stem


def _stem_once(word: str) -> str:
    """Proclitics and enclitic off via segment(), then light10 suffixes.

    Each suffix is tried once in Lucene's order and only removed when at least
    three letters remain, so short roots survive (بيان stays بيان).  A final
    ا goes before and after the suffixes (see ``_drop_final_alef``).
    """
    seg = _segment(word)
    if len(seg) == 1:
        stem = seg[0]
    elif seg[-1] in _ENCLITICS and len(seg[-2]) >= 4 and seg[-2].endswith("ت"):
        # ة is written ت before an enclitic: فاتورتي = فاتورة + ي.
        stem = seg[-2][:-1] + "ه"
    else:
        # the stem is the longest segment after the proclitics: the first
        # segment that is not a known proclitic string.
        i = 0
        while i < len(seg) - 1 and seg[i] in _PROCLITIC_STRINGS:
            i += 1
        stem = seg[i]
    if stem in NEVER_SPLIT or stem in SHORT_WORDS:
        return stem
    stem = _drop_final_alef(stem)
    for suf in _STEM_SUFFIXES:
        if stem.endswith(suf) and len(stem) - len(suf) >= _MIN_STEM:
            stem = stem[: -len(suf)]
    # again after the suffixes: مباراه → مبارا → مبار meets مباريات → مبار.
    return _drop_final_alef(stem)


@lru_cache(maxsize=200_000)
def light_stem(word: str) -> str:
    """Search stem of one folded word.

    >>> light_stem("والمعلمات")
    'معلم'
    >>> light_stem("ساهدهات")
    'ساهد'
    >>> light_stem("الكريم"), light_stem("كالبحر")
    ('كريم', 'بحر')
    >>> light_stem("بيتزوج")
    'تزوج'
    >>> light_stem("التلفون"), light_stem("تلفونات"), light_stem("تلف")
    ('تلفون', 'تلفون', 'تلف')
    """
    kept = _kept_stem(word)
    if kept is not None:
        return kept
    stem = _stem_once(word)
    # Retrieval wants more conflation than segment() gives (segment is tuned
    # for precision against gold): a stem still starting with a proclitic
    # letter (ب ل و; ف is mostly a root letter) loses it, once (never
    # recursively: "بببب…" must stay linear).
    # On ARCD BM25 this lifts recall@1 0.685 → 0.691 and recall@5
    # 0.927 → 0.934; the cost (بريد → ريد) hits index and query alike.
    # Not ك: it is a root letter far more often than "like" outside كال
    # (كبيرا → بيرا, كريم → ريم, الكويت → ويت); segment() already splits كال.
    # Bare ك + noun (كمثل، كرئيس) is lost; ك + stopword was tried and also
    # hit the dialect stopwords (الكليه → ليه، كدوله → دول).  Measured on
    # ARCD: store recall@1 −1 query of 1395 each (الكويت: 0.7018 → 0.7011
    # SQLite, 0.7032 → 0.7025 PostgreSQL), in-process BM25 0.691 → 0.6925;
    # kept because ريم/بار/ويت collisions are wrong keys, not a ranking tweak.
    if len(stem) >= 4 and stem[0] in _SEARCH_PROCLITICS and word not in NEVER_SPLIT \
            and stem not in NEVER_SPLIT:
        stem = _stem_once(stem[1:]) if len(stem) >= 5 else stem[1:]
    # Person prefix of a تفعّل/تفاعل imperfective (ي/ت/ن/ا + ت, ≥ 5 letters):
    # يتزوج، تتزوج، نتزوج، اتزوج → تزوج, the perfective; the dialect prefixes
    # (بيتزوج، حيتزوج) are already gone.  Only before ت: a bare person prefix
    # (يكتب → كتب) would also cut يمين → مين، يونيو → ونيو, and on ARCD it
    # traded recall@5 for recall@1.  ≥ 5 letters keeps يتيم and اتصل whole.
    # Nouns that start this way lose a letter on both sides alike (اتفاق → تفاق).
    if len(stem) >= 5 and stem[0] in _PERSON_PREFIXES and stem[1] == "ت" \
            and stem not in NEVER_SPLIT:
        stem = stem[1:]
    return stem


# Proclitic strings and endings a STEM_KEPT noun is met with: بالتلفون، تلفوني،
# تلفونات، مليونا.  Longest first within each.
# The word as written first: «بروتين», «بالون» are nouns, not ب + روتين / ب + الون.
_KEPT_PREFIXES = ("", "بال", "وال", "فال", "كال", "ولل", "ال", "لل", "و", "ف", "ب", "ل")
_KEPT_SUFFIXES = ("ات", "ها", "هم", "كم", "نا", "ني", "ي", "ك", "ه", "ا", "")


def _kept_stem(word: str) -> str | None:
    """The lexicon.STEM_KEPT noun ``word`` is a form of, if any: its search stem.

    >>> _kept_stem("بتلفوناتكم") is None, _kept_stem("تلفوني"), _kept_stem("بروتين")
    (True, 'تلفون', 'بروتين')
    """
    for prefix in _KEPT_PREFIXES:
        if not word.startswith(prefix):
            continue
        rest = word[len(prefix):]
        for suffix in _KEPT_SUFFIXES:
            if rest.endswith(suffix) and rest[: len(rest) - len(suffix)] in STEM_KEPT:
                return rest[: len(rest) - len(suffix)]
    return None


_PROCLITIC_STRINGS = frozenset({"و", "ف", "ب", "ك", "ل", "ال", "ح", "ه"})
_SEARCH_PROCLITICS = frozenset("بلو")  # not ف: فاصل must not become اصل
_PERSON_PREFIXES = frozenset("يتنا")  # imperfective he/she/we/I (أ is ا after folding)
