"""Number words → digits, for search keys: «تلات ايام» and «3 أيام» meet.

A policy says «خلال 3 أيام» or «ثلاثة أيام عمل»; a customer asks «بعد تلات
تيام؟», «يومين؟», «جوج ايام؟» (Moroccan جوج = 2), «نص ساعة؟».  Keys never meet
unless the count is one key on both sides, so :func:`number_words_to_digits`
rewrites a sequence of folded words (``nlp.normalize.fold``: ة→ه, أ/إ/آ→ا)
into the same words with every count as ASCII digits:

* cardinals of MSA and the five regions, 1–19, the tens, hundreds and
  thousands, in compounds («خمسة وعشرين» → 25, «الف وخمسمية» → 1500,
  «ثلاثة آلاف» → 3000), and common Arabizi spellings («talata», «jouj»);
* duals of counted units: «يومين» → 2 يوم, «ساعتين» → 2 ساعه, «أسبوعين» →
  2 اسبوع (a dual carries its own count);
* a unit after a count gets its MSA spelling (Levantine «تلت تيام» → 3 ايام,
  «دقايق» → دقائق, Arabizi «ayam» → ايام).  A plural is not reduced to its
  singular: «خلال 3 أيام» would then hold «يوم» and match «يوم الجمعة»
  (measured: two dev questions lost);
* half, quarter and third of an hour in minutes: «نص ساعة» → 30 دقيقه,
  «ساعة ونص» → 90 دقيقه, «ربع ساعة» → 15 دقيقه;
* digit groups: «10,000» and «10٬000» (U+066C) → 10000.

It is a key-level transformation only: display text never passes through it.
Words that are also common non-numbers need a counted unit beside them or
another number word: «ست» (madam), «مية»/«ميه» (water), «الف» (the letter),
«واحد» (someone).  A number with the article is not a count: «الاثنين» is
Monday, «اليومين» "these days"; «ثمن» (price) and «ربع»/«تلت» alone (a
quarter, a third) are never numbers.

    >>> number_words_to_digits("بعد تلات تيام".split())
    ['بعد', '3', 'ايام']
    >>> number_words_to_digits("خلال يومين او ثلاثه ايام".split())
    ['خلال', '2', 'يوم', 'او', '3', 'ايام']
    >>> number_words_to_digits("الرسوم خمسه وعشرين ريال".split())
    ['الرسوم', '25', 'ريال']
    >>> number_words_to_digits("نص ساعه".split()), number_words_to_digits("دخلت ميه".split())
    (['30', 'دقيقه'], ['دخلت', 'ميه'])
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["number_words_to_digits"]

# -- the lexicon (folded forms: ة→ه, أ/إ/آ→ا, ى→ي) --------------------------------
_UNITS: dict[int, tuple[str, ...]] = {
    1: ("واحد", "واحده", "wa7ed", "wahed", "wa7da", "wahda"),
    # جوج: Moroccan/Algerian; زوز: Tunisian; تنين/ثنين: Levantine/Gulf; زوج (husband) is not.
    2: ("اثنين", "اثنان", "اتنين", "ثنين", "تنين", "اثنتين", "اثنتان", "ثنتين", "تنتين",
        "اثنتين", "جوج", "زوز", "etnen", "itnein", "etnein", "tnen", "tnin", "jouj", "jooj",
        "zouz", "ithnain", "ithnen"),
    3: ("ثلاث", "ثلاثه", "تلات", "تلاته", "تلاث", "تلاثه", "ثلاثا", "talata", "tlata",
        "tleta", "thalatha", "tlat", "talat"),
    # ربعه: Maghrebi «ربعة» (four); bare «ربع» is a quarter.
    4: ("اربع", "اربعه", "ربعه", "arba3", "arba3a", "arb3a", "reb3a"),
    5: ("خمس", "خمسه", "khamsa", "khams", "5amsa", "7amsa"),
    6: ("ست", "سته", "sitta", "sette", "setta", "seta", "sta"),
    7: ("سبع", "سبعه", "sab3a", "saba3", "seb3a", "sab3"),
    # تمن/ثمن are price («تمنه كام؟»): only the long forms are eight.
    8: ("ثمان", "ثماني", "ثمانيه", "تمان", "تماني", "تمانيه", "تمنيه", "tamanya", "tmanya",
        "thamania", "tamania"),
    9: ("تسع", "تسعه", "tis3a", "tes3a", "tas3a", "tis3"),
    10: ("عشر", "عشره", "3ashra", "3ashara", "3achra", "3ashr"),
}
_TEENS: dict[int, tuple[str, ...]] = {
    11: ("حداش", "احداش", "حداشر", "احداشر", "حدعش", "احدعش", "حدعشر", "احدعشر", "hda4"),
    12: ("اطناش", "طناش", "اتناش", "اتناشر", "اطناشر", "اثناشر", "اثنعش", "ثنعش", "طنعش",
         "اتنعش", "ثنعشر", "طنعشر"),
}
# 13–19 in dialect: the unit's stem + ‑تاش/‑طاش (Egyptian, Maghrebi), ‑تاشر (Levantine,
# Egyptian), ‑طعش/‑تعش (Gulf, Iraqi, Levantine), with or without a final ر.
_TEEN_STEMS: dict[int, tuple[str, ...]] = {
    13: ("تلت", "تلط", "ثلط", "ثلث", "ثلاث", "تلات"),
    14: ("اربع", "ربع", "اربعت"),
    15: ("خمس", "خمست"),
    16: ("س", "ست"),
    17: ("سبع", "سبعت"),
    18: ("تمن", "ثمن", "تمنت", "ثمنت"),
    19: ("تسع", "تسعت"),
}
_TEEN_ENDINGS = ("تاش", "طاش", "تاشر", "طاشر", "تعش", "طعش", "تعشر", "طعشر", "اش", "اشر")
_TENS: dict[int, tuple[str, ...]] = {
    20: ("عشرين", "عشرون", "3ishrin", "3eshrin", "3echrin"),
    30: ("ثلاثين", "ثلاثون", "تلاتين", "تلاثين", "tlatin", "talatin", "thalathin"),
    40: ("اربعين", "اربعون", "ربعين", "arb3in", "arba3in", "reb3in"),
    50: ("خمسين", "خمسون", "khamsin", "5amsin", "khamseen"),
    60: ("ستين", "ستون", "sittin", "settin", "sitteen"),
    70: ("سبعين", "سبعون", "sab3in", "seb3in"),
    80: ("ثمانين", "ثمانون", "تمانين", "تمنين", "tamanin", "tmanin"),
    90: ("تسعين", "تسعون", "tis3in", "tes3in"),
}
_HUNDREDS: dict[int, tuple[str, ...]] = {
    # ميه/مية is also water (Egyptian, Levantine): ambiguous below.
    100: ("مئه", "مائه", "ميه", "مايه", "ميت", "مئت", "مائت", "miya", "mia", "meya", "mya"),
    200: ("مئتين", "مئتان", "مائتين", "مائتان", "ميتين", "mitein", "mitin", "miteen"),
    300: ("ثلاثمئه", "ثلاثمائه", "تلتميه", "تلاتميه", "ثلثميه", "تلتمايه"),
    400: ("اربعمئه", "اربعمائه", "ربعميه", "اربعميه"),
    500: ("خمسمئه", "خمسمائه", "خمسميه", "خمسمايه"),
    600: ("ستمئه", "ستمائه", "ستميه"),
    700: ("سبعمئه", "سبعمائه", "سبعميه"),
    800: ("ثمانمئه", "ثمانمائه", "تمنميه", "ثمنميه", "تمانميه"),
    900: ("تسعمئه", "تسعمائه", "تسعميه"),
}
_SCALES: dict[int, tuple[str, ...]] = {
    1000: ("الف", "الاف", "الوف", "alf", "alaf"),
    2000: ("الفين", "الفان", "alfen", "alfein"),
    1_000_000: ("مليون", "ملايين", "malyon", "million"),
    2_000_000: ("مليونين", "مليونان"),
}
# A form that is also a common non-number: a count only beside a unit or another number.
_AMBIGUOUS = frozenset({"ست", "ميه", "مايه", "ميت", "الف", "alf", "واحد", "واحده", "wa7ed",
                        "wahed", "wa7da", "wahda", "sta", "mia", "mya", "سبع"})

# Counted units: singular (folded) → plural forms, and whether the singular ends in ة
# (its dual is ‑تين/‑تان: ساعه → ساعتين).
_UNIT_PLURALS: dict[str, tuple[str, ...]] = {
    "يوم": ("ايام", "تيام", "يوما", "ayam", "ayyam", "iyam", "yom", "youm"),
    "ساعه": ("ساعات", "سوايع", "sa3a", "sa3at", "saa3at"),
    "دقيقه": ("دقائق", "دقايق", "d2ay2", "da2aye2", "dakika", "d2i2a"),
    "ثانيه": ("ثواني", "ثوان"),
    "اسبوع": ("اسابيع", "اسبوعا", "usbu3", "osbo3", "esbo3", "asabi3"),
    "جمعه": ("جمع",),
    "شهر": ("شهور", "اشهر", "شهرا", "shahr", "shohor", "ashhor", "shhor"),
    "سنه": ("سنوات", "سنين", "snin", "sana", "sanawat"),
    "عام": ("اعوام", "عاما"),
    "ليله": ("ليالي",),
    "مره": ("مرات", "marra", "marrat", "merra"),
    "قسط": ("اقساط", "qist", "2sat", "aqsat"),
    "دفعه": ("دفعات",),
    "قطعه": ("قطع",),
    "ريال": ("ريالات", "ريالا", "riyal", "rial"),
    "دينار": ("دنانير", "دينارا", "dinar"),
    "درهم": ("دراهم", "درهما", "dirham", "dh"),
    "جنيه": ("جنيهات", "جنيها", "gneh", "geneh", "pound"),
    "دولار": ("دولارات", "دولارا", "dollar"),
    "ليره": ("ليرات",),
    "يورو": ("euro",),
    "جيجا": ("giga", "gb"),
}
# A unit's dialect or Arabizi spelling after a count → the MSA spelling.
_MSA_SPELLING = {"تيام": "ايام", "دقايق": "دقائق", "سوايع": "ساعات", "ayam": "ايام",
                 "ayyam": "ايام", "iyam": "ايام", "yom": "يوم", "youm": "يوم", "sa3a": "ساعه",
                 "sa3at": "ساعات", "saa3at": "ساعات", "d2ay2": "دقائق", "da2aye2": "دقائق",
                 "dakika": "دقيقه", "d2i2a": "دقيقه", "shahr": "شهر", "shohor": "شهور",
                 "shhor": "شهور", "ashhor": "اشهر", "snin": "سنين", "sana": "سنه",
                 "sanawat": "سنوات", "marra": "مره", "marrat": "مرات", "merra": "مره",
                 "usbu3": "اسبوع", "osbo3": "اسبوع", "esbo3": "اسبوع", "asabi3": "اسابيع",
                 "riyal": "ريال", "rial": "ريال", "dinar": "دينار", "dirham": "درهم",
                 "gneh": "جنيه", "geneh": "جنيه", "dollar": "دولار", "euro": "يورو",
                 "qist": "قسط", "aqsat": "اقساط"}
_FEMININE = frozenset(u for u in _UNIT_PLURALS if u.endswith("ه") and u != "جنيه")
# Fractions of an hour, in minutes.
_HOUR_FRACTIONS = {"نص": 30, "نصف": 30, "ربع": 15, "تلت": 20, "ثلث": 20,
                   "nos": 30, "nus": 30, "noss": 30, "rub3": 15, "ro3b": 15}
_HOUR = frozenset({"ساعه", "sa3a", "saa3a"})
# Proclitics a count may carry: و (and: «وعشرين»), ب (for: «بخمسة»), ل (for/to).
# Not ف/ك («فستين» is a dress) and never ال (a definite number is not a count).
_PROCLITICS = ("وب", "ول", "و", "ب", "ل")
_WEEKDAY_BEFORE = frozenset({"يوم", "نهار"})  # «يوم الاثنين/اثنين» is Monday
_TWO = frozenset(_UNITS[2])
_MULTIPLIERS = frozenset({1000, 1_000_000})
_GROUPED = re.compile(r"\d{1,3}(?:[,\u066c]\d{3})+")


def _build() -> tuple[dict[str, int], dict[str, str], dict[str, str]]:
    values: dict[str, int] = {}
    for table in (_UNITS, _TEENS, _TENS, _HUNDREDS, _SCALES):
        for value, forms in table.items():
            for form in forms:
                values.setdefault(form, value)
    for value, stems in _TEEN_STEMS.items():
        for stem in stems:
            for ending in _TEEN_ENDINGS:
                values.setdefault(stem + ending, value)
    singular: dict[str, str] = {}
    dual: dict[str, str] = {}
    for unit, plurals in _UNIT_PLURALS.items():
        singular[unit] = unit
        for form in plurals:
            singular.setdefault(form, unit)
        base = unit[:-1] + "ت" if unit in _FEMININE else unit
        for ending in ("ين", "ان"):
            dual[base + ending] = unit
    for latin, unit in (("yomen", "يوم"), ("yomein", "يوم"), ("yomain", "يوم"),
                        ("youmen", "يوم"), ("sa3ten", "ساعه"), ("sa3tein", "ساعه"),
                        ("osbo3en", "اسبوع"), ("esbo3en", "اسبوع"), ("usbu3ain", "اسبوع"),
                        ("shahren", "شهر"), ("shahrein", "شهر"), ("marten", "مره"),
                        ("marrten", "مره"), ("marratain", "مره")):
        dual[latin] = unit
    return values, singular, dual


_VALUES, _SINGULAR, _DUAL = _build()
# Every form the scan reacts to, bare and with a count's proclitic: a word outside
# it (most words) is passed through without further lookups.
_SEEN_FORMS = frozenset(_VALUES) | frozenset(_SINGULAR) | frozenset(_DUAL) | frozenset(
    _HOUR_FRACTIONS) | _HOUR | frozenset(_MSA_SPELLING)
_INTERESTING = _SEEN_FORMS | frozenset(p + f for p in _PROCLITICS for f in _SEEN_FORMS)


def _bare(word: str) -> list[str]:
    """The word and its forms without a count's proclitic, the word itself first."""
    out = [word]
    for p in _PROCLITICS:
        if word.startswith(p) and len(word) - len(p) >= 2:
            out.append(word[len(p):])
    return out


