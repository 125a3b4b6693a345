"""Answer selection: the sentence of the top documents that answers the question's *type*.

A question asks for something: «كم/شكد/قديش» a quantity, «متى/امتى» a time or
day, «وين/فين» a place or page, «هل/واش» a yes or no, «كيف/شلون» a procedure.
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
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from majlis.models.extract import split_sentences
from majlis.models.injection import addresses_assistant
from majlis.models.types import Recalled
from nlp.keys import KeyFunction, content_keys, search_keys

__all__ = [
    "Answer",
    "Expander",
    "QuestionType",
    "answers_type",
    "display_text",
    "display_topic",
    "looks_dialect",
    "question_type",
    "select_answer",
]

Expander = Callable[[str], list[str]]


class QuestionType(StrEnum):
    QUANTITY = "quantity"
    TIME = "time"
    PLACE = "place"
    YES_NO = "yes_no"
    PROCEDURE = "procedure"
    OTHER = "other"


# Question words per type, folded the way nlp.fold folds (ة→ه, ى→ي,
# أإآ→ا), Arabic and Arabizi.  The first question word in the text decides.
_TYPE_WORDS: dict[QuestionType, frozenset[str]] = {
    QuestionType.QUANTITY: frozenset(
        "كم بكم كام بكام شكد بشكد قديش بقديش قداش شحال بشحال چم جم"
        " kam kaam bkam adesh 2adesh addesh shkad ch7al sh7al cham".split()
    ),
    QuestionType.TIME: frozenset(
        "متي امتي امتا ايمتي وقتاش فوقاش شوقت ايمته"
        " emta imta emtaa meta mata waqtash fo9ash".split()
    ),
    QuestionType.PLACE: frozenset(
        "اين وين فين منين وينه فينه وينكم فينكم"
        " wen wein ween fen fein fin feen".split()
    ),
    QuestionType.YES_NO: frozenset("هل واش wach wash hal".split()),
    QuestionType.PROCEDURE: frozenset(
        "كيف شلون اشلون ازاي كيفاش كيفيه طريقه"
        " kif kaif keef shlon ezay izay ezzay kifash kifach".split()
    ),
}
# Words that make a wh-less question a yes/no one: «يشمله الضمان؟», «اكو فرع؟».
_YES_NO_CUES = frozenset(
    "فيه يوجد اكو كاين ممكن ينفع يصير يصلح يمكن اقدر نقدر اگدر يشمل يشمله"
    " تقبلون تقبلوا مسموح تدفع ادفع".split()
)

# Evidence that a sentence answers a type (folded, whole words or affixes).
_DIGIT = re.compile(r"[0-9\u0660-\u0669\u06f0-\u06f9]")
_NUMBER_WORDS = frozenset(
    "واحد واحده اثنين اثنان اثنتين يومين يومان ساعتين ثلاث ثلاثه اربع اربعه خمس خمسه"
    " ست سته سبع سبعه ثماني ثمانيه تسع تسعه عشر عشره عشرين ثلاثين اربعين خمسين ستين"
    " مئه مائه مئتين الف الفين نصف ربع ثلث ضعف بالمئه بالمائه مجانا مجاني مجانيه"
    " سنتين سنتان شهرين اسبوعين ساعتين دقيقتين"
    " ريال ريالا درهم درهما دينار دينارا جنيه جنيها ليره دولار يورو".split()
)
_TIME_WORDS = frozenset(
    "يوم ايام يومين ساعه ساعات اسبوع اسابيع اسبوعين شهر اشهر شهرين سنه سنوات عام اعوام"
    " دقيقه دقائق صباحا صباح مساء مساءا ظهرا عصرا ليلا فجرا الاحد الاثنين الثلاثاء"
    " الاربعاء الخميس الجمعه السبت احد اثنين ثلاثاء اربعاء خميس جمعه سبت خلال بعد قبل"
    " يناير فبراير مارس ابريل مايو يونيو يوليو اغسطس سبتمبر اكتوبر نوفمبر ديسمبر"
    " القرن قرن عطله عطلات".split()
)
_PLACE_WORDS = frozenset(
    "في شارع حي مدينه منطقه فرع فروع مركز طريق صفحه قسم اعدادات تطبيق موقع الموقع موقعنا"
    " عنوان بجوار مقابل قرب داخل خارج مول مجمع طابق قائمه رابط بوابه"
    " الرياض جده دبي القاهره بيروت عمان بغداد الدار البيضاء الرباط تونس الجزائر".split()
)
_POLARITY_WORDS = frozenset(
    "لا ليس ليست لن لم غير يشمل تشمل يمكن يمكنك ممكن متاح متاحه يحق يجوز نعم مسموح"
    " ممنوع يقبل نقبل تقبل يتوفر تتوفر يوجد توجد مشمول مشموله".split()
)
_PROCEDURE_WORDS = frozenset(
    "افتح اختر اضغط ادخل اكتب ارسل اتصل تواصل قم اتبع ثم عبر خلال بواسطه طريق يمكنك"
    " يرجي يجب زر تطبيق الاعدادات رابط املا احضر قدم توجه سجل".split()
)
_TYPE_EVIDENCE: dict[QuestionType, frozenset[str]] = {
    QuestionType.QUANTITY: _NUMBER_WORDS,
    QuestionType.TIME: _TIME_WORDS,
    QuestionType.PLACE: _PLACE_WORDS,
    QuestionType.YES_NO: _POLARITY_WORDS,
    QuestionType.PROCEDURE: _PROCEDURE_WORDS,
}
# Digits answer «كم»; for «متى» a number must come with a time word (أيام، الساعة),
# else «رسوم التوصيل 25 ريالا» would answer «امتى يوصل الطلب؟».
_NUMERIC_TYPES = frozenset({QuestionType.QUANTITY})

# Coverage bonus for a sentence carrying what the type asks for: enough to
# pick «رسوم التوصيل 15 ريالا» over «نوفر التوصيل لكل المدن» when both name
# التوصيل, not enough to pick a number about something else.
TYPE_BONUS = 0.15
# A second sentence must add this much coverage, or carry the type the first lacks.
_MIN_GAIN = 0.05
# Weight of the title's share in Answer.grounding (see there).
TITLE_GROUNDING = 0.3
# A sentence opening with a pronoun continues the one before: «هو الملك الثالث
# والعشرون…» names its subject only in the previous sentence, which is served too.
_CONTINUES = frozenset("هو هي وهو وهي هم وهم كما وكان وكانت".split())

_FOLD = str.maketrans({"ة": "ه", "ى": "ي", "أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ؤ": "و",
                       "ئ": "ي"})
_MARKS = re.compile("[\u064b-\u0652\u0670\u0640]")
_WORD = re.compile("[\u0621-\u064a]+|[a-z0-9']+")
_PROCLITIC = re.compile("^(?:وال|فال|بال|كال|لل|ال|و|ف|ب)(?=[\u0621-\u064a]{3})")


def _words(text: str) -> list[str]:
    return _WORD.findall(_MARKS.sub("", text.lower()).translate(_FOLD))


def question_type(text: str) -> QuestionType:
    """What the question asks for.

    >>> [question_type(q).value for q in ("شكد سعر التوصيل؟", "امتى تفتحون؟",
    ...     "وين أقرب فرع؟", "يشمله الضمان؟", "شلون أغير الباسورد؟", "abi a3raf")]
    ['quantity', 'time', 'place', 'yes_no', 'procedure', 'other']
    """
    words = _words(text)
    for word in words:
        for qtype, vocab in _TYPE_WORDS.items():
            if word in vocab or _PROCLITIC.sub("", word) in vocab:
                return qtype
    if "؟" in text or "?" in text:
        if any(w in _YES_NO_CUES for w in words[:4]):
            return QuestionType.YES_NO
    return QuestionType.OTHER


def answers_type(sentence: str, qtype: QuestionType) -> bool:
    """Does ``sentence`` carry what a ``qtype`` question asks for?

    >>> answers_type("رسوم التوصيل 15 ريالا.", QuestionType.QUANTITY)
    True
    >>> answers_type("لا يشمل الضمان الكسر.", QuestionType.YES_NO)
    True
    """
    if qtype is QuestionType.OTHER:
        return False
    if qtype in _NUMERIC_TYPES and _DIGIT.search(sentence):
        return True
    vocab = _TYPE_EVIDENCE[qtype]
    return any(w in vocab or _PROCLITIC.sub("", w) in vocab for w in _words(sentence))


# -- what may be shown ---------------------------------------------------------------

_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s.*$", re.MULTILINE)
_BRACKETED = re.compile(r"\[[^\]\n]{0,120}\]|【[^】\n]{0,120}】")
_FILE_NAME = re.compile(r"\b[\w\-]+\.(?:md|markdown|txt|jsonl|json|pdf|docx?|html?)\b", re.I)
_SLUG_PATH = re.compile(r"[\w\-]*\s*›\s*")
_MD_MARKUP = re.compile(r"(\*\*|__|`)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+", re.MULTILINE)
_ARABIC = re.compile("[\u0621-\u064a]")
_SPACES = re.compile(r"[ \t]+")


def display_text(text: str) -> str:
    """Text fit for the reply: no Markdown heading, file name, slug path or [source].

    >>> display_text("## الفروع\\nالفرع الرئيسي في الرياض [branches.md].")
    'الفرع الرئيسي في الرياض .'
    """
    text = _HEADING_LINE.sub("", text)
    text = _BRACKETED.sub("", text)
    text = _FILE_NAME.sub("", text)
    text = _SLUG_PATH.sub("", text)
    text = _MD_MARKUP.sub("", text)
    text = _LIST_MARK.sub("", text)
    return _SPACES.sub(" ", text).strip()


def display_topic(title: str) -> str:
    """A chunk title as a topic to name: its last Arabic heading, never a file slug.

    >>> display_topic("branches › الفروع وأوقات العمل")
    'الفروع وأوقات العمل'
    >>> display_topic("refunds")
    ''
    """
    for part in reversed(title.split("›")):
        part = display_text(part)
        if _ARABIC.search(part):
            return part
    return ""


# -- selection -------------------------------------------------------------------------


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


_WEAK = str.maketrans("", "", "اوي")
_DOUBLED = re.compile(r"(.)\1")
# A single-letter proclitic the key function may leave on a short noun: بجدة، فرمضان.
_ONE_LETTER_PROCLITIC = re.compile("^[بفلوك](?=[\u0621-\u064a]{3})")


def _skeleton(key: str) -> str | None:
    """A key reduced to its strong letters, to meet other forms of the same word.

    The light stemmer keeps «نوصل», «يوصل» and «توصيل», or «ارجع» and «ارجاع»,
    apart; the imperfect prefix and the long vowels removed, they meet as «وصل»
    and «رجع».  Marked with «~» so a skeleton never equals a real key.

    >>> [_skeleton(k) for k in ("توصيل", "نوصل", "ارجاع", "ضمانا", "كم")]
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


