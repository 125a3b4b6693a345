"""Word skeletons and light roots: loose forms under which a question meets its answer.

The light stemmer (nlp.keys) keeps the forms of one verb apart — «نوصل»,
«يوصل», «توصيل»; «مرتجع», «استرجاع», «ارجع». Answer selection
(majlis.models.answers) adds to each sentence's keys their skeleton («~وصل»:
the imperfect prefix and long vowels gone) and, for dialect questions, their
root («^رجع»: the derivational prefix, suffix and افتعل ‑ت‑ gone too), so the
forms meet. The marks «~» and «^» keep a loose form from ever equalling a key.

>>> sorted(with_skeletons(["توصيل"], roots=True))
['^وصل', '~وصل', 'توصيل']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from majlis.models.qtypes import fold_words as _words
from majlis.models.qtypes import proclitic_forms

_ARABIC = re.compile("[\u0621-\u064a]")
_ARABIC_WORD = re.compile("[\u0621-\u064a]+")
_WEAK = str.maketrans("", "", "اوي")
_DOUBLED = re.compile(r"(.)\1")


def skeleton_of(key: str) -> str | None:
    """A key reduced to its strong letters, to meet other forms of the same word.

    The light stemmer keeps «نوصل», «يوصل» and «توصيل», or «ارجع» and «ارجاع»,
    apart; the imperfect prefix and the long vowels removed, they meet as «وصل»
    and «رجع».  Marked with «~» so a skeleton never equals a real key.

    >>> [skeleton_of(k) for k in ("توصيل", "نوصل", "ارجاع", "ضمانا", "كم")]
    ['~وصل', '~وصل', '~رجع', '~ضمن', None]
    """
    if len(key) >= 4 and key[0] in "يتنا":
        key = key[1:]
    key = key[0] + key[1:].translate(_WEAK) if key else key
    if len(key) >= 4 and key[-1] in "هت":
        key = key[:-1]
    key = _DOUBLED.sub(r"\1", key)  # «ستردد» (استرداد) meets «سترد» (يسترد)
    return f"~{key}" if len(key) >= 3 and _ARABIC.match(key) else None


_DERIVED_PREFIX = re.compile(
    "^(?:(?:س?[امينت]?ست)(?=[\u0621-\u064a]{2})|س?[يتنام](?=[\u0621-\u064a]{3}))")
_DERIVED_SUFFIX = re.compile("(?:ات|ون|ين|ان|وا|ه|ي|ا)$")


def root_of(key: str) -> str | None:
    """A light triliteral root, so derived forms of one verb meet across patterns.

    The skeleton keeps «مرتجع», «استرجاع» and «ارجع» apart, or «المنتوج» and
    «المنتج»; dropping the derivational prefix (است/م/ي/ت/ن/ا), a plural or
    pronoun suffix, the افتعل ‑ت‑ and the long vowels leaves «رجع» and «نتج».
    A doubled root keeps its double: «استرداد» and «يسترد» both give «ردد».
    Marked with «^»; words of 4+ letters are reduced, a 3-letter key is its own root.

    >>> [root_of(k) for k in ("استرجاع", "مرتجع", "ترجيع", "يرجع", "منتوج", "منتج",
    ...                     "استرداد", "مسترد", "توصيل", "كم")]
    ['^رجع', '^رجع', '^رجع', '^رجع', '^نتج', '^نتج', '^ردد', '^ردد', '^وصل', None]
    """
    if len(key) == 3 and _ARABIC_WORD.fullmatch(key):
        return f"^{key}"  # «رجع» left by the stemmer is already a root («استرجاع» → ^رجع)
    if len(key) < 4 or not _ARABIC.match(key):
        return None
    stem = _DERIVED_PREFIX.sub("", key)
    if len(stem) >= 4:
        stem = _DERIVED_SUFFIX.sub("", stem) if len(stem) > 4 or stem[-1] in "اه" else stem
    while len(stem) > 3:
        weak = next((i for i in range(1, len(stem)) if stem[i] in "اوي"), None)
        if weak is None:
            break
        stem = stem[:weak] + stem[weak + 1:]
    if len(stem) == 4 and stem[1] == "ت":
        stem = stem[0] + stem[2:]  # افتعل: «رتجع» → «رجع»
    stem = _DOUBLED.sub(r"\1", stem)
    if len(stem) == 2:
        stem += stem[-1]  # «رد» from «يسترد»: the root is «ردد»
    return f"^{stem}" if len(stem) == 3 else None


def _surface_forms(word: str) -> tuple[str, ...]:
    """The forms of a folded word whose skeletons are taken: both when PROCLITIC cut
    one letter, the bare form alone when it cut an article.

    >>> _surface_forms("وكاله"), _surface_forms("الاهلي"), _surface_forms("دوام")
    (('وكاله', 'كاله'), ('اهلي',), ('دوام',))
    """
    # An article's whole form adds only noise: «الاهلي» and «الهلال» share «~لهل» (the
    # skeleton reads the article's ا as an imperfect prefix), and an ARCD out-of-KB
    # question about «النادي الاهلي» quoted a chunk about «الهلال».
    forms = proclitic_forms(word)
    return forms[1:] if len(forms) == 2 and len(word) - len(forms[1]) > 1 else forms


def with_skeletons(found: Sequence[str], text: str = "", *,
                    roots: bool = False) -> frozenset[str]:
    """Keys plus the skeletons (and, for ``roots``, the roots) of the keys and of
    ``text``'s whole words (the stemmer can over-cut: «ضمانا» → «ضما», while the
    word's skeleton is «ضمن»)."""
    # A one-letter cut (و/ف/ب) may be a noun's own letter: «باقة» → «اقه», «وكالة» →
    # «كاله», so a dialect question's matching (``roots``) keeps the word as written
    # beside it (_surface_forms).  An MSA question keeps the ARCD-calibrated cut form
    # alone: the whole forms quoted one more ARCD out-of-KB question (bench/offline_qa_grpc.py).
    surface = [f for w in _words(text)
               for f in (_surface_forms(w) if roots else proclitic_forms(w)[-1:])]
    forms = (*found, *surface)
    out = frozenset(found) | {sk for k in forms if (sk := skeleton_of(k)) is not None}
    if not roots:
        return out
    return out | {r for k in forms if (r := root_of(k)) is not None} \
        | {a for k in forms if (a := assimilated_root(k)) is not None}


def assimilated_root(key: str) -> str | None:
    """The root of an imperfect whose first radical و fell: «يصل», «تصل» → «^وصل»
    (as «توصيل», «وصول»), «يضع» → «^وضع».  root_of keeps a 3-letter key as its own
    root, so «يصل الشحن خلال يومين» never met «الشحنة بتوصل امتى؟»; the extra form
    only adds a meeting point (a 3-letter imperfect is rarely anything else).

    >>> [assimilated_root(k) for k in ("يصل", "تصل", "نصل", "يرجع", "وصل")]
    ['^وصل', '^وصل', '^وصل', None, None]
    """
    if len(key) == 3 and key[0] in "يتن" and _ARABIC_WORD.fullmatch(key):
        return f"^و{key[1:]}"
    return None