def _value(word: str) -> tuple[int, bool] | None:
    """(value, joined by و) of a number word, or None."""
    for i, form in enumerate(_bare(word)):
        if form in _VALUES:
            return _VALUES[form], i > 0 and word.startswith("و")
    return None


def _unit(word: str) -> str | None:
    for form in _bare(word):
        if form in _SINGULAR:
            return _SINGULAR[form]
    return None


def _plain(word: str) -> str:
    return word.replace(",", "").replace("\u066c", "") if _GROUPED.fullmatch(word) else word


def _number_at(words: Sequence[str], i: int) -> tuple[int, int] | None:
    """(value, words used) of the compound number starting at ``words[i]``."""
    first = _value(words[i])
    if first is None:
        if words[i].isdigit() and i + 1 < len(words):
            scale = _value(words[i + 1])  # «3 آلاف», «2 مليون»
            if scale is not None and scale[0] in _MULTIPLIERS and not scale[1]:
                return int(words[i]) * scale[0], 2
        return None
    total, current, j = 0, first[0], i + 1
    if current >= 1000:
        total, current = current, 0
    while j < len(words):
        nxt = _value(words[j])
        if nxt is None:
            break
        value, joined = nxt
        if value in _MULTIPLIERS and not joined:  # «ثلاثة آلاف», «خمسين الف»
            total += max(current, 1) * value
            current = 0
        elif value == 100 and not joined and 0 < current < 10:  # «ثلاث مية»
            current *= 100
        elif value == 10 and not joined and 0 < current < 10:  # MSA «خمسة عشر»
            current += 10
        elif joined:  # «خمسة وعشرين», «مية وخمسين», «الف وخمسمية»
            current += value
        else:
            break  # two counts side by side: «يومين تلاته» is two numbers
        j += 1
    return total + current, j - i