def _root(key: str) -> str | None:
    """A light triliteral root, so derived forms of one verb meet across patterns.

    The skeleton keeps «مرتجع», «استرجاع» and «ارجع» apart, or «المنتوج» and
    «المنتج»; dropping the derivational prefix (است/م/ي/ت/ن/ا), a plural or
    pronoun suffix, the افتعل ‑ت‑ and the long vowels leaves «رجع» and «نتج».
    A doubled root keeps its double: «استرداد» and «يسترد» both give «ردد».
    Marked with «^»; only words of 4+ letters are reduced.

    >>> [_root(k) for k in ("استرجاع", "مرتجع", "ترجيع", "يرجع", "منتوج", "منتج",
    ...                     "استرداد", "مسترد", "توصيل", "كم")]
    ['^رجع', '^رجع', '^رجع', '^رجع', '^نتج', '^نتج', '^ردد', '^ردد', '^وصل', None]
    """
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


def _with_skeletons(found: Sequence[str], text: str = "", *,
                    roots: bool = False) -> frozenset[str]:
    """Keys plus the skeletons (and, for ``roots``, the roots) of the keys and of
    ``text``'s whole words (the stemmer can over-cut: «ضمانا» → «ضما», while the
    word's skeleton is «ضمن»)."""
    surface = [_PROCLITIC.sub("", w) for w in _words(text)]
    forms = (*found, *surface)
    out = frozenset(found) | {sk for k in forms if (sk := _skeleton(k)) is not None}
    return out | {r for k in forms if (r := _root(k)) is not None} if roots else out


