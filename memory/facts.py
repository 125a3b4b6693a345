"""Facts a user states about themself, pulled from their own words by rules.

The :class:`FactExtractor` protocol is the seam: the model layer can swap in
a better extractor; :class:`RuleFactExtractor` is the offline default.  It
recognises, across dialects, a name ("اسمي محمد", "esmi Ahmed", "my name is
Sara"), a preferred form of address ("ناديني ابو فهد", "call me Abu Fahad"),
order/account/phone numbers and e-mail addresses (stored MASKED: only the
last digits survive, e.g. ``****4821``, ``s***@example.com``) and simple
preferences ("افضل التواصل بالواتساب").

:func:`thread_facts` is the other half: the same rules, but the values as
typed, for the *thread's* own use (an order number must be reusable in the
next reply: «طلبي رقم 48213 ما وصل» → ``{"order_number": "48213"}``). Those
live in the thread's checkpoint — next to the message they came from — never
in the long-term memory store. Personal data (cards, IBANs, national IDs,
phones, e-mail: ``nlp.pii``) is masked before any rule runs, there too: «رقم
جوالي 0501234567» → ``{"phone_number": "****4567"}``.

Rules run on a lightly cleaned copy (harakat U+064B–U+0652 and tatweel
U+0640 removed, so "اسمِي" matches) and take values from that copy.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Protocol

from memory.records import Kind, NewRecord
from nlp import pii

__all__ = ["ExtractedFact", "FactExtractor", "RuleFactExtractor", "answered_number",
           "mask_email", "mask_number", "thread_facts"]


@dataclass(frozen=True, slots=True)
class ExtractedFact:
    """One fact.  ``text`` is what gets stored and shown: never a raw number.

    Single-valued slots (name, address_as, contact_channel) get one stable id
    per user, so restating them updates the stored fact in place.
    """

    kind: Kind
    slot: str
    value: str
    text: str

    def record_id(self, user_id: str) -> str:
        if self.slot in _SINGLE_VALUED:
            return f"fact:{user_id}:{self.slot}"
        digest = hashlib.blake2s(self.value.encode(), digest_size=6).hexdigest()
        return f"fact:{user_id}:{self.slot}:{digest}"

    def to_record(
        self, *, tenant: str, user_id: str, thread_id: str | None = None,
        turn_id: str | None = None,
    ) -> NewRecord:
        """The record to ``put``; metadata keeps the slot and value for the prompt."""
        return NewRecord(
            tenant=tenant, kind=self.kind, id=self.record_id(user_id), user_id=user_id,
            text=self.text, metadata={"slot": self.slot, "value": self.value},
            thread_id=thread_id, turn_id=turn_id,
        )


class FactExtractor(Protocol):
    def extract(self, text: str) -> list[ExtractedFact]:
        """Facts the speaker states about themself, in order of appearance."""
        ...


_SINGLE_VALUED = frozenset({"name", "address_as", "contact_channel", "language"})

# Harakat U+064B–U+0652, superscript alef U+0670, tatweel U+0640.
_MARKS = re.compile(r"[\u064B-\u0652\u0670\u0640]")
# ASCII digits, Arabic-Indic U+0660–U+0669, Extended (Persian) U+06F0–U+06F9.
_DIGIT = r"[0-9\u0660-\u0669\u06F0-\u06F9]"
_TO_ASCII = str.maketrans("٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹", "01234567890123456789")
_A = "[اأإآ]"  # alef with or without hamza
_WORD = r"[\u0621-\u064A]+"  # one Arabic word (letters U+0621–U+064A)
# Name-particle words that need the following word: عبد الله، ابو فهد، ام سارة.
_JOINERS = {"عبد", "ابو", "أبو", "بو", "ام", "أم", "بن", "ابن", "بنت"}
# Titles a person may ask to be called by, kept with the name: دكتور خالد.
_TITLES = {"دكتور", "د", "استاذ", "أستاذ", "استاذة", "أستاذة", "شيخ", "مهندس", "مهندسة",
           "الدكتور", "الاستاذ", "الأستاذ", "الشيخ", "المهندس", "دكتورة"}

_NAME_CUE = re.compile(
    rf"(?:(?<![\u0621-\u064A]){_A}نا\s+)?(?<![\u0621-\u064A])(?:{_A}سمي|{_A}سمى)(?:\s+هو|\s+هي)?\s+"
    rf"(?P<ar>{_WORD}(?:\s+{_WORD}){{0,2}})"
    r"|(?i:\b(?:my\s+name\s+is|my\s+name's|ana\s+esmi|ana\s+ismi|esmi|ismi)\s+)"
    r"(?P<lat>[A-Za-z][a-z'A-Z-]+(?:\s+[A-Z][a-zA-Z'-]+)?)",
)
_ADDRESS_CUE = re.compile(
    rf"(?<![\u0621-\u064A])(?:ن{_A}دين?ي|ن{_A}دوني|ن{_A}ديلي|تن{_A}دوني|تن{_A}ديني|سميني|خ{_A}طبني)"
    rf"\s+(?:ب\s*|يا\s+)?(?P<ar>{_WORD}(?:\s+{_WORD}){{0,2}})"
    r"|(?i:\b(?:please\s+)?call\s+me\s+)(?P<lat>[A-Za-z][a-zA-Z'-]+(?:\s+[A-Z][a-zA-Z'-]+)?)",
)
# Cue words before a number, captured as written ("رقم طلبي", "order #").
_NUMBER_CUE = re.compile(
    rf"(?P<cue>رقم\s+(?:ال)?(?P<ar>طلب|{_A}وردر|حساب|عميل|شحن|شحنة|فاتورة|جوال|موبايل|تلفون|هاتف|"
    rf"تليفون|بطاقة|ايبان|{_A}يبان)(?:ي|ية|ه)?|(?:ال)?طلب(?:ي|يتي|ية)?\s+رقم|"
    r"(?i:order|account|tracking|customer|invoice|phone)\s*(?:number|no\.?|#|num)?)"
    # The number as typed, or as nlp.pii already masked it («****4567»).
    rf"\s*[:#]?\s*(?P<num>(?:{_DIGIT}[\s-]?){{4,24}}{_DIGIT}|\*{{4}}{_DIGIT}{{2,4}})",
)
_NUMBER_SLOTS = {
    "طلب": "order_number", "اوردر": "order_number", "أوردر": "order_number",
    "order": "order_number", "إيبان": "account_number", "أيبان": "account_number",
    "شحن": "order_number", "شحنة": "order_number", "tracking": "order_number",
    "حساب": "account_number", "account": "account_number", "عميل": "account_number",
    "customer": "account_number", "بطاقة": "account_number", "ايبان": "account_number",
    "فاتورة": "invoice_number", "invoice": "invoice_number",
    "جوال": "phone_number", "موبايل": "phone_number", "تلفون": "phone_number",
    "هاتف": "phone_number", "تليفون": "phone_number", "phone": "phone_number",
}
# The local part may be nlp.pii's masked form («s***»).
_EMAIL = re.compile(r"(?<![\w.+-])([A-Za-z0-9][A-Za-z0-9._%+*-]{0,63})@"
                    r"([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24})(?![\w-])")
# A reply that is (almost) only a number: «48213», «رقمه ٤٨٢١٣», «هذا هو 48213».
_BARE_NUMBER = re.compile(rf"^\W*(?:[\u0621-\u064A]+\s+){{0,3}}"
                          rf"(?P<num>(?:{_DIGIT}[\s-]?){{3,24}}{_DIGIT})\W*$")
# "I prefer / I like" across dialects: MSA افضل/احب, Levantine بفضل/بحب,
# Maghrebi نفضل/نحب; English "I prefer".  Any clause after these is a preference.
_PREFER_CUE = re.compile(
    rf"(?P<neg>(?:ما|مش|مو|لا|(?i:don't|do\s+not))\s+)?"
    rf"(?<![\u0621-\u064A])(?:{_A}فضل|بفضل|نفضل|يفضل|{_A}حب|بحب|نحب)\s+(?P<what>[^.!?؟،,\n]{{3,80}})"
    r"|(?i:\bi\s+(?:prefer|would\s+prefer|like)\s+)(?P<lat>[^.!?\n]{3,80})",
)
# "I want" (Gulf ابغى/ابي/ودي, Egyptian عايز/عاوز, Levantine بدي, Maghrebi
# بغيت, MSA/Iraqi اريد) mostly opens a REQUEST ("ابي اعرف وين طلبي"); it is a
# preference only when it says how to be contacted or in which language.
_WANT_CUE = re.compile(
    rf"(?<![\u0621-\u064A])(?:{_A}بغ[اى](?:كم|ك)?|{_A}بي(?:كم|ك)?|ودي|بدي|عايز|عايزة|عاوز|"
    rf"بغيت|{_A}ريد)"
    r"\s+(?P<what>[^.!?؟،,\n]{3,80})"
)
_CHANNELS = (
    ("whatsapp", re.compile(r"واتس|وتس|(?i:whats\s?app)")),
    ("email", re.compile(rf"{_A}يميل|{_A}لبريد|بريد|(?i:e-?mail)")),
    ("sms", re.compile(r"رسالة نصية|رسايل|رسائل|مسج|(?i:\bsms\b|text message)")),
    ("phone", re.compile(r"اتصال|مكالمة|تلفون|التلفون|الجوال|(?i:\bphone\b|\bcall\b)")),
)
# A preference is about contact when the clause names how to be reached.
_CONTACT_WORDS = re.compile(
    r"تواصل|الرد|تردو|تكلم|كلمو|يكلمني|تحكو|تحكي|اتصل|تتصل|ترسل|راسل|تبعث|ابعث|"
    r"(?i:contact|reach)"
)
_LANGUAGES = (
    ("en", re.compile(rf"(?:بال|ب)?{_A}نجليزي|{_A}نقليزي|(?i:\benglish\b)")),
    ("ar", re.compile(r"(?:بال)عربي|(?i:\barabic\b)")),
)
# Question words after «اسمي»: «اسمي ايه؟» asks for the name, it does not give one.
_NOT_NAMES = frozenset({"ايه", "إيه", "اي", "أي", "شنو", "شو", "وش", "ايش", "إيش", "شنهو",
                        "شسمه", "مين", "منو", "شكون", "واش", "اش", "ماهو", "هو", "هي"})
# Clause endings inside a captured name: "محمد ورقم طلبي …" stops before "ورقم".
_NAME_STOP = re.compile(r"^(?:و|ف)\S*$")


def mask_number(raw: str) -> str:
    """Digits only, all but the last four hidden (last two when short).

    Idempotent: a value ``nlp.pii`` already masked is returned as it is.

    >>> mask_number("٩٨٧ ٦٥٤-٣٢١٠"), mask_number("48213"), mask_number("****4567")
    ('****3210', '****13', '****4567')
    """
    if pii.is_masked(raw):
        return raw
    return pii.mask_digits(raw)


def _asks(m: re.Match[str]) -> bool:
    """«اسمي ايه؟» / «شنو اسمي؟»: a question about the name, not a name."""
    return bool(m["ar"]) and m["ar"].split()[0] in _NOT_NAMES


def _number_slot(m: re.Match[str]) -> str:
    """«رقم طلبي» / «طلبي رقم» / «order #» → 'order_number'."""
    what = (m["ar"] or m["cue"].split()[0]).lower().lstrip("#")
    what = what[2:] if what.startswith("ال") else what
    if what.startswith("طلب"):
        what = "طلب"  # طلبي، طلبيتي، طلبية
    return _NUMBER_SLOTS.get(what, "reference_number")


