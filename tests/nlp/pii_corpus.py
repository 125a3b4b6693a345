"""The labelled personal-data corpus and its per-kind precision/recall (issue #15).

Two parts, both synthetic numbers in sentences as customers type them:

* ``pii_corpus.tsv`` — hand-written rows: valid examples and near misses per
  country and kind, in Gulf, Egyptian, Levantine and Maghrebi dialect, English
  and Arabizi, in Latin, Arabic-Indic and Persian digits.
* ``generated(seed)`` — a seeded generator that computes real check digits
  (Luhn, mod 11, mod 97) for many more valid numbers, and makes each one's
  near miss: one digit off, a wrong length, a bad date, no ID word.

Scoring (``score``): a row's raw value is *found* when a finding overlaps it.
A ``mask`` row is a true positive of its kind when a finding of that kind
covers it and the raw value is gone from ``mask(text)``; otherwise a false
negative (and a finding of another kind there a false positive of that kind).
A ``keep`` row (a near miss) found as any kind is a false positive of that
kind. A finding anywhere else in the sentence is a false positive too.
"""

from __future__ import annotations

import csv
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from stdnum import luhn
from stdnum.iso7064 import mod_97_10

from nlp import pii

TSV = Path(__file__).with_name("pii_corpus.tsv")
_AI = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")  # Arabic-Indic U+0660–U+0669
_FA = str.maketrans("0123456789", "۰۱۲۳۴۵۶۷۸۹")  # Persian U+06F0–U+06F9


@dataclass(frozen=True, slots=True)
class Case:
    kind: str
    detail: str
    country: str
    mask: bool  # True: personal data that must vanish; False: a near miss kept as typed
    raw: str
    text: str
    note: str = ""
    source: str = "hand"


def load(path: Path = TSV) -> list[Case]:
    rows = [line for line in path.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("#")]
    out = []
    for r in csv.DictReader(rows, delimiter="\t", quoting=csv.QUOTE_NONE):
        assert r["expect"] in ("mask", "keep"), r
        assert r["raw"] in r["text"], r
        out.append(Case(r["kind"], r["detail"], r["country"], r["expect"] == "mask",
                        r["raw"], r["text"], r["note"]))
    return out


# --- the seeded generator ------------------------------------------------------------

_TEMPLATES: dict[str, tuple[str, ...]] = {
    "card": ("بطاقتي {v} انسحب منها مبلغ مو لي", "الكارت بتاعي {v} اتخصم مرتين",
             "رقم البطاقة {v} ليش مرفوضة؟", "my card {v} was charged twice",
             "lcarte dyali {v} ma bghatch tkhdem"),
    "iban": ("ايباني {v} حولوا عليه", "الآيبان {v} لو سمحت", "حولي على {v} ضروري",
             "refund to {v} please", "هاد الايبان تبعي {v}"),
    "id": ("رقمي المدني {v} ابي اجدد", "هويتي {v} والاسم محمد", "رقم الهوية {v} لو سمحت",
           "الرقم القومي {v} يا باشا", "ID {v} for my account"),
    "order": ("رقم الطلب {v} ما وصل", "order {v} still not delivered", "الفاتورة {v} غلط",
              "رقم الشحنة {v} وين صار؟"),
    "phone": ("جوالي {v} كلموني", "رقمي {v} واتساب", "موبايلي {v} ابعتلي",
              "call me on {v} please", "تلفوني {v} اذا تأخر المندوب"),
    "email": ("ايميلي {v}", "راسلوني على {v}", "l'email dyali {v} 3afak", "الايميل {v} شكرا"),
}
_GROUP = {"card": (4, " "), "iban": (4, " ")}