# Words that frame a question but that its answer need not repeat: «أين يقع الفرع؟»
# is answered by «فرعنا في الرياض», «كم يستغرق الحذف؟» by «يحذف خلال 30 يوما».
# Folded keys; a concept made of these alone is not required of the answer.
_FRAME = frozenset(
    "يقع تقع يستغرق تستغرق يتم تتم تكون يكون اقدر نقدر استطيع نستطيع يمكنني يمكننا"
    " موجود موجوده متوفر".split()
)


def _concepts(
    question: str, keys: KeyFunction, stop: frozenset[str], expand: Expander | None,
    *, dialect: bool = False,
) -> list[frozenset[str]]:
    """One key set per content word of the question: its own keys plus its bridge keys.

    A ``dialect`` question also drops frame words and matches by root (see
    :func:`_root`): its words are never the policy's own, while an MSA question
    keeps the ARCD-calibrated matching unchanged."""
    tokens = question.split()
    found: list[set[str]] = []
    for i, token in enumerate(tokens):
        own = set(content_keys(token, keys, stop))
        if not own or (dialect and _PROCLITIC.sub("", "".join(_words(token))) in _FRAME):
            continue
        bridged = expand(token) if expand is not None else []
        if expand is not None and i > 0:
            # A two-word phrase («الرقم السري» → كلمة المرور، «ما زبط» → تعذر)
            # belongs to its second word.
            pair = expand(f"{tokens[i - 1]} {token}")
            bridged += [w for w in pair if w not in expand(tokens[i - 1])]
        if bridged:
            extra = set(content_keys(" ".join(bridged), keys, stop))
            if not extra:
                continue  # «شكد», «emta», «wach»: a dialect function word
            own |= extra
        bare = _ONE_LETTER_PROCLITIC.sub("", _MARKS.sub("", token))
        if bare != token:
            own |= set(content_keys(bare, keys, stop))
        found.append(set(_with_skeletons(sorted(own), " ".join([bare, *bridged]),
                                         roots=dialect)))
    # Two words of one root («رجعت … ارجع») are one thing asked, counted once.
    merged: list[set[str]] = []
    for concept in found:
        for other in merged:
            if not other.isdisjoint(concept):
                other |= concept
                break
        else:
            merged.append(concept)
    return [frozenset(c) for c in merged]


