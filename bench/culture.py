"""Majlis culture benchmark: cue reading on real dialect text, calendar speed and agreement.

``nice -n 10 .venv/bin/python bench/culture.py`` — reads ../shared/data (read-only).
Prints a table, writes bench/results/culture.json; the last line is one JSON object.

Measures:
- read_cues throughput over the 9,299 real dialect messages of dialect_id_combined.tsv,
  and how often each cue fires per region;
- the substring trap: messages where a farewell phrase (باي, سلام, bye …) occurs as a raw
  substring versus as whole words — every difference is a farewell a substring matcher
  would have invented (the peer module's الموبايل bug);
- SeasonCalendar.moment() speed (cold and warm cache) and day-by-day agreement of its
  Hijri dates with Umm al-Qura (hijridate) over 2020–2040.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, bench/ is sys.path[0] and bench/nlp.py would shadow the nlp
# package that majlis.culture imports: take bench/ off the path first.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]

import csv  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from datetime import UTC, date, datetime, timedelta  # noqa: E402
from zoneinfo import ZoneInfo  # noqa: E402

from hijridate import Gregorian  # noqa: E402

from majlis.culture import SeasonCalendar, load_greetings, read_cues  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "bench" / "results" / "culture.json"
CUES = ("openers", "wellbeing", "thanks", "farewell", "request", "question", "complaint",
        "frustration", "insistence")


def messages() -> list[tuple[str, str]]:
    with (DATA / "dialect_id_combined.tsv").open(encoding="utf-8", newline="") as f:
        return [(row["text"], row["region"]) for row in csv.DictReader(f, delimiter="\t")]


def cue_bench(rows: list[tuple[str, str]]) -> dict[str, object]:
    read_cues("warm up")
    t0 = time.perf_counter()
    cues = [read_cues(text) for text, _ in rows]
    elapsed = time.perf_counter() - t0
    by_region: dict[str, Counter[str]] = defaultdict(Counter)
    totals: Counter[str] = Counter()
    for (_, region), c in zip(rows, cues, strict=True):
        totals[region] += 1
        for name in CUES:
            if getattr(c, name):
                by_region[region][name] += 1
    rates = {
        region: {name: round(by_region[region][name] / n, 4) for name in CUES}
        for region, n in sorted(totals.items())
    }
    # The substring trap: raw Arabic-script farewell phrases found inside other words.
    table = load_greetings()
    farewell_phrases = [p for e in table.of_kind("farewell") for p in e.all_phrases()]
    farewell_phrases += list(table.entry("salam_short").all_phrases())
    substring_hits = sum(
        1 for text, _ in rows if any(p in text.casefold() for p in farewell_phrases)
    )
    whole_word_hits = sum(1 for c in cues if c.farewell)
    return {
        "messages": len(rows),
        "msgs_per_s": round(len(rows) / elapsed, 1),
        "us_per_msg": round(elapsed / len(rows) * 1e6, 1),
        "rates_by_region": rates,
        "farewell_substring_hits": substring_hits,
        "farewell_whole_word_hits": whole_word_hits,
    }


def calendar_bench() -> dict[str, object]:
    first, last = date(2020, 1, 1), date(2040, 12, 31)
    days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    tz = ZoneInfo("Asia/Kuwait")
    instants = [datetime(d.year, d.month, d.day, 9, tzinfo=UTC) for d in days]
    cal = SeasonCalendar()
    t0 = time.perf_counter()
    moments = [cal.moment(at, tz=tz, country="KW") for at in instants]
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    for at in instants:
        cal.moment(at, tz=tz, country="KW")
    warm = time.perf_counter() - t0
    agree = 0
    for m in moments:
        local = m.local.date()
        h = Gregorian(local.year, local.month, local.day).to_hijri()
        agree += m.hijri == (h.year, h.month, h.day)
    ramadan_starts = sorted(
        m.local.date().isoformat() for m in moments if m.hijri[1:] == (9, 1)
    )
    return {
        "days": len(days),
        "moment_us_cold": round(cold / len(days) * 1e6, 1),
        "moment_us_warm": round(warm / len(days) * 1e6, 1),
        "umm_al_qura_agreement": round(agree / len(days), 6),
        "ramadan_starts_2026_2028": [d for d in ramadan_starts if "2026" <= d < "2029"],
    }


def main() -> None:
    rows = messages()
    cues = cue_bench(rows)
    cal = calendar_bench()
    print(f"{'metric':<34}{'value':>14}")
    for key in ("messages", "msgs_per_s", "us_per_msg", "farewell_substring_hits",
                "farewell_whole_word_hits"):
        print(f"{key:<34}{cues[key]!s:>14}")
    for key in ("days", "moment_us_cold", "moment_us_warm", "umm_al_qura_agreement"):
        print(f"{key:<34}{cal[key]!s:>14}")
    print(f"\n{'region':<11}" + "".join(f"{name[:8]:>10}" for name in CUES))
    rates = cues["rates_by_region"]
    assert isinstance(rates, dict)
    for region, row in rates.items():
        print(f"{region:<11}" + "".join(f"{row[name]:>10.3f}" for name in CUES))
    result = {"name": "culture", "cues": cues, "calendar": cal}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