def _context_unit(words: Sequence[str], i: int, n: int) -> bool:
    before = words[i - 1] if i > 0 else ""
    after = words[i + n] if i + n < len(words) else ""
    return _unit(before) is not None or _unit(after) is not None


def number_words_to_digits(words: Sequence[str]) -> list[str]:
    """Folded words with every count as digits (see the module docstring).

    ``words`` are folded tokens in text order (Arabic words, digit strings,
    Arabizi words); the result holds the same words where no count is found.

    >>> number_words_to_digits("بعد اسبوعين".split()), number_words_to_digits(["jouj", "ayam"])
    (['بعد', '2', 'اسبوع'], ['2', 'ايام'])
    >>> number_words_to_digits("يوم الاثنين او يوم اثنين".split())
    ['يوم', 'الاثنين', 'او', 'يوم', 'اثنين']
    >>> number_words_to_digits(["10,000", "ريال"]), number_words_to_digits("ساعه ونص".split())
    (['10000', 'ريال'], ['90', 'دقيقه'])
    """
    out: list[str] = []
    # Once per call: the scan looks ahead from each word.  Arabic has no case;
    # only a word starting with a digit can be a digit group.
    lowered = [_plain(w) if w[:1].isdigit() else w.lower() if w.isascii() else w
               for w in words]
    if not any(w in _INTERESTING or w[:1].isdigit() for w in lowered):
        return list(words)
    i = 0
    after_count = False  # the previous word was a count: a unit gets its MSA spelling
    while i < len(words):
        low = lowered[i]
        if low not in _INTERESTING and not low[:1].isdigit():
            out.append(words[i])
            after_count = False
            i += 1
            continue
        word = _plain(words[i])
        nxt = lowered[i + 1] if i + 1 < len(words) else ""
        # «ساعه ونص» / «ساعه ونصف»: an hour and a half.
        if low in _HOUR and nxt[:1] == "و" and nxt[1:] in ("نص", "نصف"):
            out += ["90", "دقيقه"]
            i, after_count = i + 2, False
            continue
        if low in _HOUR_FRACTIONS and nxt in _HOUR:
            out += [str(_HOUR_FRACTIONS[low]), "دقيقه"]
            i, after_count = i + 2, False
            continue
        dual = next((_DUAL[f] for f in _bare(low) if f in _DUAL), None)
        if dual is not None:
            out += ["2", dual]
            i, after_count = i + 1, False
            continue
        found = _number_at(lowered, i)
        if found is not None:
            value, used = found
            single = words[i] if used == 1 else ""
            weekday = single.lower() in _TWO and i > 0 and words[i - 1] in _WEEKDAY_BEFORE
            unclear = used == 1 and any(f in _AMBIGUOUS for f in _bare(single.lower()))
            if not weekday and not (unclear and not _context_unit(words, i, used)):
                out.append(str(value))
                i, after_count = i + used, True
                continue
        if after_count and low in _MSA_SPELLING:
            out.append(_MSA_SPELLING[low])
        else:
            out.append(word)
        after_count = word.isdigit()
        i += 1
    return out