def _sentences(item: Recalled) -> list[str]:
    """Display sentences of a chunk; heading lines, title-only lines and injected
    instructions (:func:`quotable`) left out."""
    heads = {display_text(p) for p in item.title.split("›")}
    kept = []
    for sentence in split_sentences(_HEADING_LINE.sub("", item.text)):
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
    dialect = looks_dialect(question) or (dialect_cue is not None and dialect_cue(question))
    concepts = _concepts(question, keys, stop, expand, dialect=dialect)
    if not concepts or not recalled:
        return None
    qtype = question_type(question)
    pool: list[tuple[int, int, str, frozenset[str], bool]] = []
    for rank, item in enumerate(recalled):
        for pos, sentence in enumerate(_sentences(item)):
            pool.append((rank, pos, sentence,
                         _with_skeletons(keys(sentence), sentence, roots=dialect),
                         answers_type(sentence, qtype)))
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
    best: tuple[float, float, int, int] | None = None
    for rank, pos, _s, s_keys, typed in pool:
        base = covered(s_keys)
        if base <= 0:
            continue
        candidate = (base + (TYPE_BONUS if typed else 0.0), title_cover[rank], -rank, -pos)
        if best is None or candidate > best:
            best = candidate
    if best is None:
        return None
    rank, pos = -best[2], -best[3]
    chunk = [p for p in pool if p[0] == rank]
    chosen = {pos}
    found = set(chunk[pos][3])
    typed = chunk[pos][4]
    while len(chosen) < max_sentences:
        options = []
        for p in chunk:
            if p[1] in chosen:
                continue
            gain = covered(found | p[3]) - covered(found)
            # A sentence that supplies the missing type (the number, the day) is
            # worth adding when it is about the question at all.
            supplies = not typed and p[4] and covered(p[3]) > 0
            if gain >= _MIN_GAIN or supplies:
                options.append((gain + (TYPE_BONUS if supplies else 0.0), -p[1]))
        if not options:
            break
        _gain, neg = max(options)
        chosen.add(-neg)
        found |= chunk[-neg][3]
        typed = typed or chunk[-neg][4]
    first = min(chosen)
    if first > 0 and len(chosen) < max_sentences + 1 and _opens_with_pronoun(chunk[first][2]):
        chosen.add(first - 1)
    chunk_keys = set().union(*(p[3] for p in chunk))
    asked = set().union(*concepts)
    title_keys = _with_skeletons(content_keys(display_topic(recalled[rank].title), keys, stop),
                                 roots=dialect)
    return Answer(
        source=recalled[rank],
        sentences=tuple(chunk[i][2] for i in sorted(chosen)),
        coverage=covered(found),
        chunk_coverage=sum(1 for c in concepts if not c.isdisjoint(chunk_keys)) / len(concepts),
        qtype=qtype,
        typed=typed,
        title_share=len(title_keys & asked) / len(title_keys) if title_keys else 0.0,
        dialect=dialect,
    )


