"""Personal data in a message: find it, and mask it before anything is stored.

Kinds (``Kind``): payment cards (Luhn), IBANs of the Gulf states, Egypt, Jordan
and Morocco (ISO 13616 mod-97 and the country's length, via python-stdnum),
national IDs (Kuwaiti civil ID with its mod-11 check digit, Saudi national ID
and Iqama and Emirates ID with their Luhn digit, Egyptian national ID by its
structure: century, birth date, governorate; Qatari, Bahraini and Omani IDs by
their structure *and* an ID word nearby, because they carry no public check
digit), Gulf and Egyptian phone numbers (with a country code, in a national
mobile format, or — for the 8-digit Gulf numbers an order number also looks
like — after a phone word), and e-mail addresses.

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
from datetime import date
from enum import StrEnum

from stdnum import iban as _iban
from stdnum import luhn as _luhn
from stdnum.iso7064 import mod_97_10 as _mod97

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
_IBAN_COUNTRIES = ("KW", "SA", "AE", "QA", "BH", "OM", "EG", "JO", "MA")
_IBAN_RE = re.compile(
    r"(?<![0-9A-Za-z])(?:" + "|".join(_IBAN_COUNTRIES) + r")[0-9]{2}"
    r"(?:[ \-]?[0-9A-Za-z]){10,32}(?![0-9A-Za-z])", re.IGNORECASE)
_EMAIL = re.compile(r"(?<![\w.+-])([A-Za-z0-9][A-Za-z0-9._%+-]{0,63})@"
                    r"([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24})(?![\w-])")
# An already-masked value («****4821», «s***@x.com») is left alone: masking is idempotent.
_MASKED = re.compile(r"\*{3,}[0-9]{0,4}")
# Words that say "this is an ID" / "this is a phone", looked for just before the number.
_ID_CUE = re.compile(
    r"هوي[هة]|هويتي|مدني|المدني|البطاق[هة] المدني[هة]|الشخصي[هة]|اقام[هة]|إقام[هة]|اقامتي|"
    r"إقامتي|قومي|القومي|السجل|سجل مدني|(?i:\bcpr\b|civil\s*id|national\s*id|\biqama\b|\bqid\b|"
    r"\bid\b|identity)")
_PHONE_CUE = re.compile(
    r"جوال|موبايل|موبيل|تلفون|تليفون|هاتف|واتس|وتس|اتصل|اتصلو|كلموني|رقمي|نمرتي|نمرة|"
    r"(?i:phone|mobile|whats\s?app|call|\btel\b|\bmob\b)")
# Words that say the number is something else (an order, an invoice): the
# nearest cue before a number wins, so «جوالي … وطلبي 48213921» is an order.
_OTHER_CUE = re.compile(r"طلب|اوردر|أوردر|شحن|فاتور|(?i:order|invoice|tracking|ref)")
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

# Egyptian governorate codes (digits 8–9 of the national ID); 88 = born abroad.
_EG_GOVERNORATES = frozenset(
    {1, 2, 3, 4, *range(11, 20), *range(21, 30), 31, 32, 33, 34, 35, 88})
# Phone: country code → (national significant number lengths, valid first digits).
_PHONE_PLANS: dict[str, tuple[tuple[int, ...], str, str]] = {
    "965": ((8,), "124569", "kw_phone"),
    "966": ((9,), "15", "sa_phone"),
    "971": ((8, 9), "2345679", "ae_phone"),
    "974": ((8,), "34567", "qa_phone"),
    "973": ((8,), "1367", "bh_phone"),
    "968": ((8,), "279", "om_phone"),
    "20": ((9, 10), "123456789", "eg_phone"),
}


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


def _date_ok(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


def kw_civil_id(d: str) -> bool:
    """Kuwaiti civil ID: C YYMMDD NNNN K; century 2 (19xx) or 3 (20xx), mod-11 check.

    >>> kw_civil_id("285011501232"), kw_civil_id("285011501233")
    (True, False)
    """
    if len(d) != 12 or d[0] not in "23":
        return False
    year = (1900 if d[0] == "2" else 2000) + int(d[1:3])
    if not _date_ok(year, int(d[3:5]), int(d[5:7])):
        return False
    weights = (2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    check = 11 - sum(int(c) * w for c, w in zip(d[:11], weights, strict=True)) % 11
    return check < 10 and check == int(d[11])


def sa_national_id(d: str) -> bool:
    """Saudi national ID (starts 1) or Iqama (starts 2): ten digits, Luhn."""
    return len(d) == 10 and d[0] in "12" and _luhn.is_valid(d)


def ae_emirates_id(d: str) -> bool:
    """Emirates ID: 784-YYYY-NNNNNNN-C, fifteen digits, Luhn."""
    return len(d) == 15 and d.startswith("784") and 1900 <= int(d[3:7]) <= 2100 \
        and _luhn.is_valid(d)


def eg_national_id(d: str) -> bool:
    """Egyptian national ID: C YYMMDD GG NNNN K, century 2/3, valid date and governorate."""
    if len(d) != 14 or d[0] not in "23":
        return False
    year = (1900 if d[0] == "2" else 2000) + int(d[1:3])
    return _date_ok(year, int(d[3:5]), int(d[5:7])) and int(d[7:9]) in _EG_GOVERNORATES


def _gulf_structured_id(d: str) -> str | None:
    """Qatari (11 digits, century 2/3 + birth year), Bahraini CPR (9 digits, YYMM),
    Omani civil number (8–9 digits): structure only, so a cue word must be near."""
    if len(d) == 11 and d[0] in "23":
        return "qa_id"
    if len(d) == 9 and 1 <= int(d[2:4]) <= 12:
        return "bh_cpr"
    if len(d) in (8, 9):
        return "om_civil_id"
    return None


def _phone(d: str, *, plus: bool, cue: bool) -> str | None:
    """Which plan a digit string fits as a phone number, or None."""
    rest = d[2:] if d.startswith("00") else d if plus else ""
    if not rest and len(d) > 10 and not d.startswith("0"):
        rest = d  # «966501234567»: country code without + or 00
    for code, (lengths, firsts, name) in _PHONE_PLANS.items():
        if rest.startswith(code):
            nsn = rest[len(code):]
            if len(nsn) in lengths and nsn[0] in firsts:
                return name
    if plus or d.startswith("00"):
        return None
    if len(d) == 11 and re.fullmatch(r"01[0125][0-9]{8}", d):
        return "eg_phone"  # Egyptian mobile: 010/011/012/015
    if len(d) == 10 and re.fullmatch(r"05[0-9]{8}", d):
        return "sa_ae_phone"  # Saudi 05X / Emirati 05X mobile, national format
    if len(d) == 8 and cue and d[0] in "2345679":
        return "gulf_phone"  # KW/QA/BH/OM: 8 digits, only after a phone word
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
        if 13 <= len(d) <= 19 and _luhn.is_valid(d) and d[0] in "23456":
            return Kind.CARD, "card"
    phone = _phone(d, plus=plus, cue=phone_cue)
    if phone is not None:
        return Kind.PHONE, phone
    if id_cue and not plus:
        gulf = _gulf_structured_id(d)
        if gulf is not None:
            return Kind.NATIONAL_ID, gulf
    return None


def _number_findings(text: str, ascii_text: str, taken: list[tuple[int, int]]) -> list[Finding]:
    out: list[Finding] = []
    prev_end = 0
    budget = _WINDOW_BUDGET
    for m in _NUMBER.finditer(ascii_text):
        if any(s < m.end() and m.start() < e for s, e in taken):
            continue
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
    del text
    return out


def _iban_ok(compact: str) -> bool:
    """ISO 13616 check and the country's length (stdnum's registry); Morocco's
    28-character IBAN is not in that registry yet, so it gets the mod-97 check alone."""
    if compact.startswith("MA"):
        return len(compact) == 28 and compact[4:].isdigit() and \
            _mod97.is_valid(compact[4:] + compact[:4])
    return bool(_iban.is_valid(compact))


def find(text: str) -> list[Finding]:
    """Every piece of personal data in ``text``, in order; spans index ``text`` itself.

    >>> [(f.kind.value, f.detail, f.masked) for f in find("رقمي المدني ٢٨٥٠١١٥٠١٢٣٢")]
    [('national_id', 'kw_civil_id', '****1232')]
    >>> [(f.detail, f.masked) for f in find("IBAN KW81CBKU0000000000001234560101")]
    [('kw_iban', '****0101')]
    """
    ascii_text = text.translate(_TO_ASCII)  # one-to-one: positions are kept
    found: list[Finding] = []
    for m in _EMAIL.finditer(text):
        found.append(Finding(Kind.EMAIL, m.start(), m.end(), "email", mask_email(m.group())))
    for m in _IBAN_RE.finditer(ascii_text):
        compact = re.sub(r"[ \-]", "", m.group()).upper()
        if _iban_ok(compact):
            found.append(Finding(Kind.IBAN, m.start(), m.end(), f"{compact[:2].lower()}_iban",
                                 "****" + compact[-4:]))
    taken = [(f.start, f.end) for f in found]
    found.extend(_number_findings(text, ascii_text, taken))
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
