"""Dialect region identification: hashed n-gram features, linear model, numpy only.

The artefact ``nlp/data/dialect.npz.gz`` is produced by
``bench/train_dialect.py`` from ../shared/data; inference never downloads
anything.  Features deliberately ignore what only tweets have (URLs,
mentions, hashtags, QADI placeholders, emoji, Latin, digits, letter
elongation) so that the model transfers to customer-support messages.
"""

from __future__ import annotations

import gzip
import io
import itertools
import math
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Protocol

import numpy as np
import numpy.typing as npt

from nlp.arabizi import _word_to_arabic, looks_arabizi
from nlp.errors import ResourceUnavailable
from nlp.normalize import clean, fold
from nlp.tokens import TokenKind, typed_texts

__all__ = [
    "REGIONS",
    "DialectIdentifier",
    "DialectResult",
    "LinearDialectModel",
    "dialect_features",
    "load_dialect_identifier",
    "pool_dialects",
    "read_dialect_model",
]

REGIONS: tuple[str, ...] = ("msa", "gulf", "egyptian", "levantine", "maghrebi", "iraqi")

# Strong markers, folded.  They become extra features ("L:<region>") whose
# weight is learned, so a wrong guess here costs little, but they carry the
# model on two-word messages whose n-grams it has never seen.
MARKERS: Mapping[str, tuple[str, ...]] = {
    "iraqi": ("شلون", "شكو", "ماكو", "اكو", "هسه", "شنو", "كلش", "اريد", "ديروح", "شگد",
              "چان", "اغاتي", "عيني", "مال", "هواية", "گاع",
              # how much / when / mine-yours (مالتي) / like this / to speak /
              # with me / I can / man! — everyday support-chat function words.
              "شكد", "شوكت", "مالتي", "مالتك", "مالته", "مالتنا", "مالتكم", "هيج", "هيچ",
              "يحجي", "احجي", "وياي", "وياك", "اكدر", "ماكدر", "يمعود", "لعد", "يمي", "يمك",
              "انطيني", "انطي"),
    "gulf": ("ايش", "وش", "زين", "وايد", "ابغي", "ابي", "ابغا", "حق", "الحين",
             "ترا", "عاد", "يبي", "شفيك", "هالحين", "مب", "يالله", "خلاص", "جذي", "كذا",
             "ودي", "شفيه", "حقي", "حقك", "حقه", "حقنا", "تبي", "نبي", "ابيه", "شسمه", "چذي",
             "اشوا", "يعطيك", "عطوني"),
    "egyptian": ("ازاي", "عايز", "عاوز", "كده", "مش", "ازيك", "اوي", "دلوقتي", "بتاع",
                 "ليه", "فين", "امتي", "خالص", "حاجه", "يعني", "اللي", "بقي", "احنا", "دول",
                 "عايزه", "عاوزه", "عايزين", "مفيش", "بتاعي", "بتاعتي", "بتاعك", "امبارح",
                 "كام", "ده", "دي", "علشان"),
    "levantine": ("شو", "هلق", "كتير", "بدي", "هيك", "منيح", "ليش", "شي", "هاد", "هاي",
                  "هلا", "كمان", "بدك", "وين", "لسا", "عنجد", "يلي", "مبارح",
                  "قديش", "بدنا", "منشان", "مشان", "تبع", "تبعي", "تبعك", "هيدا", "هيدي",
                  "مصاري", "المصاري"),
    "maghrebi": ("واش", "بزاف", "دابا", "كيفاش", "علاش", "بصح", "ديال", "برشا", "توا",
                 "شنوا", "ماشي", "كيداير", "غادي", "بغيت", "نتا", "راني", "راه", "هاذي", "برك",
                 "والو", "عافاك", "ديالي", "ديالك", "ديالو", "شنوه", "شنيه", "باش", "كيما",
                 "هكا", "هاكا", "راهو", "بغينا"),
    "msa": ("الذي", "التي", "الذين", "سوف", "لقد", "ليس", "انه", "هذه", "ذلك", "تلك",
            "ايضا", "حيث", "قد", "لكن", "ماذا", "لماذا", "لن", "كيف",
            # question particle, past negation, formal requests: dialects say
            # them otherwise (واش/شنو/ما + perfect, ابي/بدي/عايز).
            "هل", "لم", "منذ", "لدي", "لديك", "لدينا", "اود", "ارغب", "ارجو", "يمكنني",
            "يمكنك"),
}
_MARKER_OF: dict[str, str] = {w: r for r, ws in MARKERS.items() for w in ws}