# Words only dialect speech uses (the bridge knows many more; these stand when
# no bridge is injected), and the Egyptian/Levantine بـ imperfect (بيفتح، بتوصلوا).
_DIALECT_MARKERS = frozenset(
    "شو وش ايش شنو شنهو ليش ليه علاش وين فين امتي امتا ايمتي وقتاش فوقاش قديش قداش شحال"
    " شكد بكام كام شلون اشلون ازاي كيفاش عايز عاوز بدي ابي ابغي ابغا بغيت مش مو موب مب"
    " اكو ماكو مافي مفيش كاين دلوقتي هلق هسه دابا الحين عشان علشان باش ديال تبع مالتي"
    " مالتكم عدكم ليا شوي شويه".split()
)
_B_IMPERFECT = re.compile("^ب[يتن][\u0621-\u064a]{3}(?:و|وا)?$")


def looks_dialect(question: str) -> bool:
    """Does the question carry dialect words?  (The fallback when the service
    injects no ``dialect_cue``: a few markers, no lexicon.)

    >>> looks_dialect("هو الفرع بيفتح يوم الجمعة؟"), looks_dialect("متى يفتح الفرع؟")
    (True, False)
    """
    words = _words(question)
    return any(w in _DIALECT_MARKERS or _B_IMPERFECT.match(w) for w in words)


def _opens_with_pronoun(sentence: str) -> bool:
    words = _words(sentence)
    return bool(words) and words[0] in _CONTINUES
