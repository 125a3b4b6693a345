"""A thread's dialect: a posterior over the five regions, accumulated turn by turn.

The per-message identifier (:mod:`nlp.dialect`) is trained on tweets and is
sure of itself on words every Arab uses: «السلام عليكم» reads Iraqi (0.40),
«مرحبا» Maghrebi (0.85), «رقم الطلب» Levantine (0.60). Mirroring those reads
flips a thread's reply dialect on every short message. So a message counts
only through its *regional evidence*:

* words shared by all dialects carry none — common greetings and courtesies,
  the support vocabulary (طلب، رقم، الحساب …) and marker words that are also
  MSA or pan-dialectal (أريد، يعني، اللي …); the caller can add more (the
  greeting table's shared phrases);
* what is left is read by the identifier for the *direction* (which region);
* its *weight* in [0, 1] grows with the regional marker words it holds and,
  slowly, with its other words (length-tempered), times the share the
  identifier gives the dialects rather than MSA. An MSA message, a number or
  a bare «هلا» has weight 0 and does not move the thread.

The thread keeps the weighted sum of log-directions (Bayesian pooling with
the weight as exponent) plus the caller's country as a prior, and its
posterior is the softmax of that:

    >>> from nlp import load_dialect_identifier
    >>> ident = load_dialect_identifier()
    >>> t = ThreadDialect().observe(message_evidence(ident, "ابي اعرف وين وصل طلبي"))
    >>> t = t.observe(message_evidence(ident, "السلام عليكم"))   # no evidence: no move
    >>> t.region, t.confidence > 0.8
    ('gulf', True)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nlp.dialect import (
    REGIONS,
    DialectIdentifier,
    DialectResult,
    _marker_of,
    dialect_words,
)

__all__ = [
    "DIALECTS",
    "Evidence",
    "ThreadDialect",
    "message_evidence",
    "shared_words",
]

# The five regional dialects (REGIONS without "msa").
DIALECTS: tuple[str, ...] = tuple(r for r in REGIONS if r != "msa")

# Words every dialect (and MSA) says, written naturally and folded at import.
_SHARED_TEXT = (
    # greetings and courtesies common to all regions
    "السلام عليكم ورحمة الله وبركاته سلام مرحبا مرحبه اهلا وسهلا هلا يا صباح مساء الخير "
    "النور شكرا جزيلا مشكور مشكورين العفو عفوا الحمد لله بخير تمام طيب اوكي نعم لا "
    "رمضان كريم عيد مبارك كل عام وانتم بخير جمعة مباركة ان شاء الله ماشاء "
    # the support vocabulary: nouns of the trade, not of a region
    "عندي طلب الطلب طلبية رقم الرقم حساب الحساب فاتورة الفاتورة باقة الباقة التطبيق "
    "الموقع المنتج الشحنة شحنة التوصيل الدفع البطاقة مشكلة المشكلة الموظف خدمة "
    "العملاء الاشتراك كلمة السر الجوال الرصيد الفرع اليوم امس بكرة "
    # classifier markers that are also MSA or heard in every region
    "اريد مال حق عيني كذا يعني اللي خلاص يالله عاد شي حاجه حاجة ما في من على الى"
)
# Conjunction/preposition/article prefixes and possessive suffixes stripped
# when looking a word up ("بالطلب", "حسابي", "وشكرا").
_PREFIXES = ("وبال", "وال", "بال", "فال", "لل", "ال", "و", "ف", "ب", "ل")
_SUFFIXES = ("كم", "نا", "ي", "ك", "ه")

# Words one region says and the others do not (or far less; لحد "until" is
# Egyptian, Levantine says لـ/لحتى), written
# naturally and folded at import, from knowledge of the dialects (not read off
# an evaluation set). The tweet-trained identifier underweights several of
# them: «اذا طلبت الدوا هسه يوصلني نفس اليوم؟» reads gulf 0.69 / iraqi 0.11
# though هسه ("now") is Iraqi. Each one adds STRONG_LOGIT to its region in the
# message's direction. Arabizi rows are listed as nlp.arabizi transliterates
# them (a2dar → اءدر, emta → امتا, delwa2ty → دلوءتي).
_STRONG_TEXT: Mapping[str, str] = {
    "iraqi": "هسة هسه شكد شگد ماكو اكو هواية هوايه يمعود شوكت مالتي مالتك مالته "
             "مالتنا مالتكم اغاتي اكدر ماكدر وياي وياك وياكم لعد انطيني انطوني گاع چان "
             "هيچ هيج شديسوي ديروح",
    "gulf": "وايد ابغى ابغي ابغا الحين هالحين شفيك شفيه جذي وش مب تبي يبي ابيه عطوني",
    "egyptian": "ازاي ازيك عايز عاوز عايزة عاوزة عايزين عاوزين عايزا كده دلوقتي دلوقت "
                "دلوءتي بتاع بتاعي بتاعتي بتاعك بتاعة امبارح مفيش علشان اوي لحد",
    "levantine": "هلق هلء بدي بدك بدنا بدهم هيك منيح قديش هيدا هيدي عنجد مصاري المصاري "
                 "منشان مشان تبعي تبعك وينو",
    "maghrebi": "بزاف دابا كيفاش علاش ديال ديالي ديالك ديالو برشا بغيت بغينا والو عافاك "
                "كيداير غادي راني بصح جوج",
}
# Words a region says most but a neighbour says too (Egyptian and Levantine
# both drop ق to a hamza and ask «امتى»): LEAN_LOGIT towards the first.
_LEAN_TEXT: Mapping[str, str] = {
    "egyptian": "امتى امتا اءدر نءدر ايه",
    "iraqi": "شلون",
    # the progressive «ما عم يفتح» (عم is also "uncle")
    "levantine": "عم",
}
# Iraqi spelling: چ (U+0686) for the affricate of ك and گ (U+06AF) for the g of
# ق. Gulf users type them too (چذي), so a word holding one that no list
# claims leans Iraqi only by LETTER_LOGIT, less than a listed word.
_IRAQI_LETTERS = frozenset("\u0686\u06af")
STRONG_LOGIT = 2.5
LEAN_LOGIT = LETTER_LOGIT = 1.0

# A regional marker word is strong evidence; any other word is weak evidence
# (a long message read by its n-grams is some evidence, one word is not).
MARKER_WEIGHT = 0.5
WORD_WEIGHT = 0.1
# Each message's weight w shrinks the thread's past evidence by DECAY**w, so a
# user who really switches dialect is followed after a few clear messages,
# never after one.
DECAY = 0.85
# Log-odds the caller's country adds to its region: alone it leaves the
# thread below the mirroring threshold (e^0.9 / (e^0.9 + 4) = 0.38), with one
# clear message of its region it passes it.
COUNTRY_LOGIT = 0.9
# Direction probabilities are floored so one message cannot veto a region.
_FLOOR = 1e-3


def _fold_words(text: str) -> list[str]:
    return dialect_words(text)


_SHARED: frozenset[str] = frozenset(_fold_words(_SHARED_TEXT))
_STRONG: dict[str, tuple[str, float]] = {
    w: (region, logit)
    for table, logit in ((_LEAN_TEXT, LEAN_LOGIT), (_STRONG_TEXT, STRONG_LOGIT))
    for region, text in table.items() for w in _fold_words(text)
}


def _regional_marker(word: str) -> tuple[str | None, float]:
    """(region, direction logit) a folded word signals; (None, 0.0) for none.

    A listed strong word gives STRONG_LOGIT (a leaning one LEAN_LOGIT), a
    classifier marker of a dialect 0.0 (it counts for the gate, the identifier
    already weighs it), an unlisted word with چ/گ LETTER_LOGIT towards Iraqi.
    MSA markers signal none.

    >>> _regional_marker("هسه"), _regional_marker("وين"), _regional_marker("هل")
    (('iraqi', 2.5), ('levantine', 0.0), (None, 0.0))
    """
    strong = _STRONG.get(word)
    # Not behind ف: «فوايد» (benefits) is no وايد.
    if strong is None and len(word) > 2 and word[0] in "ولب":
        strong = _STRONG.get(word[1:])  # «لهسه» until now, «وهلق»
    if strong is not None:
        return strong
    marker = _marker_of(word)
    if marker is not None and marker != "msa":
        return marker, 0.0
    if _IRAQI_LETTERS.intersection(word):
        return "iraqi", LETTER_LOGIT
    return None, 0.0


def shared_words(phrases: Iterable[str]) -> frozenset[str]:
    """Folded words of ``phrases`` (e.g. the greeting table's shared phrases).

    >>> sorted(shared_words(["صباح الخير"]))
    ['الخير', 'صباح']
    """
    return frozenset(w for p in phrases for w in _fold_words(p))


def _is_shared(word: str, extra: frozenset[str]) -> bool:
    """True when ``word`` (folded) carries no regional weight, clitics aside."""
    def known(w: str) -> bool:
        return w in _SHARED or w in extra

    if known(word):
        return True
    stems = [word]
    for p in _PREFIXES:
        if word.startswith(p) and len(word) - len(p) >= 2:
            stems.append(word[len(p):])
    for stem in list(stems):
        for s in _SUFFIXES:
            if stem.endswith(s) and len(stem) - len(s) >= 2:
                stems.append(stem[: -len(s)])
    return any(known(s) for s in stems)


@dataclass(frozen=True)
class Evidence:
    """What one message says about the region.

    ``message`` is the identifier's read of the message's regional words
    (None when it has none); ``direction`` is over :data:`DIALECTS`;
    ``weight`` in [0, 1] is how far it may move the thread (0: not at all).
    """

    message: DialectResult | None
    direction: Mapping[str, float]
    weight: float
    markers: int = 0
    words: int = 0


_NONE = Evidence(message=None, direction=dict.fromkeys(DIALECTS, 1 / len(DIALECTS)), weight=0.0)


def message_evidence(
    identifier: DialectIdentifier, text: str, *, shared: frozenset[str] = frozenset()
) -> Evidence:
    """The regional evidence of ``text``.

    >>> from nlp import load_dialect_identifier
    >>> ident = load_dialect_identifier()
    >>> message_evidence(ident, "السلام عليكم").weight, message_evidence(ident, "12345").weight
    (0.0, 0.0)
    >>> e = message_evidence(ident, "ازيك، عايز اعرف الطلب بتاعي فين")
    >>> max(e.direction, key=e.direction.__getitem__), e.weight
    ('egyptian', 1.0)
    """
    regional = [w for w in _fold_words(text) if not _is_shared(w, shared)]
    if not regional:
        return _NONE
    read = identifier.identify(" ".join(regional))
    signals = [s for s in map(_regional_marker, regional) if s[0] is not None]
    markers = len(signals)
    mass = sum(float(read.scores.get(r, 0.0)) for r in DIALECTS) or 1.0
    if not markers:
        # The gate: without one regional marker the words are MSA or shared
        # vocabulary, and the identifier's confidence on them is the tweet
        # data's bias (its Saudi rows came pre-normalised, so plain MSA reads
        # gulf: «متى يحرر المبلغ المحجوز على بطاقتي؟» gulf 0.73). Weight 0.
        return Evidence(message=read, direction=dict(_NONE.direction), weight=0.0,
                        markers=0, words=len(regional))
    raw = MARKER_WEIGHT * markers + WORD_WEIGHT * (len(regional) - markers)
    dialect_share = 1.0 - float(read.scores.get("msa", 0.0))
    weight = round(min(1.0, raw) * dialect_share, 4)
    logits = {r: math.log(max(float(read.scores.get(r, 0.0)) / mass, _FLOOR)) for r in DIALECTS}
    for region, logit in signals:
        logits[str(region)] += logit
    top = max(logits.values())
    exp = {r: math.exp(v - top) for r, v in logits.items()}
    total = sum(exp.values())
    direction = {r: v / total for r, v in exp.items()}
    return Evidence(message=read, direction=direction, weight=weight, markers=markers,
                    words=len(regional))


@dataclass(frozen=True)
class ThreadDialect:
    """The accumulated state: log-evidence per dialect, its total weight, the prior.

    ``region`` is "msa" while the thread has shown no regional evidence and
    has no country prior (nothing to mirror).
    """

    log_evidence: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(DIALECTS, 0.0))
    weight: float = 0.0
    prior: str | None = None

    def with_prior(self, region: str | None) -> ThreadDialect:
        """The same evidence under the caller's country region (None: no prior)."""
        region = region if region in DIALECTS else None
        return ThreadDialect(self.log_evidence, self.weight, region)

    def observe(self, evidence: Evidence) -> ThreadDialect:
        """Add one message; a message of weight 0 leaves the thread as it was."""
        w = evidence.weight
        if w <= 0:
            return self
        keep = DECAY ** w
        log_evidence = {
            r: keep * self.log_evidence.get(r, 0.0)
            + w * math.log(max(evidence.direction.get(r, 0.0), _FLOOR))
            for r in DIALECTS
        }
        return ThreadDialect(log_evidence, keep * self.weight + w, self.prior)

    def posterior(self) -> dict[str, float]:
        """Probabilities over :data:`DIALECTS` (flat without evidence or prior)."""
        z = [self.log_evidence.get(r, 0.0) + (COUNTRY_LOGIT if r == self.prior else 0.0)
             for r in DIALECTS]
        top = max(z)
        e = [math.exp(v - top) for v in z]
        total = sum(e)
        return {r: v / total for r, v in zip(DIALECTS, e, strict=True)}

    @property
    def has_evidence(self) -> bool:
        return self.weight > 0 or self.prior is not None

    @property
    def region(self) -> str:
        if not self.has_evidence:
            return "msa"
        post = self.posterior()
        return max(post, key=post.__getitem__)

    @property
    def confidence(self) -> float:
        """The posterior of :attr:`region`; 0.0 while the thread has no evidence."""
        if not self.has_evidence:
            return 0.0
        return max(self.posterior().values())

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form for the checkpoint (the prior is re-applied every turn)."""
        return {"log_evidence": {r: round(v, 6) for r, v in self.log_evidence.items()},
                "weight": round(self.weight, 6)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ThreadDialect:
        if not data:
            return cls()
        raw = data.get("log_evidence") or {}
        return cls({r: float(raw.get(r, 0.0)) for r in DIALECTS}, float(data.get("weight", 0.0)))
