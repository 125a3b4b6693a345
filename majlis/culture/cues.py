"""Reading one message for what it *does*: greet, ask, complain, thank, leave.

Cues are read from whole words only (see :mod:`majlis.culture.phrase_match`): the
message is folded and clitic-segmented by ``nlp.words`` and Latin words are
taken raw, then matched against the greeting table and the cue lexicon
(``data/cues.json``). Words a greeting already used ("كيف" in "كيف حالك") do
not count again as a question.

    >>> c = read_cues("هلا، عندي مشكلة في الحساب")
    >>> c.openers, c.request, c.complaint, c.farewell
    (('hala',), True, True, False)
    >>> read_cues("عندي مشكلة في تطبيق الموبايل").farewell   # باي is not inside الموبايل
    False
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import nlp
from majlis.culture.greetings import GreetingTable, load_greetings
from majlis.culture.phrase_match import (
    Match,
    PhraseIndex,
    Script,
    Words,
    WordSplitter,
    arabizi_skeleton,
    is_latin,
    latin_words,
)

__all__ = ["CueReader", "Cues", "Formality", "read_cues"]

Formality = Literal["formal", "neutral", "casual"]
Gender = Literal["m", "f"]

# Runs of exclamation marks, or of mixed ?/؟ (U+061F ARABIC QUESTION MARK)/! ,
# read as exasperation: "وين الطلب!!" , "ليش كذا؟؟؟".
_EXASPERATION = re.compile(r"!{2,}|[!?\u061F]{3,}")
# Written laughter: ههه (U+0647 repeated) or "hahaha"; a casual register marker.
_LAUGHTER = re.compile(r"\u0647{3,}|\b(?:ha){2,}\b", re.IGNORECASE)
# Pictographic emoji (U+1F300–U+1FAFF) and dingbats/symbols (U+2600–U+27BF).
_EMOJI = re.compile(r"[\U0001F300-\U0001FAFF\u2600-\u27BF]")
# A question mark, Latin or Arabic (U+061F).
_QUESTION_MARK = re.compile(r"[?\u061F]")

# Insistence phrases that only *name* the service («خدمة العملاء»): alone or
# wanted («ابي خدمة العملاء») they ask for a person, but asked *about* («وش رقم
# خدمة العملاء؟», «ما البريد الإلكتروني لخدمة العملاء؟») they are a question for
# the knowledge base, unless a talk verb says the customer wants to be put through.
_SERVICE_NAMES = ("خدمة العملاء", "خدمة الزبائن", "customer service", "customer care")
# What one asks *about* the service: its number, mail, hours, address.
_ABOUT_SERVICE = ("رقم", "الرقم", "بريد", "البريد", "ايميل", "الايميل", "إيميل", "الإيميل",
                  "هاتف", "تلفون", "تليفون", "واتساب", "عنوان", "دوام", "أوقات", "ساعات",
                  "number", "email", "phone", "whatsapp", "hours", "ra2m", "raqm", "nemra")
# Verbs of being put through: with these the service's name is a handoff request.
_TALK_VERBS = ("أكلم", "كلم", "نكلم", "أتكلم", "نتكلم", "أحكي", "نحكي", "حولني", "حولوني",
               "حوّلني", "وصلني", "وصلوني", "كلموني", "اتصلوا", "talk", "speak", "connect",
               "transfer", "nkalem", "akalem", "kalemni")


@dataclass(frozen=True, slots=True)
class Cues:
    """What one message says, read from whole words.

    ``openers`` and ``closers`` are keys into the greeting table, in the order
    the user said them (e.g. ``("salam", "shlonak")``, ``("shukran",)``).
    ``self_gender`` comes only from the user's own words about themselves
    ("انا تعبانة" → "f"), never from a name. ``formality`` is how the user writes.
    """

    openers: tuple[str, ...] = ()
    wellbeing: bool = False
    thanks: bool = False
    farewell: bool = False
    request: bool = False
    question: bool = False
    complaint: bool = False
    frustration: bool = False
    insistence: bool = False
    self_gender: Gender | None = None
    formality: Formality = "neutral"
    closers: tuple[str, ...] = ()

    @property
    def business(self) -> bool:
        """The message asks for something: a request, question, complaint or a human."""
        return self.request or self.question or self.complaint or self.insistence

    @property
    def greeted(self) -> bool:
        return bool(self.openers) or self.wellbeing


def _unique(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


@lru_cache(maxsize=1)
def _packaged_lexicon() -> Mapping[str, Any]:
    text = resources.files("majlis.culture").joinpath("data/cues.json").read_text("utf-8")
    data: Mapping[str, Any] = json.loads(text)
    return data


class CueReader:
    """Reads :class:`Cues` with a given word splitter, greeting table and lexicon."""

    # Lexicon categories matched only on words no greeting/closer phrase used.
    _BUSINESS = ("request", "complaint", "question", "insistence")
    # Categories matched on every word (a greeting can be formal or casual).
    _TONE = ("frustration", "formal", "casual")

    def __init__(
        self,
        *,
        words: WordSplitter,
        greetings: GreetingTable,
        lexicon: Mapping[str, Any],
    ) -> None:
        self._words = words
        self._greetings = greetings
        self._greeting_index = PhraseIndex(
            ((p, e.key) for e in greetings.entries.values() for p in e.all_phrases()), words=words
        )
        self._business = PhraseIndex(
            ((p, cat) for cat in self._BUSINESS for p in lexicon[cat]), words=words
        )
        # One-word Latin business cues by consonant skeleton, so that Arabizi
        # spellings the lexicon does not list ("moshkila" for "moshkela") count.
        self._skeletons: dict[str, str] = {}
        for cat in self._BUSINESS:
            for phrase in lexicon[cat]:
                ws = latin_words(phrase) if is_latin(phrase) else []
                if len(ws) == 1 and arabizi_skeleton(ws[0]):
                    self._skeletons.setdefault(arabizi_skeleton(ws[0]), cat)
        self._tone = PhraseIndex(
            ((p, cat) for cat in self._TONE for p in lexicon[cat]), words=words
        )
        self._service = PhraseIndex(
            ((p, "name") for p in _SERVICE_NAMES), words=words
        )
        self._about_service = PhraseIndex(
            ((p, "about") for p in _ABOUT_SERVICE), words=words
        )
        self._talk = PhraseIndex(((p, "talk") for p in _TALK_VERBS), words=words)
        self._edge_only = {
            tuple(latin_words(p) if is_latin(p) else words(p)) for p in greetings.edge_only
        }
        self._self_words = {self._fold_one(w) for w in lexicon["self_reference"]}
        self._negators = {self._fold_one(w) for w in lexicon["negators"]}
        self._gender_of: dict[str, Gender] = {}
        for masculine, feminine in lexicon["gendered_self"]:
            self._gender_of[self._fold_one(masculine)] = "m"
            self._gender_of[self._fold_one(feminine)] = "f"
        self._self_start = {self._fold_one(w) for w in lexicon["self_start"]}
        self._self_start |= {
            self._fold_one(f)
            for m, f in lexicon["gendered_self"]
            if self._fold_one(m) in self._self_start
        }

    def _fold_one(self, word: str) -> str:
        """A lexicon word in the form it takes in a Words sequence."""
        folded = latin_words(word) if is_latin(word) else self._words(word)
        return folded[-1] if folded else word

    def _self_gender(self, words: Words, used: frozenset[tuple[str, int]]) -> Gender | None:
        """Gender from "انا + (negator) + adjective", or a want/need participle opening the
        message ("عايزة اغير الباقة"); None when absent or contradictory."""
        found: set[Gender] = set()
        scripts: tuple[Script, ...] = ("arabic", "latin")
        for script in scripts:
            seq = words.sequence(script)
            for i, word in enumerate(seq):
                if word not in self._self_words:
                    continue
                j = i + 1
                while j < len(seq) and seq[j] in self._negators:
                    j += 1
                if j < len(seq) and seq[j] in self._gender_of:
                    found.add(self._gender_of[seq[j]])
            content = [w for i, w in enumerate(seq) if (script, i) not in used]
            if content and content[0] in self._self_start:
                found.add(self._gender_of[content[0]])
        return found.pop() if len(found) == 1 else None

    def _at_edges(self, words: Words, found: list[Match]) -> list[Match]:
        """Drop edge-only matches ("باي", "هلا" …) that sit inside a sentence. They count
        only where nothing but other greetings stands before them (an opener: "هلا، وين
        طلبي") or after them (a farewell: "شكرا، باي"); thanks and the opener-or-goodbye
        "سلام" may sit at either edge."""
        kept = []
        for match in found:
            seq = words.sequence(match.script)
            if tuple(seq[match.start : match.end]) not in self._edge_only:
                kept.append(match)
                continue
            others = {p for m in found if m is not match for p in m.positions()}
            before = all((match.script, i) in others for i in range(match.start))
            after = all((match.script, i) in others for i in range(match.end, len(seq)))
            entry = self._greetings.entry(match.label)
            at_start = before and (entry.kind != "farewell")
            at_end = after and (entry.kind != "opener" or entry.also_farewell)
            if at_start or at_end:
                kept.append(match)
        return kept

    def _skeleton_cues(self, words: Words, used: frozenset[tuple[str, int]]) -> set[str]:
        """Business categories of Latin words (not used by a greeting) by skeleton:
        "salam 3alaykom, 3andi moshkila" → {"complaint"}."""
        found = set()
        for i, word in enumerate(words.latin):
            if ("latin", i) in used:
                continue
            category = self._skeletons.get(arabizi_skeleton(word))
            if category is not None:
                found.add(category)
        return found

    def _asks_about_service(self, words: Words, matches: list[Match], asks: bool) -> bool:
        """Is every insistence cue only the service's name, asked *about*?

        «وش رقم خدمة العملاء؟» → True (a question); «خدمة العملاء» or «ابي اكلم
        خدمة العملاء» → False (the customer wants a person)."""
        named = {p for m in self._service.find_all(words) for p in m.positions()}
        insisted = [m for m in matches if m.label == "insistence"]
        if not named or any(not m.positions() <= named for m in insisted):
            return False
        if self._talk.find_all(words):
            return False
        return asks or bool(self._about_service.find_all(words))

    def _formality(self, text: str, tone: set[str]) -> Formality:
        formal = "formal" in tone
        casual = (
            "casual" in tone
            or _LAUGHTER.search(text) is not None
            or _EMOJI.search(text) is not None
            or str(nlp.detect_script(text)) == "arabizi"
        )
        if formal and not casual:
            return "formal"
        if casual and not formal:
            return "casual"
        return "neutral"

    def _leftover(self, words: Words, used: frozenset[tuple[Script, int]]) -> bool:
        """Words besides the greetings? Arabizi is in both sequences (its Latin words and
        their transliteration), so a Latin greeting leaves its Arabic copy unused:
        "salam alaikum, kifak?" has nothing left over."""
        free = {s: sum(1 for i in range(len(words.sequence(s))) if (s, i) not in used)
                for s in ("arabic", "latin")}
        copies = len(self._words(" ".join(words.latin))) if words.latin else 0
        return free["latin"] > 0 or free["arabic"] > copies

    def read(self, text: str) -> Cues:
        """Cues of one message: "السلام عليكم، ابي اغير رقمي" → openers ("salam",), request."""
        words = Words.of(text, words=self._words)
        greetings = self._at_edges(words, self._greeting_index.find_longest(words))
        entries = [self._greetings.entry(m.label) for m in greetings]
        closers = [e for e in entries if e.kind != "opener"]
        # "سلام" opens a chat, but next to شكرا it is a goodbye ("شكرا، سلام").
        short_goodbye = bool(closers) and any(e.also_farewell for e in entries)
        openers = [
            e for e in entries if e.kind == "opener" and not (short_goodbye and e.also_farewell)
        ]
        used = frozenset(p for m in greetings for p in m.positions())
        matches = self._business.find_all(words, skip=used)
        business = {m.label for m in matches}
        business |= self._skeleton_cues(words, used)
        tone = {m.label for m in self._tone.find_all(words)}
        leftover = self._leftover(words, used)
        asks = "question" in business or (leftover and bool(_QUESTION_MARK.search(text)))
        if "insistence" in business and self._asks_about_service(words, matches, asks):
            business = (business - {"insistence"}) | {"question"}
        complaint = "complaint" in business
        insistence = "insistence" in business
        return Cues(
            openers=_unique(e.key for e in openers),
            wellbeing=any(e.wellbeing for e in openers),
            thanks=any(e.kind == "thanks" for e in closers),
            farewell=short_goodbye or any(e.kind == "farewell" for e in closers),
            request="request" in business or complaint or insistence,
            question="question" in business or asks,
            complaint=complaint,
            frustration="frustration" in tone or _EXASPERATION.search(text) is not None,
            insistence=insistence,
            self_gender=self._self_gender(words, used),
            formality=self._formality(text, tone),
            closers=_unique(e.key for e in closers),
        )


@lru_cache(maxsize=1)
def default_reader() -> CueReader:
    """The reader over ``nlp.words`` and the packaged tables (built once)."""
    return CueReader(words=nlp.words, greetings=load_greetings(), lexicon=_packaged_lexicon())


def read_cues(text: str) -> Cues:
    """Cues of ``text`` with the packaged tables: "شكرا، مع السلامة" → thanks, farewell."""
    return default_reader().read(text)
