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
* a marker word (``nlp/data/dialect_markers.tsv``) counts for every region
  that says it: «بغيت» for the Maghreb and the Gulf, «وين» for the Gulf, Iraq
  and the Levant — never for one of them only;
* what is left is read by the identifier for the *direction* (which region);
* its *weight* in [0, 1] grows with the regional marker words it holds and,
  slowly, with its other words (length-tempered), times the share the
  identifier gives the dialects rather than MSA. An MSA message, a number or
  a bare «هلا» has weight 0 and does not move the thread.

The thread keeps the weighted sum of log-directions (Bayesian pooling with
the weight as exponent) plus the caller's country as a prior, and its
posterior is the softmax of that. Beside it the thread keeps its marker
words' own tally: a reply mirrors a region only when no other region has more
of it (the country counting as one lean word, :attr:`ThreadDialect.backed`),
so the identifier's tweet-trained read of the other words breaks ties between
regions the marker words cannot tell apart but never overrules them:

    >>> from nlp import load_dialect_identifier
    >>> ident = load_dialect_identifier()
    >>> t = ThreadDialect().observe(message_evidence(ident, "ابي اعرف وين وصل طلبي"))
    >>> t = t.observe(message_evidence(ident, "السلام عليكم"))   # no evidence: no move
    >>> t.region, t.confidence > 0.8, t.backed   # ابي: a Gulf word
    ('gulf', True, True)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
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

# Conjunction/preposition/article prefixes and possessive suffixes stripped
# when looking a word up ("بالطلب", "حسابي", "وشكرا").
_PREFIXES = ("وبال", "وال", "بال", "فال", "لل", "ال", "و", "ف", "ب", "ل")
_SUFFIXES = ("كم", "نا", "ي", "ك", "ه")

# A word one region says and the others hardly do adds STRONG_LOGIT to that
# region in the message's direction; a word a region says, but not it alone
# («وين»: Gulf, Iraq, the Levant), LEAN_LOGIT to each region that says it.
# The tweet-trained identifier underweights several of them: «اذا طلبت الدوا
# هسه يوصلني نفس اليوم؟» reads gulf 0.69 / iraqi 0.11 though هسه ("now") is Iraqi.
# Iraqi spelling: چ (U+0686) for the affricate of ك and گ (U+06AF) for the g of
# ق. Gulf users type them too (چذي), so a word holding one that no row lists
# leans Iraqi only by LETTER_LOGIT.
_IRAQI_LETTERS = frozenset("\u0686\u06af")
STRONG_LOGIT = 2.5
LEAN_LOGIT = LETTER_LOGIT = 1.0
_STRENGTH = {"": STRONG_LOGIT, "lean": LEAN_LOGIT}


