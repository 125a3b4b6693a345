"""Personal data in a message: find it, and mask it before anything is stored.

Kinds (``Kind``): payment cards (Luhn and a network's issuer range and length:
Visa, Mastercard, Amex, mada …), IBANs of the Gulf states, Egypt, Jordan and
Morocco (mod 97, the country's length and BBAN structure, via schwifty),
national IDs (Kuwaiti civil ID with its mod-11 check digit, Saudi national ID
and Iqama and Emirates ID with their Luhn digit, Egyptian national ID by its
structure: century, birth date, governorate; Qatari, Bahraini and Omani IDs by
their structure *and* an ID word nearby, because they carry no public check
digit), Gulf and Egyptian phone numbers (with a country code, in a national
mobile format, or — for the 8-digit Gulf numbers an order number also looks
like — and for landlines after a phone word), and e-mail addresses. The check
rules are in ``nlp.pii_ids``; the corpus they are measured on, with precision
and recall per kind, is ``tests/nlp/pii_corpus.tsv`` (``bench/pii.py``).

Digits may be ASCII, Arabic-Indic (٠–٩) or Persian (۰–۹), with spaces, dashes
or dots between them. A number that fails its check is *not* masked as that
kind: «4111 1111 1111 1112» (bad Luhn) stays as typed.

The masked form keeps the last four characters (two for short numbers), like
``memory.facts.mask_number``; an e-mail keeps its first letter and domain:

>>> mask("بطاقتي ٤١١١ ١١١١ ١١١١ ١١١١ والايميل sara.k@example.com")
'بطاقتي ****1111 والايميل s***@example.com'
>>> mask("جوالي 0501234567")
'جوالي ****4567'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from nlp.pii_ids import (
    IBAN_COUNTRIES,
    ae_emirates_id,
    card_network,
    eg_national_id,
    gulf_structured_id,
    iban_length,
    iban_ok,
    kw_civil_id,
    sa_national_id,
)

__all__ = ["Finding", "Kind", "find", "is_masked", "mask", "mask_digits", "mask_email"]


class Kind(StrEnum):
    CARD = "card"
    IBAN = "iban"
    NATIONAL_ID = "national_id"
    PHONE = "phone"
    EMAIL = "email"


@dataclass(frozen=True, slots=True)
class Finding:
    kind: Kind
    start: int
    end: int
    detail: str  # e.g. "kw_civil_id", "sa_phone", "visa"
    masked: str


_TO_ASCII = str.maketrans("٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹", "01234567890123456789")
# A run of digits with at most one separator between two digits, optionally
# after + or 00; not glued to Latin letters or digits (those are codes, IBANs).
_NUMBER = re.compile(r"(?<![0-9A-Za-z+])\+?[0-9](?:[ \-.\u00a0]?[0-9]){6,29}(?![0-9A-Za-z])")
_SEPARATORS = re.compile(r"[ \-.\u00a0]")
# IBAN: country, check digits, 10–30 alphanumerics in groups of any size.
# The match may run on into the next Latin word («… 7519 please»): it is cut
# to the country's registered length before the check (``_iban_findings``).
_IBAN_RE = re.compile(
    r"(?<![0-9A-Za-z])(?:" + "|".join(IBAN_COUNTRIES) + r")[0-9]{2}"
    r"(?:[ \-]?[0-9A-Za-z]){10,32}(?![0-9A-Za-z])", re.IGNORECASE)
# Bounded by ASCII only: Arabic letters may touch an address («وsara@x.com»,
# «على sara@x.comشكرا») — a \w boundary would miss it.
_EMAIL = re.compile(r"(?<![A-Za-z0-9._%+-])([A-Za-z0-9][A-Za-z0-9._%+-]{0,63})@"
                    r"([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24})(?![A-Za-z0-9-])")
# A date typed with dashes or dots («2024-05-12», «12.05.2024») is a run of 8
# digits like a Gulf phone: never personal data by itself.
_DATE = re.compile(r"(?:19|20)[0-9]{2}[-.][0-9]{1,2}[-.][0-9]{1,2}|"
                   r"[0-9]{1,2}[-.][0-9]{1,2}[-.](?:19|20)[0-9]{2}")
# An already-masked value («****4821», «s***@x.com») is left alone: masking is idempotent.
_MASKED = re.compile(r"\*{3,}[0-9A-Z]{0,4}")  # an IBAN may end in letters: «****DEFG»
# Words that say "this is an ID" / "this is a phone", looked for just before the number.
_ID_CUE = re.compile(
    r"هوي[هة]|هويتي|مدني|المدني|البطاق[هة] المدني[هة]|الشخصي[هة]?|اقام[هة]|إقام[هة]|اقامتي|"
    r"إقامتي|قومي|القومي|السجل|سجل مدني|(?i:\bcpr\b|civil\s*id|national\s*id|\biqama\b|\bqid\b|"
    r"\bid\b|identity|"
    # Arabizi: hawiya, madani, el bitaqa el shakhsiya, e2ama, 2awmi …
    r"\bhawiy+[ae]h?|\bhawiyti|\bmadani|\bbi?ta[q2k]a|\bbe?ta2a|\bsha5si|\bshakhsi|\be2ama|"
    r"\b[2q]awmi)")
_PHONE_CUE = re.compile(
    r"جوال|موبايل|موبيل|تلفون|تليفون|هاتف|واتس|وتس|اتصل|اتصلو|كلموني|رقمي|نمرتي|نمرة|"
    r"(?i:phone|mobile|whats\s?app|call|\btel\b|\bmob\b|"
    # Arabizi: ra2mi, nomrti, jawali/gawali, mobaily, tilifoni, kalmooni …
    r"\bra[2qk]mi\b|\bno?mrti|\bne?mr?a\b|\b[jg]awali|\bmoba?[iy]l[iy]|\bt[ie]l[ie]fon|\bkallem|"
    r"\bkalmo)")
# Words that say the number is something else (an order, an invoice): the
# nearest cue before a number wins, so «جوالي … وطلبي 48213921» is an order.
_OTHER_CUE = re.compile(r"طلب|اوردر|أوردر|شحن|فاتور|(?i:order|invoice|tracking|\bref\b)")
_CUE_WINDOW = 40  # characters before the number in which a cue counts
_MIN_DIGITS, _MAX_DIGITS = 7, 19  # shortest (Omani ID without prefix…) and longest (a card)
# Windows tried per message before only the longest one per group is: a real
# message has a handful of numbers; «1 1 1 1 …» × 2000 must stay cheap.
_WINDOW_BUDGET = 600


def _nearest_cue(before: str) -> str:
    """'id', 'phone', 'other' or '' — the kind of the last cue word in ``before``."""
    best = (-1, "")
    for name, rx in (("id", _ID_CUE), ("phone", _PHONE_CUE), ("other", _OTHER_CUE)):
        for m in rx.finditer(before):
            if m.end() > best[0]:
                best = (m.end(), name)
    return best[1]

# Phone: country code → the national significant number's pattern, and a name.
# Mobiles and landlines differ in length: «+971 5…» is 9 digits, «+971 4…» 8;
# an Egyptian mobile «+20 1[0125]…» is 10 digits, a landline (Cairo 2…) 8–9.
_PHONE_PLANS: dict[str, tuple[re.Pattern[str], str]] = {
    code: (re.compile(pattern), name) for code, pattern, name in (
        ("965", r"[124569][0-9]{7}", "kw_phone"),
        ("966", r"[15][0-9]{8}", "sa_phone"),
        ("971", r"5[0-9]{8}|[234679][0-9]{7}", "ae_phone"),
        ("974", r"[34567][0-9]{7}", "qa_phone"),
        ("973", r"[1367][0-9]{7}", "bh_phone"),
        ("968", r"[279][0-9]{7}", "om_phone"),
        ("20", r"1[0125][0-9]{8}|[2-9][0-9]{7,8}", "eg_phone"),
    )}


def mask_digits(digits: str) -> str:
    """«٤٨٢١٣٩٢١» → '****3921'; fewer than six digits keep two: '****13'."""
    ascii_digits = re.sub(r"[^0-9]", "", digits.translate(_TO_ASCII))
    return "****" + (ascii_digits[-4:] if len(ascii_digits) >= 6 else ascii_digits[-2:])


def mask_email(address: str) -> str:
    """«sara.k@example.com» → 's***@example.com'."""
    local, _, domain = address.partition("@")
    return f"{local[:1]}***@{domain}"


def is_masked(value: str) -> bool:
    """True for a value this module produced: '****4821', 's***@example.com'."""
    return bool(_MASKED.fullmatch(value)) or bool(re.fullmatch(r"\w\*{3}@\S+", value))


def _phone(d: str, *, plus: bool, cue: bool) -> str | None:
    """Which plan a digit string fits as a phone number, or None."""
    rest = d[2:] if d.startswith("00") else d if plus else ""
    if not rest and len(d) > 10 and not d.startswith("0"):
        rest = d  # «966501234567»: country code without + or 00
    for code, (plan, name) in _PHONE_PLANS.items():
        if rest.startswith(code) and plan.fullmatch(rest[len(code):]):
            return name
    if plus or d.startswith("00"):
        return None
    if len(d) == 11 and re.fullmatch(r"01[0125][0-9]{8}", d):
        return "eg_phone"  # Egyptian mobile: 010/011/012/015
    if len(d) == 10 and re.fullmatch(r"05[0-9]{8}", d):
        return "sa_ae_phone"  # Saudi 05X / Emirati 05X mobile, national format
    if len(d) == 8 and cue and d[0] in "2345679":
        return "gulf_phone"  # KW/QA/BH/OM: 8 digits, only after a phone word
    if cue and re.fullmatch(r"0[1-46-9][0-9]{7,8}", d):  # 05…: a mobile, never a landline
        return "landline"  # «04 123 4567» Dubai, «011 234 5678» Riyadh, «02 2345 6789» Cairo
    return None


def _classify(d: str, *, plus: bool, id_cue: bool, phone_cue: bool) -> tuple[Kind, str] | None:
    """The kind of one digit string (ASCII digits only)."""
    if not plus and not d.startswith("00"):
        if ae_emirates_id(d):
            return Kind.NATIONAL_ID, "ae_emirates_id"
        if kw_civil_id(d):
            return Kind.NATIONAL_ID, "kw_civil_id"
        if eg_national_id(d):
            return Kind.NATIONAL_ID, "eg_national_id"
        if sa_national_id(d):
            return Kind.NATIONAL_ID, "sa_national_id" if d[0] == "1" else "sa_iqama"
        network = card_network(d)
        if network is not None:
            return Kind.CARD, network
    phone = _phone(d, plus=plus, cue=phone_cue)
    if phone is not None:
        return Kind.PHONE, phone
    if id_cue and not plus:
        gulf = gulf_structured_id(d)
        if gulf is not None:
            return Kind.NATIONAL_ID, gulf
    return None


def _number_findings(ascii_text: str) -> list[Finding]:
    """Cards, IDs and phones in ``ascii_text`` (e-mails and IBANs already blanked out)."""
    out: list[Finding] = []
    prev_end = 0
    budget = _WINDOW_BUDGET
    for m in _NUMBER.finditer(ascii_text):
        # Try the whole run first, then shorter windows of its groups, so
        # «طلب 48213 0501234567» still finds the phone in the second group.
        groups = [(g.start() + m.start(), g.end() + m.start())
                  for g in re.finditer(r"\+?[0-9]+", m.group())]
        sizes = [e - s - ascii_text[s:e].startswith("+") for s, e in groups]
        i = 0
        while i < len(groups):
            hit = None
            start = groups[i][0]
            cue = _nearest_cue(ascii_text[max(prev_end, start - _CUE_WINDOW):start])
            # Only windows of 7–19 digits can be any kind: bounds the work on
            # hostile runs like «1 1 1 1 …» to a few windows per group.
            ends, count = [], 0
            for j in range(i + 1, len(groups) + 1):
                count += sizes[j - 1]
                if count > _MAX_DIGITS:
                    break
                if count >= _MIN_DIGITS:
                    ends.append(j)
            if budget <= 0:  # hostile input: only the longest window from here on
                ends = ends[-1:]
            budget -= len(ends)
            for j in reversed(ends):
                end = groups[j - 1][1]
                raw = ascii_text[start:end]
                if _DATE.fullmatch(raw):
                    continue
                plus = raw.startswith("+")
                digits = _SEPARATORS.sub("", raw).lstrip("+")
                kind = _classify(digits, plus=plus, id_cue=cue == "id",
                                 phone_cue=cue == "phone")
                if kind is not None:
                    hit = (j, Finding(kind[0], start, end, kind[1], mask_digits(digits)))
                    break
            if hit is None:
                prev_end = groups[i][1]
                i += 1
                continue
            out.append(hit[1])
            prev_end = hit[1].end
            i = hit[0]
    return out


def _iban_findings(ascii_text: str) -> tuple[list[Finding], list[tuple[int, int]]]:
    """IBANs, and the spans of IBAN-shaped strings that fail their check (near misses:
    their digits are not read again as a card or a phone)."""
    found: list[Finding] = []
    claimed: list[tuple[int, int]] = []
    for m in _IBAN_RE.finditer(ascii_text):
        # Positions of the alphanumerics, so the country's length maps back to a span.
        at = [m.start() + i for i, c in enumerate(m.group()) if c not in " -"]
        compact = "".join(ascii_text[i] for i in at).upper()
        size = min(len(compact), iban_length(compact[:2]))
        end = at[size - 1] + 1
        # Cut at the registry length only between two groups, never inside a
        # word: «KW… 408 please» must not borrow the «p».
        if iban_ok(compact[:size]) and not re.match(r"[0-9A-Za-z]", ascii_text[end:end + 1]):
            found.append(Finding(Kind.IBAN, m.start(), end, f"{compact[:2].lower()}_iban",
                                 "****" + compact[size - 4:size]))
        claimed.append((m.start(), end))
    return found, claimed


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with ``spans`` overwritten by «#» (same length: positions are kept)."""
    chars = list(text)
    for s, e in spans:
        chars[s:e] = "#" * (e - s)
    return "".join(chars)


