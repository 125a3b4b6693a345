"""Letter-level grounding features: how much of the question's own words a chunk holds.

The bars of :meth:`OfflineResponder._grounded` count the question's *concepts*
found in the chunk through the dialect bridge; on a domain the bridge has never
met, most concepts look absent and a right sentence is refused.  These features
read the question's letters instead: each content word's character 3- and
4-grams (folded, proclitic stripped) looked up in the chosen sentences, in the
chunk and in the other recalled documents, which catches spelling variants and
clitics («بالتأشيرة» ~ «التأشيرة», «السياحيه» ~ «السياحية») without a lexicon.

bench/answer_gate_loso.py fits a logistic gate on them leave-one-set-out over the
support sets.  Measured (session 9): they separate right answers the bars refuse
from answers to unanswerable questions only weakly (AUC 0.56–0.66 per feature),
so at LOSO abstention ≥ 0.90 the gate adds no answer and is not in the serving
path; the features stay for that measurement and the next attempt.  The letter
measure itself is served since session 10: :func:`text_grams` and
:func:`letter_share` decide when a chunk holds a dialect word its keys miss
(majlis.models.concepts.held_by_letters).

    >>> import nlp
    >>> from majlis.models.types import Recalled
    >>> k = nlp.search_keys
    >>> doc = Recalled("visa.md#0", "document", "visa › التأشيرة",
    ...     "تصدر التأشيرة السياحية خلال 5 أيام عمل.", "", 4.0)
    >>> f = gram_features("بالتأشيرة السياحيه اقدر اشتغل؟", (doc.text,), doc, [doc],
    ...                   keys=k, stop=nlp.stop_keys_for(k), expand=nlp.dialect_to_msa)
    >>> round(f["sent_gram"], 2), round(f["missing"], 2)
    (0.67, 0.33)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from majlis.models.qtypes import PROCLITIC, fold_words
from majlis.models.types import Recalled
from nlp.keys import KeyFunction, content_keys, search_keys

__all__ = ["FEATURES", "form_share", "gate_features", "gram_features", "letter_share",
           "question_words",
           "text_grams", "with_answer"]

# The features, in the order of the shipped coefficients.
FEATURES = ("sent_gram", "doc_gram", "missing", "kb_missing", "specific", "best_word", "short",
            "lead", "strength")
# A word counts as found when this share of its n-grams is in the text: a clitic
# or a dialect spelling changes one or two letters, not most of the word.
FOUND = 0.5
# The lead (best own score over best other document's, answers.LEAD_CAP at most)
# enters as log(lead) / log(LEAD_CAP): 1 alone in the recall, 0 for a tie.
_LEAD_CAP = 10.0


def _grams(word: str) -> frozenset[str]:
    """3- and 4-grams of a folded word, the word itself when shorter than 4 letters."""
    if len(word) < 4:
        return frozenset({word})
    return frozenset(word[i:i + n] for n in (3, 4) for i in range(len(word) - n + 1))


def _forms(word: str) -> list[str]:
    """The word and, when a proclitic opens it («والتوصيل», «بالفيزا»), its bare form."""
    bare = PROCLITIC.sub("", word)
    return [word, bare] if bare != word else [word]


def _text_grams(text: str) -> frozenset[str]:
    out: set[str] = set()
    for w in fold_words(text):
        for form in _forms(w):
            out |= _grams(form)
    return frozenset(out)


def text_grams(text: str) -> frozenset[str]:
    """The letter 3- and 4-grams of every word of ``text`` (and of its bare forms).

    >>> sorted(text_grams("الكهرباء"))[:3]
    ['الك', 'الكه', 'باء']
    """
    return _text_grams(text)


def letter_share(word: str, grams: frozenset[str]) -> float:
    """Share of a (folded) word's letter n-grams found in ``grams``, best over its forms.

    >>> letter_share("كهربا", text_grams("انقطاع الكهرباء"))
    1.0
    """
    return _share(word, grams)


def form_share(form: str, grams: frozenset[str]) -> float:
    """Share of one folded form's letter n-grams found in ``grams`` (no other form).

    >>> form_share("وكاله", text_grams("الوكالة")), form_share("بميجا", text_grams("ميجابت"))
    (1.0, 0.6)
    """
    own = _grams(form)
    return len(own & grams) / len(own)


def question_words(question: str, keys: KeyFunction = search_keys,
                   stop: frozenset[str] = frozenset(),
                   expand: Callable[[str], list[str]] | None = None) -> list[str]:
    """The question's content words, folded: function words of MSA (``stop``) and of
    dialect (bridged to nothing but stop words: «شكد», «وش», «عشان») left out.

    >>> import nlp
    >>> k = nlp.search_keys
    >>> question_words("وش رسوم التوصيل عندكم؟", k, nlp.stop_keys_for(k), nlp.dialect_to_msa)
    ['رسوم', 'التوصيل']
    """
    out: list[str] = []
    for token in question.split():
        if not content_keys(token, keys, stop):
            continue
        if expand is not None:
            bridged = expand(token)
            if bridged and not content_keys(" ".join(bridged), keys, stop):
                continue
        out.extend(fold_words(token))
    return out


def _share(word: str, grams: frozenset[str]) -> float:
    """The best share of the word's n-grams found, over its forms."""
    best = 0.0
    for form in _forms(word):
        own = _grams(form)
        best = max(best, len(own & grams) / len(own))
    return best


