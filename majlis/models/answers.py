"""Answer selection: the sentence of the top documents that answers the question's *type*.

A question asks for something: «كم/شكد/قديش» a quantity, «متى/امتى» a time or
day, «وين/فين» a place or page, «هل/واش» a yes or no, «كيف/شلون» a procedure,
«ما هو/من هي» a definition (the sentence that opens with the subject).
Among the sentences of the recalled documents, the one that covers the
question's words best wins, with a bonus when it carries what the type asks
for (a number, a day, a place, a polarity, steps).  Every word comes from the
tenant's own text, negation included: «لا يشمل الضمان الكسر» is served whole.

Dialect questions are matched through the bridge (``expand``, the service
injects ``nlp.dialect_to_msa``): «خربان» counts as found in a sentence saying
«معطل».  Headings, file names, slugs and bracketed sources never reach the
reply: :func:`display_text` strips them from whatever is served.

    >>> from nlp import search_keys as keys, stop_keys_for
    >>> from majlis.models.types import Recalled
    >>> doc = Recalled("warranty.md#0", "document", "warranty › الضمان",
    ...     "# الضمان\\nمدة الضمان سنتان. لا يشمل الضمان الكسر أو سوء الاستخدام.", "", 1.0)
    >>> a = select_answer("هل يشمل الضمان الكسر؟", [doc], keys=keys, stop=stop_keys_for(keys))
    >>> a.text, a.qtype.value
    ('لا يشمل الضمان الكسر أو سوء الاستخدام.', 'yes_no')
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from majlis.models.concepts import (
    Concept,
    concepts_words,
    framing_concept,
    held_by_letters,
    verb_shaped,
)
from majlis.models.display import HEADING_LINE, display_text, display_topic
from majlis.models.extract import split_sentences
from majlis.models.injection import addresses_assistant
from majlis.models.qtypes import (
    QuestionType,
    answers_type,
    asks_duration,
    asks_existence,
    asks_notice,
    asks_price,
    carries_notice,
    carries_price,
    looks_dialect,
    question_type,
    type_strength,
)
from majlis.models.qtypes import fold_words as _words
from majlis.models.types import Recalled
from majlis.models.word_forms import with_skeletons as _with_skeletons
from nlp.keys import KeyFunction, content_keys, search_keys

__all__ = [
    "Answer",
    "Expander",
    "QuestionType",
    "answers_type",
    "display_text",
    "display_topic",
    "document_lead",
    "looks_dialect",
    "question_type",
    "select_answer",
    "verb_shaped",
]

Expander = Callable[[str], list[str]]


# Coverage bonus for a sentence carrying what the type asks for: enough to
# pick «رسوم التوصيل 15 ريالا» over «نوفر التوصيل لكل المدن» when both name
# التوصيل, not enough to pick a number about something else.
TYPE_BONUS = 0.15
# A sentence of the chosen chunk scoring within this much of the best is served
# beside it: when two sentences answer about equally, the question's words cannot
# tell which one holds the fact, and two short sentences still make a short reply.
RUNNER_UP = 0.25
# A dialect question's sentence score adds what its chunk says about the question
# (chunk_priors): the chunk's share of the question's concepts, the IDF-weighted
# share its title names, and its retrieval score over the best recalled.  Chosen on
# the fifteen support sets (session 13): the sentence holding the gold fact was
# chosen for 688 → 705 of 1,025 dialect questions with the title and retrieval
# terms; fitted leave-one-set-out (each set scored with weights searched on the
# other fourteen) 710, and flat for a title weight 0.4–0.8, retrieval 0.1–0.2.
CHUNK_PRIOR = 0.2
TITLE_PRIOR = 0.5
RETRIEVAL_PRIOR = 0.1
# A second sentence must add this much coverage, or carry the type the first lacks.
_MIN_GAIN = 0.05
# Chunks an MSA question reads (the first, by retrieval rank): its bars were
# calibrated on ARCD over three, and more near-miss chunks would lower its
# out-of-KB abstention.  A dialect question reads every chunk recalled.
MSA_CHUNKS = 3
# Weight of the title's share in Answer.grounding (see there).
TITLE_GROUNDING = 0.3
# Answer.lead is capped: a document alone in the recall leads by this much.
LEAD_CAP = 10.0
# A sentence opening with a pronoun continues the one before: «هو الملك الثالث
# والعشرون…» names its subject only in the previous sentence, which is served too.
_CONTINUES = frozenset("هو هي وهو وهي هم وهم كما وكان وكانت".split())




@dataclass(frozen=True, slots=True)
class Answer:
    """The sentences chosen, their source, and how well they answer."""

    source: Recalled
    sentences: tuple[str, ...]
    coverage: float  # weighted share of the question's concepts in the sentences, 0..1
    chunk_coverage: float  # unweighted share of the question's concepts in the chunk, 0..1
    qtype: QuestionType
    typed: bool  # the sentences carry what the question type asks for
    title_share: float = 0.0  # share of the chunk title's words the question names, 0..1
    dialect: bool = False  # the bridge found dialect words in the question
    chunk_weighted: float = 0.0  # IDF-weighted share of the question's concepts in the chunk
    # Concepts written as plain MSA (no bridge entry) the chunk lacks: «الدولار» in
    # «شنو سعر الدولار اليوم؟» names a subject the knowledge base does not hold.
    # A verb-shaped word («اشوف», «اشتريت») is the customer's action, not a subject:
    # it is not counted (:func:`verb_shaped`).
    plain_missing: int = 0
    # How far the source's document leads the recall: its best retrieval score over
    # the best score of any other document's chunk (LEAD_CAP when no other was
    # recalled).  A clear lead says which policy the question is about, even when
    # its words are not the policy's («تحتسب فائدة» vs «لا تفرض أي فوائد»).
    lead: float = 0.0
    # The strongest type evidence in the sentences (qtypes.type_strength: 1, 0.5, 0).
    strength: float = 0.0
    # How many things the question asks about (its concepts, one per content word).
    concepts: int = 0
    # Plain concepts the chosen *sentences* lack (plain_missing counts the chunk's).
    sentence_plain_missing: int = 0
    # The question asks whether something is had or offered (qtypes.asks_existence).
    existence: bool = False
    # When the chunk lacks only words that frame the question (dialect function words
    # «ينفع», «عادي», «بيه»; «يستغرق», «يقع»; measure nouns: concepts.framing_concept):
    # the same answer measured without them, for the bars' second look
    # (OfflineResponder._grounded).  None otherwise.
    without_framing: Answer | None = None
    # On a without_framing answer: the question's words set aside (folded).
    set_aside: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return " ".join(self.sentences)

    @property
    def grounding(self) -> float:
        """How surely the chunk is about what was asked: its share of the question's
        words, plus a part for a title the question names («متى تأسس النادي الأهلي»
        over the chunk titled «النادي الأهلي»), which a chunk about another subject
        lacks.  Calibrated on ARCD (bench/offline_qa.py, answerable vs held-out)."""
        return self.chunk_coverage + TITLE_GROUNDING * self.title_share



def _sentences(item: Recalled) -> list[str]:
    """Display sentences of a chunk; heading lines, title-only lines and injected
    instructions (:func:`quotable`) left out."""
    heads = {display_text(p) for p in item.title.split("›")}
    kept = []
    for sentence in split_sentences(HEADING_LINE.sub("", item.text)):
        shown = display_text(sentence)
        if shown and shown not in heads and quotable(shown):
            kept.append(shown)
    return kept


def quotable(sentence: str) -> bool:
    """False for a sentence that addresses the assistant or the system: an injected
    instruction in a document is never an answer («تجاهل التعليمات السابقة…» → False)."""
    return not addresses_assistant(sentence)


def select_answer(
    question: str,
    recalled: Sequence[Recalled],
    *,
    keys: KeyFunction = search_keys,
    stop: frozenset[str] = frozenset(),
    expand: Expander | None = None,
    dialect_cue: Callable[[str], bool] | None = None,
    max_sentences: int = 2,
) -> Answer | None:
    """The best answering sentences from one recalled chunk, or None.

    Deterministic: ties go to the chunk memory ranked higher, then the earlier sentence.
    """
    if not recalled:
        # Nothing to answer from (no knowledge base, or nothing matched): the
        # question's concepts — the bridge and key lookups of every word, most
        # of this function's cost — would be computed only to be discarded.
        return None
    dialect = looks_dialect(question) or (dialect_cue is not None and dialect_cue(question))
    qtype = question_type(question)
    if not dialect:
        recalled = recalled[:MSA_CHUNKS]
    with_words = concepts_words(question, keys, stop, expand, dialect=dialect, qtype=qtype)
    with_plain = [(c, plain) for c, plain, _w in with_words]
    concepts = [c for c, _plain in with_plain]
    if not concepts or not recalled:
        return None
    pool = _candidates(question, recalled, concepts, qtype, keys, dialect)
    if not pool:
        return None
    n = len(pool)
    # Local IDF per concept: a word every candidate sentence shares picks none of them.
    df = [sum(1 for p in pool if not c.isdisjoint(p[3])) for c in concepts]
    weight = [math.log((n + 1) / (d + 0.5)) for d in df]
    total = sum(weight) or 1.0

    def covered(found: frozenset[str] | set[str]) -> float:
        hit = sum(w for c, w in zip(concepts, weight, strict=True) if not c.isdisjoint(found))
        return hit / total

    title_cover = [covered(_with_skeletons(keys(item.title), roots=dialect))
                   for item in recalled]
    prior = _chunk_priors(recalled, pool, concepts, title_cover) if dialect \
        else [0.0] * len(recalled)
    best: tuple[float, float, int, int] | None = None
    scores: dict[tuple[int, int], float] = {}
    for rank, pos, _s, s_keys, strength in pool:
        base = covered(s_keys)
        if base <= 0:
            continue
        candidate = (base + TYPE_BONUS * strength + prior[rank],
                     title_cover[rank], -rank, -pos)
        scores[rank, pos] = candidate[0]
        if best is None or candidate > best:
            best = candidate
    if best is None:
        return None
    rank, pos = -best[2], -best[3]
    chunk = [p for p in pool if p[0] == rank]
    # Only a sentence as typed as the best: «900 ريال» is not served beside «24 شهرا»
    # for «شكد مدة…», however many words the two share.
    close = [p for (r, p), v in scores.items()
             if r == rank and p != pos and v >= best[0] - RUNNER_UP
             and chunk[p][4] >= chunk[pos][4]]
    runner = max(close, key=lambda p: (scores[rank, p], -p)) if close else None
    chosen, found, typed = _grow(chunk, pos, covered, max_sentences, also=runner)
    first = min(chosen)
    if first > 0 and len(chosen) < max_sentences + 1 and _opens_with_pronoun(chunk[first][2]):
        chosen.add(first - 1)
    chunk_keys = set().union(*(p[3] for p in chunk))
    asked = set().union(*concepts)
    by_letters = held_by_letters(with_words, chunk_keys, recalled[rank], dialect)
    title_keys = _with_skeletons(content_keys(display_topic(recalled[rank].title), keys, stop),
                                 roots=dialect)
    in_chunk = [h or not c.isdisjoint(chunk_keys)
                for c, h in zip(concepts, by_letters, strict=True)]
    answer = Answer(
        source=recalled[rank],
        sentences=tuple(chunk[i][2] for i in sorted(chosen)),
        coverage=covered(found),
        chunk_coverage=sum(in_chunk) / len(concepts),
        qtype=qtype,
        typed=typed,
        title_share=len(title_keys & asked) / len(title_keys) if title_keys else 0.0,
        dialect=dialect,
        chunk_weighted=covered(chunk_keys),
        lead=document_lead(recalled, rank),
        strength=max(chunk[i][4] for i in chosen),
        concepts=len(concepts),
        # By its own forms (keys, skeletons), not its root: «المستعملة» is not found
        # in «العملاء» because both reduce to ^عمل.
        plain_missing=sum(1 for (c, plain), h in zip(with_plain, by_letters, strict=True)
                          if plain and not h and {k for k in c if not k.startswith("^")}
                          .isdisjoint(chunk_keys)),
        sentence_plain_missing=sum(1 for c, plain in with_plain
                                   if plain and {k for k in c if not k.startswith("^")}
                                   .isdisjoint(found)),
        existence=asks_existence(question),
    )
    return replace(answer, without_framing=_without_framing(
        answer, with_words, in_chunk, weight, chunk_keys, found, dialect=dialect,
        typed=typed))


def _chunk_priors(recalled: Sequence[Recalled], pool: Sequence[_Candidate],
                  concepts: Sequence[frozenset[str]], title_cover: Sequence[float]) -> list[float]:
    """Per recalled chunk, what it adds to its sentences' scores for a dialect question.

    A sentence from the chunk about the question beats one that shares a word by
    chance with another chunk: «إلغاء الاشتراك في أي وقت» for a question about
    cancelling an *order* (the chunk's share of the question's concepts,
    :data:`CHUNK_PRIOR`); «الشحنة بتوصل امتى؟» is about the chunk titled «الشحن»
    (the title's IDF-weighted share, :data:`TITLE_PRIOR`); and retrieval, which read
    the whole chunk with the bridge, ranked the chunk (its score over the best
    recalled, :data:`RETRIEVAL_PRIOR`).  Dialect questions only: their loose matching
    (roots, bridge) makes chance matches common; on MSA (ARCD) the share drew
    unanswerable questions to near-miss chunks (out-of-KB abstention 0.836 → 0.823,
    bench/offline_qa.py).

    >>> from majlis.models.types import Recalled
    >>> a = Recalled("a#0", "document", "a › الشحن", "يصل الشحن خلال يومين.", "", 2.0)
    >>> b = Recalled("b#0", "document", "b › الفروع", "تفتح الفروع يوميا.", "", 1.0)
    >>> pool = [(0, 0, "", frozenset({"شحن"}), 1.0), (1, 0, "", frozenset({"فرع"}), 0.0)]
    >>> [round(p, 2) for p in _chunk_priors([a, b], pool, [frozenset({"شحن"})], [1.0, 0.0])]
    [0.8, 0.05]
    """
    top = max(item.score for item in recalled)
    priors = []
    for rank, item in enumerate(recalled):
        held: set[str] = set().union(*(p[3] for p in pool if p[0] == rank))
        share = sum(1 for c in concepts if not c.isdisjoint(held)) / len(concepts)
        retrieved = item.score / top if top > 0 else 0.0
        priors.append(CHUNK_PRIOR * share + TITLE_PRIOR * title_cover[rank]
                      + RETRIEVAL_PRIOR * retrieved)
    return priors


def _without_framing(answer: Answer, with_words: Sequence[Concept], held: Sequence[bool],
                     weight: Sequence[float], chunk_keys: set[str], found: set[str], *,
                     dialect: bool, typed: bool) -> Answer | None:
    """The answer measured without the framing words its chunk lacks, when they are
    all it lacks; None when the chunk lacks a word that names something (or lacks
    nothing, or only framing words are asked).

    A question frames what it asks with words the answer need not repeat: «ينفع ارجع
    الجهاز بعد ما فتحته؟» is answered by «يمكن إرجاع الجهاز خلال 14 يوما…», «كم
    يستغرق حذف الحساب؟» by «يحذف الحساب خلال 30 يوما», and the unmatched «ينفع» or
    «يستغرق» drops the chunk's share of the question below the bars.  Only these
    words are set aside, and only when nothing else is missing: a chunk lacking a
    word that names a thing («الدولار») may be about another subject."""
    framing = [framing_concept(c, dialect=dialect, typed=typed) for c in with_words]
    dropped = [f and not h for f, h in zip(framing, held, strict=True)]
    if not any(dropped) or all(dropped) or not all(h or f for f, h in zip(framing, held,
                                                                         strict=True)):
        return None
    kept = [(c, w) for (c, _plain, _words), w, d in zip(with_words, weight, dropped, strict=True)
            if not d]
    total = sum(w for _c, w in kept) or 1.0

    def own_missing(c: frozenset[str], keys: set[str]) -> bool:
        return {k for k in c if not k.startswith("^")}.isdisjoint(keys)

    gone = [(c, plain) for (c, plain, _words), d in zip(with_words, dropped, strict=True) if d]
    return replace(
        answer,
        coverage=sum(w for c, w in kept if not c.isdisjoint(found)) / total,
        chunk_coverage=1.0,  # every concept kept is held: the condition above
        concepts=len(kept),
        plain_missing=answer.plain_missing - sum(1 for c, plain in gone
                                                 if plain and own_missing(c, chunk_keys)),
        sentence_plain_missing=answer.sentence_plain_missing
        - sum(1 for c, plain in gone if plain and own_missing(c, found)),
        set_aside=tuple(w for (_c, _plain, words), d in zip(with_words, dropped, strict=True)
                        if d for w in words),
    )


# A candidate sentence: (chunk rank, position, text, its keys and loose forms, type strength).
_Candidate = tuple[int, int, str, frozenset[str], float]


def _candidates(question: str, recalled: Sequence[Recalled],
                concepts: Sequence[frozenset[str]], qtype: QuestionType,
                keys: KeyFunction, dialect: bool) -> list[_Candidate]:
    """Every sentence of the recalled chunks, with how strongly it carries the type asked."""
    duration = asks_duration(question)
    price = asks_price(question)
    notice = asks_notice(question)
    pool: list[_Candidate] = []
    for rank, item in enumerate(recalled):
        for pos, sentence in enumerate(_sentences(item)):
            strength = type_strength(sentence, qtype)
            if qtype is QuestionType.DEFINITION and _opens_with(sentence, concepts, keys):
                # «السرطان (بالإنجليزية: Cancer) هو مجموعة من الأمراض…», «محمد رمضان
                # (23 مايو 1988 -)، ممثل ومغني مصري.»: the subject, then what it is.
                strength = 1.0
            if duration and strength:
                # «شكد مدة الأقساط؟» wants «3 أو 6 أو 12 شهرا», not «1000 ريال»:
                # a number without a time unit answers a how-long question only weakly.
                strength = 1.0 if type_strength(sentence, QuestionType.TIME) >= 1 else 0.5
            elif notice and carries_notice(sentence):
                # «شلون اعرف الجهاز وصل؟» is answered by how one is told («نرسل لك
                # رسالة نصية فور وصوله»), which carries no step of a procedure.
                strength = 1.0
            elif price and strength:
                # «بكام خطة الحماية؟» wants the fee, not «لمدة سنتين»: likewise for prices.
                strength = 1.0 if carries_price(sentence) else 0.5
            pool.append((rank, pos, sentence,
                         _with_skeletons(keys(sentence), sentence, roots=dialect),
                         strength))
    return pool


def _grow(chunk: Sequence[_Candidate], pos: int,
          covered: Callable[[frozenset[str] | set[str]], float],
          max_sentences: int, also: int | None = None) -> tuple[set[int], set[str], bool]:
    """The best sentence at ``pos`` plus the chunk's sentences that add most of what
    the question asks (or the type it lacks), up to ``max_sentences``: the chosen
    positions, the keys they cover, and whether one carries the type."""
    chosen = {pos}
    found = set(chunk[pos][3])
    typed = chunk[pos][4] > 0
    if also is not None and max_sentences > 1:
        chosen.add(also)
        found |= chunk[also][3]
        typed = typed or chunk[also][4] > 0
    while len(chosen) < max_sentences:
        options = []
        for p in chunk:
            if p[1] in chosen:
                continue
            gain = covered(found | p[3]) - covered(found)
            # A sentence that supplies the missing type (the number, the day) is
            # worth adding when it is about the question at all.
            supplies = not typed and p[4] > 0 and covered(p[3]) > 0
            if gain >= _MIN_GAIN or supplies:
                options.append((gain + (TYPE_BONUS if supplies else 0.0), -p[1]))
        if not options:
            break
        _gain, neg = max(options)
        chosen.add(-neg)
        found |= chunk[-neg][3]
        typed = typed or chunk[-neg][4] > 0
    return chosen, found, typed


def document_of(item: Recalled) -> str:
    """The document a chunk belongs to: its id before «#» («esim.md#2» → «esim.md»)."""
    return item.id.split("#", 1)[0]


def document_lead(recalled: Sequence[Recalled], rank: int) -> float:
    """The chosen chunk's document's best score over the best other document's
    (:attr:`Answer.lead`); two chunks of one document do not compete."""
    doc = document_of(recalled[rank])
    own = max(r.score for r in recalled if document_of(r) == doc)
    other = max((r.score for r in recalled if document_of(r) != doc), default=0.0)
    if other <= 0:
        return LEAD_CAP if own > 0 else 0.0
    return min(own / other, LEAD_CAP)


def _opens_with(sentence: str, concepts: Sequence[frozenset[str]], keys: KeyFunction) -> bool:
    """Does the sentence's first word name one of the question's concepts?"""
    words = sentence.split(maxsplit=1)
    if not words:
        return False
    first = _with_skeletons(keys(words[0]), words[0])
    return any(not c.isdisjoint(first) for c in concepts)


def _opens_with_pronoun(sentence: str) -> bool:
    words = _words(sentence)
    return bool(words) and words[0] in _CONTINUES