def mask_email(address: str) -> str:
    """«sara.k@example.com» → 's***@example.com': enough to recognise, not to write to."""
    return pii.mask_email(address)


def _name_value(words: list[str]) -> str:
    """First word, plus one when it is a particle (عبد/ابو) or a title, plus a family name."""
    taken = [words[0]]
    rest = words[1:]
    if rest and (words[0] in _JOINERS or words[0] in _TITLES):
        taken.append(rest.pop(0))
    if rest and rest[0].startswith("ال") and len(rest[0]) > 3 and not _NAME_STOP.match(rest[0]):
        taken.append(rest[0])  # family name: الحربي، القحطاني
    return " ".join(taken)


class RuleFactExtractor:
    """Regex rules over the user's own words; no model, no network.

    >>> [(f.slot, f.value) for f in RuleFactExtractor().extract("انا اسمي محمد ورقم طلبي 48213921")]
    [('name', 'محمد'), ('order_number', '****3921')]
    """

    def extract(self, text: str) -> list[ExtractedFact]:
        # Personal data is masked first (idempotent: the engine already did),
        # so no rule below can ever copy a raw card, IBAN, ID or phone into a fact.
        clean = pii.mask(_MARKS.sub("", text))
        found: list[tuple[int, ExtractedFact]] = []
        for m in _NAME_CUE.finditer(clean):
            if _asks(m):
                continue
            value = _name_value(m["ar"].split()) if m["ar"] else m["lat"].strip()
            found.append((m.start(), ExtractedFact(Kind.FACT, "name", value, f"اسمي {value}")))
        for m in _ADDRESS_CUE.finditer(clean):
            value = _name_value(m["ar"].split()) if m["ar"] else m["lat"].strip()
            found.append((m.start(), ExtractedFact(
                Kind.PREFERENCE, "address_as", value, f"ناديني {value}")))
        for m in _NUMBER_CUE.finditer(clean):
            slot = _number_slot(m)
            masked = mask_number(m["num"])
            found.append((m.start(), ExtractedFact(
                Kind.FACT, slot, masked, f"{' '.join(m['cue'].split())} {masked}")))
        for m in _EMAIL.finditer(clean):
            masked = m.group() if pii.is_masked(m.group()) else mask_email(m.group())
            found.append((m.start(), ExtractedFact(Kind.FACT, "email", masked,
                                                   f"ايميلي {masked}")))
        for m in _PREFER_CUE.finditer(clean):
            said = " ".join(m.group().split())
            if m["neg"]:  # "ما احب الاتصال": worth keeping, but as said, not as a channel
                found.append((m.start(), ExtractedFact(Kind.PREFERENCE, "preference", said, said)))
            else:
                facts = _preferences(m["what"] or m["lat"], said, strong=True)
                found.extend((m.start(), f) for f in facts)
        for m in _WANT_CUE.finditer(clean):
            said = " ".join(m.group().split())
            found.extend((m.start(), f) for f in _preferences(m["what"], said, strong=False))
        found.sort(key=lambda item: item[0])
        return [fact for _, fact in found]