def _marker_of(word: str) -> str | None:
    """The region a marker word signals, also behind a conjunction و/ف (U+0648/U+0641).

    >>> _marker_of("ولم"), _marker_of("فماذا"), _marker_of("وين")
    ('msa', 'msa', 'levantine')
    """
    region = _MARKER_OF.get(word)
    if region is None and len(word) > 2 and word[0] in "وف":
        region = _MARKER_OF.get(word[1:])
    return region

_REGION_INDEX = {r: i for i, r in enumerate(REGIONS)}

# Arabizi spellings of marker words that letter-by-letter transliteration
# loses or turns into another region's marker: "wach" (Maghrebi واش) comes out
# «وش», the Gulf "what"; "3ayza" «عايزا»; "delwa2ty" «دلوءتي». They are read
# as their Arabic spelling instead (common spellings, not from any eval set).
_ARABIZI_MARKERS: Mapping[str, str] = {
    # Maghrebi
    "wach": "واش", "khassni": "خاصني", "khasni": "خاصني", "bach": "باش", "bzaf": "بزاف",
    "bezzaf": "بزاف", "daba": "دابا", "kifach": "كيفاش", "3lach": "علاش", "dyal": "ديال",
    "dial": "ديال", "dyali": "ديالي", "bghit": "بغيت", "walou": "والو", "walo": "والو",
    # Egyptian
    "3ayez": "عايز", "3ayz": "عايز", "3ayza": "عايزه", "3awez": "عاوز", "3awza": "عاوزه",
    "ezay": "ازاي", "ezzay": "ازاي", "izay": "ازاي", "delwa2ty": "دلوقتي",
    "dlwa2ty": "دلوقتي", "delwa2ti": "دلوقتي", "keda": "كده", "kda": "كده", "bta3": "بتاع",
    "bta3i": "بتاعي", "bta3y": "بتاعي", "emta": "امتي", "l7ad": "لحد", "le7ad": "لحد",
    # Levantine
    "halla2": "هلق", "hala2": "هلق", "baddi": "بدي", "badde": "بدي", "bade": "بدي",
    "hek": "هيك", "2adesh": "قديش", "addesh": "قديش", "masari": "مصاري",
    # Iraqi
    "shgad": "شكد", "shkad": "شكد", "hessa": "هسه", "mako": "ماكو", "maku": "ماكو",
    "aku": "اكو", "shlon": "شلون",
    # Gulf
    "wayed": "وايد", "wayid": "وايد", "abgha": "ابغي", "abghi": "ابغي", "al7een": "الحين",
    "el7een": "الحين", "l7een": "الحين", "wesh": "وش", "wsh": "وش",
}

# Tweet residue that must not become a feature: QADI placeholders (USER, URL,
# NUM, EMOJI) are Latin and dropped with all Latin tokens below; letter
# elongation (U+0621–U+064A repeated ≥ 3 times) is squeezed to one letter.
_REPEAT_RE = re.compile(r"([\u0621-\u064a])\1{2,}")
_NGRAM_MIN, _NGRAM_MAX = 2, 5
# URLs, e-mails, @mentions and #hashtags (U+0600–U+06FF letters included).
# An e-mail starts only where a non-space run starts ((?<!\S)) and its local
# part is possessive: a bare ``\S+@`` retried the whole run from every
# position, O(n²) on one 100,000-letter word (4.6 s).
_RESIDUE_RE = re.compile(
    r"(?:https?://|www\.)\S*|(?<!\S)[^\s@]++@\S+|[@#][\w\u064b-\u065f\u0670]+"
)
_ARABIC_RE = re.compile("[\u0621-\u064a]")
# A folded Arabic word: hamza U+0621 … yeh U+064A minus tatweel U+0640, plus
# the extended letters U+0671–U+06D3 (پ چ ژ گ …) Iraqi/Gulf users type.
_AR_WORD_RE = re.compile("[\u0621-\u063f\u0641-\u064a\u0671-\u06d3]+")