def gram_features(question: str, sentences: Sequence[str], source: Recalled,
                  recalled: Sequence[Recalled], *, keys: KeyFunction = search_keys,
                  stop: frozenset[str] = frozenset(),
                  expand: Callable[[str], list[str]] | None = None) -> dict[str, float]:
    """The letter-level features of :data:`FEATURES` (all but ``lead`` and ``strength``):

    * ``sent_gram`` / ``doc_gram``: mean share of each content word's n-grams in the
      chosen sentences / in the chunk (title included);
    * ``missing``: share of content words the chunk lacks (under :data:`FOUND`) that
      the bridge does not know either — a subject the knowledge base does not hold
      («نقاط الولاء») rather than a dialect word for one it does;
    * ``kb_missing``: share of content words found in none of the recalled chunks.
    """
    words = question_words(question, keys, stop, expand) or fold_words(question)
    if not words:
        return {"sent_gram": 0.0, "doc_gram": 0.0, "missing": 1.0, "kb_missing": 1.0,
                "specific": 0.0, "best_word": 0.0, "short": 1.0}
    sent = _text_grams(" ".join(sentences))
    chunk = _text_grams(f"{source.title} {source.text}")
    everywhere = frozenset().union(*(_text_grams(f"{r.title} {r.text}") for r in recalled))
    doc = source.id.split("#", 1)[0]
    others = frozenset().union(*(_text_grams(f"{r.title} {r.text}") for r in recalled
                                 if r.id.split("#", 1)[0] != doc))
    n = len(words)
    in_sent = [_share(w, sent) for w in words]
    in_chunk = [_share(w, chunk) for w in words]
    unknown = [not expand(w) if expand is not None else True for w in words]
    return {
        "sent_gram": sum(in_sent) / n,
        "doc_gram": sum(in_chunk) / n,
        "missing": sum(1 for s, u in zip(in_chunk, unknown, strict=True)
                       if s < FOUND and u) / n,
        "kb_missing": sum(1 for w in words if _share(w, everywhere) < FOUND) / n,
        # Words the chunk holds and no other recalled document does: what makes this
        # document, not its neighbours, the one asked about.
        "specific": sum(1 for w, s in zip(words, in_chunk, strict=True)
                        if s >= FOUND and _share(w, others) < FOUND) / n,
        "best_word": max((s for w, s in zip(words, in_sent, strict=True) if len(w) >= 4),
                         default=0.0),
        "short": 1.0 / n,
    }


def with_answer(grams: Mapping[str, float], *, lead: float, strength: float) -> dict[str, float]:
    """Every feature: the letter-level ones plus the retrieval ``lead`` of the chunk's
    document (log-scaled: 0 for a tie, 1 at the cap) and the sentences' type
    ``strength`` (qtypes.type_strength)."""
    return {**grams, "lead": math.log(max(lead, 1.0)) / math.log(_LEAD_CAP),
            "strength": strength}


def gate_features(question: str, sentences: Sequence[str], source: Recalled,
                  recalled: Sequence[Recalled], *, lead: float, strength: float,
                  keys: KeyFunction = search_keys, stop: frozenset[str] = frozenset(),
                  expand: Callable[[str], list[str]] | None = None) -> dict[str, float]:
    """:func:`gram_features` and :func:`with_answer` in one call."""
    grams = gram_features(question, sentences, source, recalled, keys=keys, stop=stop,
                          expand=expand)
    return with_answer(grams, lead=lead, strength=strength)