_NEGATOR = re.compile(r"(?:^|\s)(?:ما|مش|مو|لا|بلاش|بدون|غير|(?i:not|no|don't))\s+\S*$")


def _channel(clause: str) -> str | None:
    """The first contact channel named without a negator just before it."""
    best: tuple[int, str] | None = None
    for channel, rx in _CHANNELS:
        for m in rx.finditer(clause):
            if _NEGATOR.search(clause[: m.start()]):
                continue  # "مش اتصال" / "not by phone"
            if best is None or m.start() < best[0]:
                best = (m.start(), channel)
            break
    return best[1] if best else None


def _preferences(clause: str, said: str, *, strong: bool) -> list[ExtractedFact]:
    """Facts from one "prefer/want …" clause; ``said`` is the user's whole phrase."""
    clause = " ".join(clause.split())
    channel = _channel(clause)
    if channel and (strong or _CONTACT_WORDS.search(clause)):
        return [ExtractedFact(Kind.PREFERENCE, "contact_channel", channel, said)]
    if re.search(r"تكلم|كلم|تحكي|تحكو|رد|(?i:speak|talk|reply)", clause):
        for lang, rx in _LANGUAGES:
            if rx.search(clause):
                return [ExtractedFact(Kind.PREFERENCE, "language", lang, said)]
    if not strong or re.search(_DIGIT, clause):
        return []  # a request, or a number that must never be stored raw
    return [ExtractedFact(Kind.PREFERENCE, "preference", clause, said)]