def find(text: str) -> list[Finding]:
    """Every piece of personal data in ``text``, in order; spans index ``text`` itself.

    >>> [(f.kind.value, f.detail, f.masked) for f in find("رقمي المدني ٢٨٥٠١١٥٠١٢٣٢")]
    [('national_id', 'kw_civil_id', '****1232')]
    >>> [(f.detail, f.masked) for f in find("IBAN KW81CBKU0000000000001234560101")]
    [('kw_iban', '****0101')]
    """
    ascii_text = text.translate(_TO_ASCII)  # one-to-one: positions are kept
    found = [Finding(Kind.EMAIL, m.start(), m.end(), "email", mask_email(m.group()))
             for m in _EMAIL.finditer(text)]
    ascii_text = _blank(ascii_text, [(f.start, f.end) for f in found])
    ibans, claimed = _iban_findings(ascii_text)
    found += ibans
    found += _number_findings(_blank(ascii_text, claimed))
    found.sort(key=lambda f: f.start)
    return found


def mask(text: str) -> str:
    """``text`` with every finding replaced by its masked form; the rest as typed."""
    findings = find(text)
    if not findings:
        return text
    out: list[str] = []
    last = 0
    for f in findings:
        out.append(text[last:f.start])
        out.append(f.masked)
        last = f.end
    out.append(text[last:])
    return "".join(out)