def _stable_hash(feature: str, buckets: int) -> int:
    # crc32 is stable across processes (str.__hash__ is salted per process).
    return zlib.crc32(feature.encode("utf-8")) & (buckets - 1)


@lru_cache(maxsize=64)
def _ngram_spans(n_chars: int) -> tuple[tuple[int, int], ...]:
    # Byte slices of every 2–5-gram of a padded word of n_chars UTF-16 units.
    return tuple(
        (i, i + 2 * n)
        for n in range(_NGRAM_MIN, _NGRAM_MAX + 1)
        for i in range(0, 2 * (n_chars - n) + 1, 2)
    )


def _word_features(word: str, buckets: int) -> tuple[int, ...]:
    """Feature ids of one word: the word itself, its char 2–5-grams, its marker.

    Char n-grams are hashed as slices of the UTF-16 bytes of the padded word
    (two bytes per Arabic letter): one encode per word, not per n-gram.
    """
    data = f"<{word}>".encode("utf-16-le")
    mask = buckets - 1
    crc = zlib.crc32
    ids = [_stable_hash(f"w:{word}", buckets)]
    ids += [crc(data[i:j]) & mask for i, j in _ngram_spans(len(data) // 2)]
    marker = _marker_of(word)
    if marker is not None:
        ids.append(_stable_hash(f"L:{marker}", buckets))
    return tuple(ids)


def dialect_words(text: str) -> list[str]:
    """The folded Arabic words the dialect model looks at (Arabizi transliterated).

    >>> dialect_words("@USER ههههههه شلونك حبيبي URL 😂")
    ['ه', 'شلونك', 'حبيبي']
    """
    folded = fold(clean(text))
    if _ARABIC_RE.search(folded):
        # Fast path: Arabic words only, tweet residue removed first so that a
        # hashtag's words do not count.
        if "@" in folded or "#" in folded or "http" in folded or "www." in folded:
            # Most support messages have none: four C-level scans instead of
            # the residue regex tried at every position (≈40 % of this call).
            folded = _RESIDUE_RE.sub(" ", folded)
        return _AR_WORD_RE.findall(_REPEAT_RE.sub(r"\1", folded))
    latin = [t for k, t in typed_texts(folded) if k is TokenKind.LATIN]
    if latin and looks_arabizi(latin):
        return [_ARABIZI_MARKERS.get(w) or _word_to_arabic(w) for w in latin]
    return []


def dialect_features(text: str, buckets: int) -> list[int]:
    """Hashed feature ids (with repeats = counts) for ``text``."""
    return features_of_words(dialect_words(text), buckets)


def features_of_words(ws: list[str], buckets: int) -> list[int]:
    """Hashed feature ids for already extracted dialect words."""
    ids: list[int] = []
    for w in ws:
        ids.extend(_word_features(w, buckets))
    ids.extend(_bigram_ids(ws, buckets))
    return ids


def _bigram_ids(ws: list[str], buckets: int) -> list[int]:
    return [_stable_hash(f"b:{a} {b}", buckets) for a, b in itertools.pairwise(ws)]


@dataclass(frozen=True)
class DialectResult:
    region: str
    confidence: float
    scores: Mapping[str, float]  # probabilities over REGIONS, summing to 1


class DialectIdentifier(Protocol):
    def identify(self, text: str) -> DialectResult: ...


def _result(probs: Sequence[float]) -> DialectResult:
    best = max(range(len(REGIONS)), key=probs.__getitem__)
    return DialectResult(
        region=REGIONS[best],
        confidence=probs[best],
        scores=dict(zip(REGIONS, probs, strict=True)),
    )


# Six-element vectors: plain floats beat numpy's per-call overhead here.
def _log_softmax(z: Sequence[float]) -> list[float]:
    top = max(z)
    log_total = top + math.log(sum(math.exp(v - top) for v in z))
    return [v - log_total for v in z]


def _softmax(z: Sequence[float]) -> list[float]:
    top = max(z)
    e = [math.exp(v - top) for v in z]
    total = sum(e)
    return [v / total for v in e]


class LinearDialectModel:
    """Logistic regression (+ optional naive Bayes) over length-normalised hashed counts.

    >>> model = load_dialect_identifier()
    >>> model.identify("عايز اشحن الرصيد").region
    'egyptian'
    """

    def __init__(
        self,
        weights: npt.NDArray[np.floating],
        bias: npt.NDArray[np.floating],
        nb_weights: npt.NDArray[np.floating] | None = None,
        marker_weight: float = 1.0,
        temperature: npt.NDArray[np.floating] | None = None,
    ) -> None:
        k = len(REGIONS)
        if weights.ndim != 2 or weights.shape[1] != k or bias.shape != (k,):
            raise ResourceUnavailable(
                f"dialect weights have shape {weights.shape}, expected (B, 6)")
        buckets = weights.shape[0]
        if buckets & (buckets - 1):
            raise ResourceUnavailable("dialect bucket count must be a power of two")
        if nb_weights is not None and nb_weights.shape != weights.shape:
            raise ResourceUnavailable("naive Bayes weights must have the same shape as the LR ones")
        # One (B, 6 or 12) matrix: a single gather per message serves both models.
        stacked = weights if nb_weights is None else np.hstack([weights, nb_weights])
        self._w = np.ascontiguousarray(stacked, dtype=np.float32)
        self._b = [float(x) for x in bias]
        # Softmax temperature per message length in words (last entry: that
        # many or more), fitted by bench/train_dialect.py on held-back
        # training rows: one word must not look as sure as a whole message.
        self._temps = [1.0] if temperature is None else [float(t) for t in temperature]
        if not self._temps or min(self._temps) <= 0:
            raise ResourceUnavailable("dialect temperatures must be positive")
        self._has_nb = nb_weights is not None
        self.buckets = buckets
        # Each marker word adds this to its region's logit on top of the
        # learned weights: the learned ones are diluted by tweet vocabulary,
        # while in a two-word support message one marker is the evidence.
        self.marker_weight = marker_weight
        # The model is linear, so a word's whole contribution (its own id,
        # its char n-grams, its marker) is one summed row: cached per word,
        # a message costs one row per word plus its bigrams — no per-message
        # gather over ~250 n-gram ids.  Words new to the cache are summed in
        # one gather per message (numpy's per-call cost dominates per word).
        # Bounded: cleared when full, like a per-process memo.
        self._entries: dict[str, tuple[npt.NDArray[np.float64], int, int]] = {}
        self._max_entries = 100_000

    def _word_rows(self, ws: list[str]) -> list[tuple[npt.NDArray[np.float64], int, int]]:
        """(summed weight row, number of features, marker index or -1) per word."""
        cache = self._entries
        got = [cache.get(w) for w in ws]
        if None not in got:
            return got  # type: ignore[return-value]
        missing = list(dict.fromkeys(w for w, e in zip(ws, got, strict=True) if e is None))
        ids_per_word = [_word_features(w, self.buckets) for w in missing]
        starts = list(itertools.accumulate((len(ids) for ids in ids_per_word[:-1]), initial=0))
        flat = list(itertools.chain.from_iterable(ids_per_word))
        sums = np.add.reduceat(self._w.take(flat, axis=0), starts, axis=0, dtype=np.float64)
        fresh = {}
        for w, ids, row in zip(missing, ids_per_word, sums, strict=True):
            marker = _marker_of(w)
            fresh[w] = (row, len(ids), -1 if marker is None else _REGION_INDEX[marker])
        # Read from the local dict, never back from the cache: another thread
        # may clear it between these lines.
        if len(cache) + len(fresh) > self._max_entries:
            cache.clear()
        cache.update(fresh)
        return [e if e is not None else fresh[w] for w, e in zip(ws, got, strict=True)]

    def log_scores(self, text: str) -> list[float]:
        """Calibrated log-probabilities over REGIONS (up to a constant)."""
        ws = dialect_words(text)
        if not ws:
            return _log_softmax(self._b)
        t = self._temps[min(len(ws), len(self._temps)) - 1]
        return [v / t for v in self.raw_log_scores(ws)]

    def raw_log_scores(self, ws: list[str]) -> list[float]:
        """Uncalibrated log-scores of already extracted dialect words (non-empty)."""
        k = len(REGIONS)
        entries = self._word_rows(ws)
        bigrams = _bigram_ids(ws, self.buckets)
        total = np.sum([e[0] for e in entries], axis=0)
        if bigrams:
            total += self._w.take(bigrams, axis=0).sum(axis=0, dtype=np.float64)
        n_features = len(bigrams) + sum(e[1] for e in entries)
        markers = [0.0] * k
        for e in entries:
            if e[2] >= 0:
                markers[e[2]] += self.marker_weight
        # Counts scaled by 1/sqrt(number of features): length-independent
        # like an L2 norm, without a per-message np.unique.
        row = (total * (1.0 / math.sqrt(n_features))).tolist()
        z_lr = _log_softmax([row[i] + self._b[i] + markers[i] for i in range(k)])
        if not self._has_nb:
            return z_lr
        # Equal-weight product of the two models' distributions (weight fixed
        # a priori, not tuned on the held-out split).
        z_nb = _log_softmax([row[k + i] + markers[i] for i in range(k)])
        return [0.5 * (a + b) for a, b in zip(z_lr, z_nb, strict=True)]

    def identify(self, text: str) -> DialectResult:
        return _result(_softmax(self.log_scores(text)))


_ARTEFACT = "dialect.npz.gz"


def read_dialect_model() -> LinearDialectModel:
    """A fresh instance of the shipped model (empty word cache); most callers
    want :func:`load_dialect_identifier`."""
    try:
        blob = resources.files("nlp.data").joinpath(_ARTEFACT).read_bytes()
    except (FileNotFoundError, ModuleNotFoundError) as exc:
        raise ResourceUnavailable(f"dialect model {_ARTEFACT} missing from nlp/data") from exc
    with np.load(io.BytesIO(gzip.decompress(blob))) as arrays:
        nb = arrays["nb_weights"] if "nb_weights" in arrays.files else None
        temps = arrays["temperature"] if "temperature" in arrays.files else None
        return LinearDialectModel(arrays["weights"], arrays["bias"], nb, temperature=temps)


@lru_cache(maxsize=1)
def load_dialect_identifier() -> DialectIdentifier:
    """The shipped model (package data, loaded once per process and shared)."""
    return read_dialect_model()


def pool_dialects(
    results: Sequence[DialectResult], weights: Sequence[float] | None = None
) -> DialectResult:
    """Pool a thread's messages: weighted sum of log-probabilities, renormalised.

    Summing log-probabilities treats messages as independent evidence, so one
    confident Egyptian message outweighs three unsure ones, and the thread's
    dialect stabilises as messages accumulate.

    >>> a = DialectResult("gulf", 0.6, dict(zip(REGIONS, (.1, .6, .1, .1, .05, .05))))
    >>> pool_dialects([a, a]).region
    'gulf'
    """
    if not results:
        uniform = 1.0 / len(REGIONS)
        return DialectResult(REGIONS[0], uniform, dict.fromkeys(REGIONS, uniform))
    ws = [1.0] * len(results) if weights is None else list(weights)
    if len(ws) != len(results):
        raise ValueError("pool_dialects: one weight per result is required")
    total = [0.0] * len(REGIONS)
    for res, w in zip(results, ws, strict=True):
        # Floor at 1e-9 so one zero score cannot veto a region forever.
        probs = [max(res.scores.get(r, 0.0), 1e-9) for r in REGIONS]
        norm = sum(probs)
        total = [t + w * math.log(p / norm) for t, p in zip(total, probs, strict=True)]
    return _result(_softmax(total))