def answered_number(text: str) -> str | None:
    """The number in a message that is only a number (an answer to «what is your order
    number?»), as ASCII digits: «رقمه ٤٨٢١٣» → '48213'; «ابي ارجع 3 قطع» → None."""
    m = _BARE_NUMBER.match(_MARKS.sub("", text).strip())
    return re.sub(r"\D", "", m["num"].translate(_TO_ASCII)) if m else None


def thread_facts(text: str, *, awaiting: str = "") -> dict[str, str]:
    """Facts a message gives, as typed, for the thread: slot → value.

    ``awaiting`` names the slot the previous reply asked for; a bare number then
    fills it (the customer answered the question).

    >>> thread_facts("اسمي احمد ورقم طلبي ٤٨٢١٣")
    {'name': 'احمد', 'order_number': '48213'}
    >>> thread_facts("48213", awaiting="order_number")
    {'order_number': '48213'}
    """
    clean = pii.mask(_MARKS.sub("", text))  # idempotent: the engine masked already
    out: dict[str, str] = {}
    for m in _NAME_CUE.finditer(clean):
        if _asks(m):
            continue
        out.setdefault("name", _name_value(m["ar"].split()) if m["ar"] else m["lat"].strip())
    for m in _NUMBER_CUE.finditer(clean):
        slot = _number_slot(m)
        num = m["num"]
        out.setdefault(slot, num if pii.is_masked(num) else
                       re.sub(r"\D", "", num.translate(_TO_ASCII)))
    for m in _EMAIL.finditer(clean):
        out.setdefault("email", m.group())
    if awaiting and awaiting not in out:
        number = answered_number(clean)
        if number is not None:
            out[awaiting] = number
    return out
