"""Calibrating the mirroring threshold of the thread dialect (nlp.dialect_thread).

``python bench/dialect_thread.py [--data FILE.tsv]`` (default: the support-style
development set bench/data/support_dialect.tsv). A reply in the wrong dialect
is worse than one in the neutral register, so the threshold is chosen for
*precision*: the least posterior at which mirrored replies are in the right
dialect at least TARGET of the time, over four kinds of thread built from the
set's messages:

* ``single``: one message, no country;
* ``country``: one message, the caller's country is the message's region;
* ``wrong_country``: one message, the country is another region's;
* ``thread3``: three messages of one region interleaved with shared messages
  (greetings, numbers, MSA), no country.

MSA rows count as wrong whenever any dialect is mirrored. Prints precision
and coverage per threshold, writes bench/results/dialect_thread.json, last
line one JSON object.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import sys
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]  # bench/nlp.py ≠ nlp

from nlp.dialect import read_dialect_model  # noqa: E402
from nlp.dialect_thread import DIALECTS, ThreadDialect, message_evidence  # noqa: E402

DEFAULT = _HERE / "data" / "support_dialect.tsv"
RESULTS = _HERE / "results" / "dialect_thread.json"
TARGET = 0.9
THRESHOLDS = (0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8)
FILLERS = ("السلام عليكم", "تمام", "رقم الطلب 48213", "هل يمكنني معرفة حالة الطلب؟", "شكرا")


def read_tsv(path: Path) -> list[tuple[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return [(r["text"], r["region"]) for r in csv.DictReader(f, delimiter="\t")]


Thread = tuple[list[str], str | None, str]


def threads(rows: list[tuple[str, str]], seed: int = 7) -> dict[str, list[Thread]]:
    """kind → [(messages, country region or None, gold region)]."""
    rng = random.Random(seed)
    by_region: dict[str, list[str]] = {}
    for text, region in rows:
        by_region.setdefault(region, []).append(text)
    out: dict[str, list[Thread]] = {
        "single": [([t], None, r) for t, r in rows],
        "country": [([t], r if r in DIALECTS else None, r) for t, r in rows],
        "wrong_country": [
            ([t], rng.choice([d for d in DIALECTS if d != r]), r) for t, r in rows
        ],
        "thread3": [],
    }
    for region, texts in by_region.items():
        for _ in range(20):
            picked = rng.sample(texts, 3)
            msgs = [picked[0], rng.choice(FILLERS), picked[1], rng.choice(FILLERS), picked[2]]
            out["thread3"].append((msgs, None, region))
    return out


def run(rows: list[tuple[str, str]]) -> dict[str, Any]:
    model = read_dialect_model()
    table: dict[str, Any] = {}
    for kind, items in threads(rows).items():
        finals = []
        for msgs, prior, gold in items:
            state = ThreadDialect().with_prior(prior)
            for m in msgs:
                state = state.observe(message_evidence(model, m))
            finals.append((state.region, state.confidence, state.backed, gold))
        per_t = {}
        for t in THRESHOLDS:
            # As majlis.culture.choose_register: confident and backed by marker words.
            mirrored = [(r, g) for r, c, b, g in finals if r != "msa" and c >= t and b]
            right = sum(1 for r, g in mirrored if r == g)
            dialect_rows = sum(1 for *_, g in finals if g != "msa")
            per_t[str(t)] = {
                "precision": round(right / len(mirrored), 3) if mirrored else 1.0,
                "coverage": round(right / dialect_rows, 3) if dialect_rows else 0.0,
                "mirrored": len(mirrored),
            }
        table[kind] = per_t
    chosen = next(
        (t for t in THRESHOLDS if all(table[k][str(t)]["precision"] >= TARGET for k in table)),
        THRESHOLDS[-1],
    )
    return {"table": table, "threshold": chosen, "target_precision": TARGET}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT)
    args = parser.parse_args()
    result = run(read_tsv(args.data))
    kinds = list(result["table"])
    print(f"data: {args.data.name}; precision / coverage of mirrored replies")
    print("threshold  " + "  ".join(f"{k:>18}" for k in kinds))
    for t in THRESHOLDS:
        cells = [result["table"][k][str(t)] for k in kinds]
        print(f"{t:<9}  " + "  ".join(f"{c['precision']:>8.3f} / {c['coverage']:<7.3f}"
                                       for c in cells))
    print(f"least threshold with precision ≥ {TARGET} everywhere: {result['threshold']}")
    summary = {"bench": "dialect_thread", "data": args.data.name, **result}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(summary, ensure_ascii=False, indent=1), encoding="utf-8")
    print(json.dumps({"bench": "dialect_thread", "data": args.data.name,
                      "threshold": result["threshold"],
                      "thread3": result["table"]["thread3"][str(result["threshold"])],
                      "single": result["table"]["single"][str(result["threshold"])]},
                     ensure_ascii=False))


if __name__ == "__main__":
    main()
