"""Check-digit and structure rules for the numbers ``nlp.pii`` masks: IDs, cards, IBANs.

Each function takes ASCII digits without separators (``nlp.pii`` converts
Arabic-Indic ٠–٩ and Persian ۰–۹ first) and says whether the string *is* that
kind of number, not merely looks like one:

>>> kw_civil_id("285011501232"), kw_civil_id("285011501233")   # mod-11 check digit
(True, False)
>>> card_network("4111111111111111"), card_network("4111111111111112")  # Luhn
('visa', None)
>>> iban_ok("MA64011519000001205000534921"), iban_ok("MA64011519000001205000534922")
(True, False)

Well-kept validators do the arithmetic: ``python-stdnum`` for Luhn, ``schwifty``
for IBANs (the SWIFT registry: each country's length and BBAN structure, mod 97;
it lists Morocco, which stdnum's registry lacks). Written here: what neither
has — the national IDs of the Gulf states and Egypt, and the card networks'
issuer ranges.
"""

from __future__ import annotations

from datetime import date

from schwifty import IBAN, registry
from schwifty.exceptions import SchwiftyException
from stdnum import luhn as _luhn

__all__ = ["IBAN_COUNTRIES", "ae_emirates_id", "card_network", "eg_national_id",
           "gulf_structured_id", "iban_length", "iban_ok", "kw_civil_id", "sa_national_id"]

# The Gulf states, Egypt, Jordan, Morocco (issue #15).
IBAN_COUNTRIES = ("KW", "SA", "AE", "QA", "BH", "OM", "EG", "JO", "MA")

# Egyptian governorate codes (digits 8–9 of the national ID); 88 = born abroad.
_EG_GOVERNORATES = frozenset(
    {1, 2, 3, 4, *range(11, 20), *range(21, 30), 31, 32, 33, 34, 35, 88})

# mada (Saudi Payments) BINs that no international network's range covers:
# the 9682xx cards. mada's Visa/Mastercard co-badged BINs (440647, 588845 …)
# are named mada too, from an excerpt of the published BIN list.
_MADA_ONLY = ("968201", "968202", "968203", "968204", "968205", "968206", "968207",
              "968208", "968209", "968210", "968211")
_MADA_COBADGED = frozenset({
    "588845", "440647", "440795", "446404", "457865", "457997", "474491", "636120",
    "417633", "468540", "468541", "468542", "468543", "446393", "409201", "458456",
    "484783", "462220", "455708", "410621", "455036", "486094", "486095", "486096",
    "504300", "440533", "489317", "489318", "489319", "445564", "410685", "406996",
    "432328", "428671", "428672", "428673", "446672", "543357", "434107", "431361",
    "604906", "521076", "529415", "535825", "543085", "524130", "554180", "549760",
    "588848", "588850", "407197", "407395", "412565", "422817", "422818", "422819",
})


def _date_ok(year: int, month: int, day: int) -> bool:
    try:
        date(year, month, day)
    except ValueError:
        return False
    return True


def kw_civil_id(d: str) -> bool:
    """Kuwaiti civil ID: C YYMMDD NNNN K; century 2 (19xx) or 3 (20xx), mod-11 check.

    >>> kw_civil_id("302032404564")
    True
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
    """Saudi national ID (starts 1) or Iqama (starts 2): ten digits, Luhn.

    >>> sa_national_id("1054321789"), sa_national_id("1054321788")
    (True, False)
    """
    return len(d) == 10 and d[0] in "12" and _luhn.is_valid(d)


def ae_emirates_id(d: str) -> bool:
    """Emirates ID: 784-YYYY-NNNNNNN-C, fifteen digits, Luhn.

    >>> ae_emirates_id("784199012345676")
    True
    """
    return len(d) == 15 and d.startswith("784") and 1900 <= int(d[3:7]) <= 2100 \
        and _luhn.is_valid(d)


def eg_national_id(d: str) -> bool:
    """Egyptian national ID: C YYMMDD GG NNNN K, century 2/3, valid date and governorate.

    >>> eg_national_id("29001011234567"), eg_national_id("29013011234567")  # month 13
    (True, False)
    """
    if len(d) != 14 or d[0] not in "23":
        return False
    year = (1900 if d[0] == "2" else 2000) + int(d[1:3])
    return _date_ok(year, int(d[3:5]), int(d[5:7])) and int(d[7:9]) in _EG_GOVERNORATES


def gulf_structured_id(d: str) -> str | None:
    """Qatari ID (11 digits, century 2/3), Bahraini CPR (9 digits, YYMM…), Omani civil
    number (8–9 digits): no public check digit, so ``nlp.pii`` asks for an ID word near.

    >>> gulf_structured_id("28563412345"), gulf_structured_id("850312345")
    ('qa_id', 'bh_cpr')
    """
    if len(d) == 11 and d[0] in "23":
        return "qa_id"
    if len(d) == 9 and 1 <= int(d[2:4]) <= 12:
        return "bh_cpr"
    if len(d) in (8, 9):
        return "om_civil_id"
    return None


def _network(d: str) -> str | None:
    """The issuer network by its IIN range and the lengths it issues (ISO/IEC 7812)."""
    n, p2, p4 = len(d), int(d[:2]), int(d[:4])
    if n == 16 and (d[:6] in _MADA_COBADGED or d.startswith(_MADA_ONLY)):
        return "mada"
    if d[0] == "4" and n in (13, 16, 19):
        return "visa"
    if (51 <= p2 <= 55 or 2221 <= p4 <= 2720) and n == 16:
        return "mastercard"
    if p2 in (34, 37) and n == 15:
        return "amex"
    if (d.startswith("6011") or 644 <= int(d[:3]) <= 649 or p2 == 65) and 16 <= n <= 19:
        return "discover"
    if p2 == 62 and 16 <= n <= 19:
        return "unionpay"
    if 3528 <= p4 <= 3589 and 16 <= n <= 19:
        return "jcb"
    if (p2 in (36, 38, 39) or 300 <= int(d[:3]) <= 305) and 14 <= n <= 19:
        return "diners"
    if (p2 == 50 or 56 <= p2 <= 58 or d[0] == "6") and 13 <= n <= 19:
        return "maestro"  # also Egypt's Meeza (5078…) and other domestic schemes
    return None


def card_network(d: str) -> str | None:
    """The network of a payment card number (Luhn-valid, a network's range and length), or None.

    A Luhn-valid number outside every network's range — an order number, say — is
    not a card: «3782 822463 1003» has Amex's prefix but 14 digits, not 15.

    >>> card_network("378282246310005"), card_network("37828224631003")
    ('amex', None)
    >>> card_network("9682011234567892"), card_network("5440123456789012")
    ('mada', 'mastercard')
    """
    if not 13 <= len(d) <= 19 or not _luhn.is_valid(d):
        return None
    return _network(d)


def iban_length(country: str) -> int:
    """The IBAN length the SWIFT registry gives ``country`` («SA» → 24)."""
    return int(registry.get_iban_spec(country).iban_length)


def iban_ok(compact: str) -> bool:
    """An IBAN (no separators, upper case) of one of ``IBAN_COUNTRIES`` that passes
    the registry's length, BBAN structure and ISO 13616 mod-97 check."""
    if compact[:2] not in IBAN_COUNTRIES:
        return False
    try:
        IBAN(compact)
    except SchwiftyException:
        return False
    return True
