"""Does every pipeline function run in linear time on hostile input?

``nice -n 10 .venv/bin/python bench/nlp_scaling.py`` — times each public
function of ``nlp`` on pathological inputs of 12,500 … 100,000 characters
(four doublings) and reports the growth exponent: log2 of the time ratio
between one size and the next, averaged.  Linear is 1.0; quadratic is 2.0.  A
function is flagged when its exponent exceeds 1.3 (timer noise on small inputs
stays well below that; a quadratic regression does not).  Writes
bench/results/nlp_scaling.json; the last printed line is one JSON object.

Timing is the median of five runs per size, so one scheduler hiccup on the
shared machine cannot fake a super-linear step.
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]  # bench/nlp.py ≠ nlp

from nlp import (  # noqa: E402
    arabizi_to_arabic,
    clean,
    detect_script,
    fold,
    load_dialect_identifier,
    search_keys,
    tokenize,
    words,
)

RESULTS = _HERE / "results" / "nlp_scaling.json"
SIZES = (12_500, 25_000, 50_000, 100_000)
LIMIT = 1.3

# Each family is a unit repeated to the size: the shapes that break
# backtracking regexes and quadratic loops (long runs of one class, controls
# only, emoji only, unbalanced bidi, a word glued with zero-width joiners).
FAMILIES: dict[str, str] = {
    "one arabic letter": "ب",
    "arabic words": "والكتاب بالبيت وبيقولها ",
    "diacritics only": "\u064e\u0650",
    "controls only": "\u200b\u202e\u2066\ufeff",
    "unbalanced bidi openers": "\u202a\u2067",
    "emoji (zwj, flags)": "😂👨\u200d👩\u200d👧🇸🇦",
    "zero-width inside word": "كَ\u200c",
    "spaces": " ",
    "at signs": "@",
    "hashtag underscores": "_",
    "arabizi": "shlonak 7abibi 3ayez ",
    "digits and separators": "1,",
    "url-like": "http://a.b/",
    "dotted latin": "a.",
    "e-mail-like runs": "1a+",
}

FUNCTIONS: dict[str, Callable[[str], object]] = {
    "clean": clean,
    "fold": fold,
    "tokenize": tokenize,
    "words": words,
    "search_keys": search_keys,
    "detect_script": detect_script,
    "arabizi_to_arabic": arabizi_to_arabic,
    "dialect.identify": load_dialect_identifier().identify,
}


def make_input(unit: str, size: int) -> str:
    text = (unit * (size // len(unit) + 1))[:size]
    return "#" + text[1:] if unit == "_" else text  # one hashtag of underscores


def seconds(fn: Callable[[str], object], text: str) -> float:
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        fn(text)
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def exponent(times: list[float]) -> float:
    steps = [math.log2(b / a) for a, b in itertools.pairwise(times) if a > 0]
    return sum(steps) / len(steps)


def main() -> None:
    results: dict[str, dict[str, dict[str, float]]] = {}
    worst = ("", "", 0.0)
    names = list(FUNCTIONS)
    print(f"growth exponent per doubling, {SIZES[0]:,}–{SIZES[-1]:,} chars (1.0 = linear)")
    print(f"{'input':<26}" + "".join(f"{n[:12]:>13}" for n in names))
    for family, unit in FAMILIES.items():
        results[family] = {}
        cells = []
        for name, fn in FUNCTIONS.items():
            times = [seconds(fn, make_input(unit, n)) for n in SIZES]
            exp = exponent(times)
            results[family][name] = {"exponent": round(exp, 3),
                                     "ms_at_100k": round(times[-1] * 1e3, 2)}
            cells.append(f"{exp:>8.2f}{'!' if exp > LIMIT else ' '}{times[-1] * 1e3:>4.0f}"[:13])
            if exp > worst[2]:
                worst = (family, name, exp)
        print(f"{family:<26}" + "".join(f"{c:>13}" for c in cells))
    flagged = [(f, n) for f, row in results.items() for n, v in row.items()
               if v["exponent"] > LIMIT]
    print("cells: exponent then ms at 100k chars; '!' marks exponent > 1.3")
    summary = {
        "sizes": list(SIZES),
        "max_exponent": round(worst[2], 3),
        "max_exponent_at": f"{worst[1]} on {worst[0]}",
        "super_linear": [f"{n} on {f}" for f, n in flagged],
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({**summary, "results": results}, ensure_ascii=False, indent=1))
    print(json.dumps(summary, ensure_ascii=False))


if __name__ == "__main__":
    main()