def parse_markers(text: str) -> tuple[frozenset[str], dict[str, dict[str, float]]]:
    r"""(shared words, word → {region: logit}) from the lexicon's lines.

    >>> shared, markers = parse_markers("هلا\tshared\nوين\tlevantine:lean,gulf:lean\n")
    >>> sorted(shared), markers["وين"]
    (['هلا'], {'levantine': 1.0, 'gulf': 1.0})
    """
    shared: set[str] = set()
    markers: dict[str, dict[str, float]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        words = dialect_words(fields[0])
        if len(fields) != 2 or len(words) != 1:
            raise ValueError(f"dialect_markers.tsv:{number}: expected 'word<TAB>regions'")
        word, where = words[0], fields[1].strip()
        if word in shared or word in markers:
            raise ValueError(f"dialect_markers.tsv:{number}: {word} is listed twice")
        if where == "shared":
            shared.add(word)
            continue
        regions: dict[str, float] = {}
        for item in where.split(","):
            region, _, strength = item.strip().partition(":")
            if region not in DIALECTS or strength not in _STRENGTH:
                raise ValueError(f"dialect_markers.tsv:{number}: unknown region {item!r}")
            regions[region] = _STRENGTH[strength]
        markers[word] = regions
    return frozenset(shared), markers


_SHARED, _MARKERS = parse_markers(
    resources.files("nlp").joinpath("data/dialect_markers.tsv").read_text("utf-8"))

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
# In the marker evidence that backs a mirror (ThreadDialect.backed) the country
# counts as one lean word: a word said there and elsewhere too (weighted by its
# message's weight, at most 1) never outweighs it, a strong word or two leans do.
COUNTRY_MARKER = 1.0
# Direction probabilities are floored so one message cannot veto a region.
_FLOOR = 1e-3
# Marker evidence within this of another region's is a tie (rounding of the checkpoint).
_TIE = 1e-6


def _regional_marker(word: str) -> Mapping[str, float]:
    """{region: direction logit} a folded word signals; {} for none.

    A listed word gives each region it names STRONG_LOGIT or LEAN_LOGIT; an
    unlisted classifier marker of a dialect 0.0 (it counts for the gate, the
    identifier already weighs it); an unlisted word with چ/گ LETTER_LOGIT
    towards Iraqi. MSA markers signal none.

    >>> _regional_marker("هسه"), _regional_marker("بغيت"), _regional_marker("هل")
    ({'iraqi': 2.5, 'levantine': 1.0}, {'maghrebi': 1.0, 'gulf': 1.0}, {})
    """
    listed = _MARKERS.get(word)
    # Not behind ف: «فوايد» (benefits) is no وايد.
    if listed is None and len(word) > 2 and word[0] in "ولب":
        listed = _MARKERS.get(word[1:])  # «لهسه» until now, «وهلق»
    if listed is not None:
        return listed
    marker = _marker_of(word)
    if marker is not None and marker != "msa":
        return {marker: 0.0}
    if _IRAQI_LETTERS.intersection(word):
        return {"iraqi": LETTER_LOGIT}
    return {}


def shared_words(phrases: Iterable[str]) -> frozenset[str]:
    """Folded words of ``phrases`` (e.g. the greeting table's shared phrases).

    >>> sorted(shared_words(["صباح الخير"]))
    ['الخير', 'صباح']
    """
    return frozenset(w for p in phrases for w in dialect_words(p))


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
    # Per region, the logits its marker words gave it (a word several regions
    # say gives each of them its share): what a mirror must be backed by.
    marker_logits: Mapping[str, float] = field(default_factory=dict)


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
    regional = [w for w in dialect_words(text) if not _is_shared(w, shared)]
    if not regional:
        return _NONE
    read = identifier.identify(" ".join(regional))
    signals = [s for s in map(_regional_marker, regional) if s]
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
    marker_logits = dict.fromkeys(DIALECTS, 0.0)
    for signal in signals:
        for region, logit in signal.items():
            logits[region] += logit
            # An unlisted classifier marker (logit 0: the identifier weighs it)
            # still backs its region as a lean.
            marker_logits[region] += logit or LEAN_LOGIT
    top = max(logits.values())
    exp = {r: math.exp(v - top) for r, v in logits.items()}
    total = sum(exp.values())
    direction = {r: v / total for r, v in exp.items()}
    return Evidence(message=read, direction=direction, weight=weight, markers=markers,
                    words=len(regional), marker_logits=marker_logits)


@dataclass(frozen=True)
class ThreadDialect:
    """The accumulated state: log-evidence per dialect, its total weight, the prior.

    ``region`` is "msa" while the thread has shown no regional evidence and
    has no country prior (nothing to mirror). ``marker_evidence`` is the
    decayed sum of the marker logits of its messages (None: a checkpoint
    written before it was kept, see :attr:`backed`).
    """

    log_evidence: Mapping[str, float] = field(default_factory=lambda: dict.fromkeys(DIALECTS, 0.0))
    weight: float = 0.0
    prior: str | None = None
    marker_evidence: Mapping[str, float] | None = field(
        default_factory=lambda: dict.fromkeys(DIALECTS, 0.0))

    def with_prior(self, region: str | None) -> ThreadDialect:
        """The same evidence under the caller's country region (None: no prior)."""
        region = region if region in DIALECTS else None
        return ThreadDialect(self.log_evidence, self.weight, region, self.marker_evidence)

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
        markers = None if self.marker_evidence is None else {
            r: keep * self.marker_evidence.get(r, 0.0) + w * evidence.marker_logits.get(r, 0.0)
            for r in DIALECTS
        }
        return ThreadDialect(log_evidence, keep * self.weight + w, self.prior, markers)

    def _prior_logit(self, region: str) -> float:
        return COUNTRY_LOGIT if region == self.prior else 0.0

    def posterior(self) -> dict[str, float]:
        """Probabilities over :data:`DIALECTS` (flat without evidence or prior)."""
        z = [self.log_evidence.get(r, 0.0) + self._prior_logit(r) for r in DIALECTS]
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

    @property
    def backed(self) -> bool:
        """True when no other region has more marker evidence than :attr:`region`,
        the country counting as one lean word.

        The posterior also holds the identifier's read of the other words, and
        that read is tweet-trained: «كود الخصم وين أكتبه بالضبط؟» from Iraq is
        gulf 0.82, on the one marker «وين» that Gulf, Iraq and the Levant all
        say. The identifier may choose between regions the marker words cannot
        tell apart (it knows «تردون»، «ناخد» that no row lists), but it may not
        overrule them and the country: «وين» ties Gulf and Iraq, Iraq's country
        puts Iraq ahead, so the Gulf read is not mirrored. A checkpoint without
        marker evidence is backed (the posterior alone decided, as before).

        >>> from nlp import load_dialect_identifier
        >>> ident = load_dialect_identifier()
        >>> t = ThreadDialect().with_prior("iraqi")
        >>> t.observe(message_evidence(ident, "كود الخصم وين أكتبه بالضبط؟")).backed
        False
        >>> t.observe(message_evidence(ident, "شكد سعر التوصيل هسه؟")).backed
        True
        """
        if self.marker_evidence is None:
            return True
        if not self.has_evidence:
            return False
        lead = {r: self.marker_evidence.get(r, 0.0) + (COUNTRY_MARKER if r == self.prior else 0.0)
                for r in DIALECTS}
        mine = lead.pop(self.region)
        return mine >= max(lead.values()) - _TIE

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form for the checkpoint (the prior is re-applied every turn)."""
        data: dict[str, Any] = {
            "log_evidence": {r: round(v, 6) for r, v in self.log_evidence.items()},
            "weight": round(self.weight, 6)}
        if self.marker_evidence is not None:
            data["marker_evidence"] = {r: round(v, 6) for r, v in self.marker_evidence.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ThreadDialect:
        if not data:
            return cls()
        raw = data.get("log_evidence") or {}
        markers = data.get("marker_evidence")
        weight = float(data.get("weight", 0.0))
        if markers is None and weight <= 0:
            markers = {}  # nothing observed yet: nothing to keep from before
        kept = None if markers is None else {r: float(markers.get(r, 0.0)) for r in DIALECTS}
        return cls({r: float(raw.get(r, 0.0)) for r in DIALECTS}, weight, None, kept)
