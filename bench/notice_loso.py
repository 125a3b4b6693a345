"""The «how will I know» evidence words (qtypes._NOTICE_EVIDENCE), checked leave-one-set-out.

``nice -n 10 .venv/bin/python bench/notice_loso.py [--sets dev test …]``

A procedure question asking how the customer will know («شلون اعرف الجهاز
وصل؟», qtypes.asks_notice) prefers a sentence saying how one is told (a message,
a notification: qtypes.carries_notice).  The rule was noticed reading misses, so
its word list is checked leave-one-set-out: for each set held out, only the
evidence words found in a gold sentence of a «how will I know» question of the
*other* sets are kept, and the held-out set is scored with them.  The stages of
OfflineResponder.choose are replayed on the service's own store (selection
level, as bench/framing_loso.py).  Prints a table per set (no words, LOSO words,
all words); the last line is one JSON object.  Writes nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

import nlp  # noqa: E402
from bench._support_sets import DATA, SETS, norm  # noqa: E402
from bench.framing_loso import Row, decide, extract  # noqa: E402
from majlis.models import qtypes  # noqa: E402
from majlis.models.extract import split_sentences  # noqa: E402
from majlis.models.offline import OfflineResponder  # noqa: E402

ALL = qtypes._NOTICE_EVIDENCE


def gold_words(rows: Sequence[Row]) -> set[str]:
    """Evidence words in the gold sentences of a set's «how will I know» questions."""
    found: set[str] = set()
    for asked, gold, recalled in rows:
        if not gold or not qtypes.asks_notice(asked):
            continue
        for item in recalled:
            for sentence in split_sentences(item.text):
                if gold in norm(sentence):
                    found |= {f for w in qtypes.fold_words(sentence)
                              for f in qtypes._forms(w)} & ALL
    return found


def score(r: OfflineResponder, rows: Sequence[Row], words: frozenset[str]) -> dict[str, int]:
    qtypes._NOTICE_EVIDENCE = words  # carries_notice reads the module's set
    try:
        answered = abstained = 0
        for asked, gold, recalled in rows:
            found = decide(r, asked, recalled)
            if gold:
                answered += found is not None and gold in norm(found.text)
            else:
                abstained += found is None
    finally:
        qtypes._NOTICE_EVIDENCE = ALL
    return {"answered": answered, "abstained": abstained}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    data = {name: await extract(args.data / name) for name in args.sets}
    used = {name: gold_words(rows) for name, rows in data.items()}
    r = OfflineResponder(keys=nlp.search_keys, expand=nlp.dialect_to_msa,
                         dialect_cue=nlp.has_dialect_words)
    out: dict[str, Any] = {}
    print(f"{'set':8} {'none':>9} {'LOSO':>9} {'all':>9}   (answered/abstained)")
    for name, rows in data.items():
        kept = frozenset().union(*(used[o] for o in data if o != name))
        cells = {"none": score(r, rows, frozenset()), "loso": score(r, rows, kept),
                 "all": score(r, rows, ALL)}
        out[name] = {**cells, "loso_words": sorted(kept)}
        print(f"{name:8} " + " ".join(f"{c['answered']:4}/{c['abstained']:<4}"
                                     for c in cells.values()))
    total = {k: {m: sum(v[k][m] for v in out.values()) for m in ("answered", "abstained")}
             for k in ("none", "loso", "all")}
    print("total", json.dumps(total))
    return {"bench": "notice_loso", "sets": out, "total": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS), choices=SETS)
    parser.add_argument("--data", type=Path, default=DATA)
    result = asyncio.run(main_async(parser.parse_args()))
    print(json.dumps({"bench": result["bench"], "total": result["total"]}, ensure_ascii=False))


if __name__ == "__main__":
    main()