def _digits(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789") for _ in range(n))


def _script(rng: random.Random, value: str) -> str:
    """Latin, Arabic-Indic or Persian digits (letters, in IBANs, stay Latin)."""
    return value.translate(rng.choice((None, _AI, _FA)) or {})


def _grouped(rng: random.Random, value: str, size: int = 4) -> str:
    sep = rng.choice(("", " ", "-"))
    return sep.join(value[i:i + size] for i in range(0, len(value), size)) if sep else value


def _off_by_one(rng: random.Random, value: str, positions: Iterable[int]) -> str:
    i = rng.choice(list(positions))
    return value[:i] + str((int(value[i]) + rng.randint(1, 9)) % 10) + value[i + 1:]


def _case(rng: random.Random, kind: str, detail: str, country: str, mask: bool, value: str,
          template: str, note: str) -> Case:
    text = rng.choice(_TEMPLATES[template]).format(v=value)
    return Case(kind, detail, country, mask, value, text, note, "generated")


_CARD_PREFIXES = {"visa": ("4", 16), "mastercard": ("5", 16), "amex": ("37", 15),
                  "mada": ("968203", 16)}


def _cards(rng: random.Random, n: int) -> list[Case]:
    out = []
    for _ in range(n):
        network = rng.choice(sorted(_CARD_PREFIXES))
        prefix, size = _CARD_PREFIXES[network]
        if network == "mastercard":
            prefix += str(rng.randint(1, 5))
        body = prefix + _digits(rng, size - len(prefix) - 1)
        good = body + luhn.calc_check_digit(body)
        out.append(_case(rng, "card", network, "-", True, _script(rng, _grouped(rng, good)),
                         "card", "generated, Luhn"))
        # One digit off (never the network prefix) always breaks Luhn.
        bad = _off_by_one(rng, good, range(len(prefix), size))
        out.append(_case(rng, "card", network, "-", False, _script(rng, _grouped(rng, bad)),
                         "card", "one digit off"))
    return out


# Country → (a valid BBAN to vary, positions of its account digits).
_IBAN_BBANS = {"KW": "CBKU0000000000001234560101", "SA": "80000000608010167519",
               "AE": "0331234567890123456", "QA": "DOHB00001234567890ABCDEFG",
               "BH": "BMAG00001299123456", "OM": "0180000001299123456",
               "EG": "0019000500000000263180002", "JO": "CBJO0010000000000131000302",
               "MA": "011519000001205000534921"}


def _iban(country: str, bban: str) -> str:
    return country + mod_97_10.calc_check_digits(bban + country) + bban


def _ibans(rng: random.Random, per_country: int) -> list[Case]:
    out = []
    for country, base in _IBAN_BBANS.items():
        digits = [i for i, c in enumerate(base) if c.isdigit()][-10:]
        for _ in range(per_country):
            bban = list(base)
            for i in digits:
                bban[i] = rng.choice("0123456789")
            good = _iban(country, "".join(bban))
            detail = f"{country.lower()}_iban"
            out.append(_case(rng, "iban", detail, country, True, _grouped(rng, good), "iban",
                             "generated, mod 97"))
            # mod 97 catches every single-digit error …
            bad = _off_by_one(rng, good, [4 + i for i in digits])
            out.append(_case(rng, "iban", detail, country, False, _grouped(rng, bad), "iban",
                             "one digit off"))
            # … and the registry length catches a dropped digit with recomputed check digits.
            short = _iban(country, "".join(bban[:-1]))
            out.append(_case(rng, "iban", detail, country, False, short, "iban",
                             "wrong length, valid check digits"))
    return out


def _kw_check(body: str) -> int:
    weights = (2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
    return 11 - sum(int(c) * w for c, w in zip(body, weights, strict=True)) % 11


def _birth(rng: random.Random) -> tuple[str, str]:
    """(century digit, YYMMDD) of a real date between 1940 and 2015."""
    year = rng.randint(1940, 2015)
    return ("2" if year < 2000 else "3"), f"{year % 100:02d}{rng.randint(1, 12):02d}" \
        f"{rng.randint(1, 28):02d}"


def _ids(rng: random.Random, n: int) -> list[Case]:
    out = []
    for _ in range(n):
        century, ymd = _birth(rng)
        while (check := _kw_check(body := century + ymd + _digits(rng, 4))) >= 10:
            pass
        kw = body + str(check)
        out.append(_case(rng, "national_id", "kw_civil_id", "KW", True, _script(rng, kw), "id",
                         "generated, mod 11"))
        out.append(_case(rng, "national_id", "kw_civil_id", "KW", False,
                         _script(rng, body + str((check + rng.randint(1, 9)) % 10)), "order",
                         "civil-ID shape, wrong check digit"))
        sa = rng.choice("12") + _digits(rng, 8)
        sa += luhn.calc_check_digit(sa)
        detail = "sa_national_id" if sa[0] == "1" else "sa_iqama"
        out.append(_case(rng, "national_id", detail, "SA", True, _script(rng, sa), "id",
                         "generated, Luhn"))
        out.append(_case(rng, "national_id", detail, "SA", False,
                         _script(rng, _off_by_one(rng, sa, range(1, 10))), "order",
                         "one digit off"))
        ae = f"784{rng.randint(1950, 2015)}" + _digits(rng, 7)
        ae += luhn.calc_check_digit(ae)
        out.append(_case(rng, "national_id", "ae_emirates_id", "AE", True,
                         _script(rng, f"{ae[:3]}-{ae[3:7]}-{ae[7:14]}-{ae[14]}"), "id",
                         "generated, Luhn"))
        out.append(_case(rng, "national_id", "ae_emirates_id", "AE", False,
                         _script(rng, _off_by_one(rng, ae, range(7, 15))), "id", "one digit off"))
        gov = rng.choice(("01", "02", "12", "21", "88"))
        eg = century + ymd + gov + _digits(rng, 5)
        out.append(_case(rng, "national_id", "eg_national_id", "EG", True, _script(rng, eg), "id",
                         "generated, date and governorate"))
        # Qatari, Bahraini, Omani IDs: no check digit, so valid after an ID word only.
        for detail, country, value in (
                ("qa_id", "QA", century + ymd[:2] + "634" + _digits(rng, 5)),
                ("bh_cpr", "BH", ymd[:4] + _digits(rng, 5)),
                ("om_civil_id", "OM", rng.choice("123456789") + _digits(rng, 7))):
            out.append(_case(rng, "national_id", detail, country, True, _script(rng, value),
                             "id", "generated, after an ID word"))
            out.append(_case(rng, "national_id", detail, country, False, _script(rng, value),
                             "order", "the same number after an order word"))
        out.append(_case(rng, "national_id", "eg_national_id", "EG", False,
                         _script(rng, "2" + ymd[:2] + "13" + ymd[4:] + gov + _digits(rng, 5)),
                         "order", "month 13"))
    return out


# Country → (code, national significant number: first digits, length).
_PLANS = {"KW": ("965", "569", 8), "SA": ("966", "5", 9), "AE": ("971", "5", 9),
          "QA": ("974", "3567", 8), "BH": ("973", "36", 8), "OM": ("968", "79", 8),
          "EG": ("20", "1", 10)}


def _phones(rng: random.Random, per_country: int) -> list[Case]:
    out = []
    for country, (code, firsts, size) in _PLANS.items():
        detail = f"{country.lower()}_phone"
        for _ in range(per_country):
            nsn = rng.choice(firsts) + _digits(rng, size - 1)
            if country == "EG":
                nsn = "1" + rng.choice("0125") + _digits(rng, 8)
            typed = rng.choice((f"+{code} {nsn[:-4]} {nsn[-4:]}", f"00{code}{nsn}",
                                f"+{code}-{nsn}"))
            out.append(_case(rng, "phone", detail, country, True, _script(rng, typed), "phone",
                             "generated, country code"))
            # One digit short with the country code: fits no plan.
            out.append(_case(rng, "phone", detail, country, False,
                             _script(rng, f"+{code} {nsn[:-1]}"), "phone", "one digit short"))
    return out


def _emails(rng: random.Random, n: int) -> list[Case]:
    names = ("sara", "m.ali", "noura_99", "ahmed.k", "fatma", "youssef.b", "reem+shop")
    domains = ("example.com", "mail.example.eg", "company.ae", "example.sa", "mail.ma")
    out = []
    for _ in range(n):
        address = f"{rng.choice(names)}{rng.randint(1, 999)}@{rng.choice(domains)}"
        out.append(_case(rng, "email", "email", "-", True, address, "email", "generated"))
        out.append(_case(rng, "email", "email", "-", False, address.split("@")[0] + "@",
                         "email", "no domain"))
    return out


def generated(seed: int = 15, n: int = 12) -> list[Case]:
    """Seeded rows: ``n`` per kind and country, valid ones and their near misses."""
    rng = random.Random(seed)
    return [*_cards(rng, 4 * n), *_ibans(rng, n), *_ids(rng, n), *_phones(rng, n),
            *_emails(rng, n)]


def corpus(seed: int = 15) -> list[Case]:
    return [*load(), *generated(seed)]


# --- scoring --------------------------------------------------------------------------

@dataclass
class Score:
    valid: int = 0
    near_misses: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0
    detail_ok: int = 0
    misses: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def detail_accuracy(self) -> float:
        return self.detail_ok / self.tp if self.tp else 1.0


def score(cases: Iterable[Case], find: Callable[[str], list[pii.Finding]] = pii.find,
          mask: Callable[[str], str] = pii.mask) -> dict[str, Score]:
    """Per kind (``pii.Kind`` values) — see the module docstring for the rules."""
    scores = {k.value: Score() for k in pii.Kind}
    for case in cases:
        s, e = (start := case.text.index(case.raw)), start + len(case.raw)
        found = find(case.text)
        over = [f for f in found if f.start < e and s < f.end]
        for f in found:
            if f not in over:
                scores[f.kind.value].fp += 1
                scores[f.kind.value].misses.append(f"elsewhere {f.detail}: {case.text}")
        mine = scores[case.kind]
        if not case.mask:
            mine.near_misses += 1
            for f in over:
                scores[f.kind.value].fp += 1
                scores[f.kind.value].misses.append(f"near miss masked as {f.detail}: {case.text}")
            continue
        mine.valid += 1
        right = [f for f in over if f.kind.value == case.kind]
        if right and case.raw not in mask(case.text):
            mine.tp += 1
            mine.detail_ok += any(f.detail == case.detail for f in right)
            if not any(f.detail == case.detail for f in right):
                mine.misses.append(f"detail {[f.detail for f in right]} != {case.detail}: "
                                   f"{case.text}")
        else:
            mine.fn += 1
            mine.misses.append(f"missed {case.detail}: {case.text}")
        for f in over:
            if f.kind.value != case.kind:
                scores[f.kind.value].fp += 1
                scores[f.kind.value].misses.append(f"{case.detail} taken for {f.detail}: "
                                                   f"{case.text}")
    return scores


def table(scores: dict[str, Score]) -> str:
    lines = ["kind         valid  near-miss   TP   FP   FN  precision  recall  detail-acc"]
    for kind, s in scores.items():
        lines.append(f"{kind:<12} {s.valid:>5} {s.near_misses:>10} {s.tp:>4} {s.fp:>4} {s.fn:>4}"
                     f"  {s.precision:>9.3f}  {s.recall:>6.3f}  {s.detail_accuracy:>10.3f}")
    return "\n".join(lines)
