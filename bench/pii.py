"""Personal-data detection: precision and recall per kind and per country, and cost.

``.venv/bin/python bench/pii.py`` — the labelled corpus of ``tests/nlp/pii_corpus.py``
(hand-written ``tests/nlp/pii_corpus.tsv`` + the seeded generator). Prints the
per-kind table, the per-detail table (each country's ID, IBAN, phone), and the
CPU time of ``nlp.pii.mask`` per message (median of interleaved rounds, process
CPU time, so a busy machine changes it little). Writes bench/results/pii.json;
the last printed line is one JSON object.

``bench/pii.py --before /work/main/nlp/pii.py`` also scores another version of
the module on the same corpus (its per-kind table, for a before/after).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Run as a script, this folder is sys.path[0]: put the repository there instead,
# so that ``nlp`` is the package and ``tests`` importable.
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent)] + [p for p in sys.path if Path(p or ".").resolve() != _HERE]

from nlp import pii  # noqa: E402
from tests.nlp import pii_corpus  # noqa: E402

RESULTS = _HERE / "results" / "pii.json"
ROUNDS = 7


def per_detail(cases: list[pii_corpus.Case]) -> dict[str, dict[str, int]]:
    """For each detail: valid rows found (with that detail), valid rows, near misses masked."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: {"valid": 0, "found": 0,
                                                          "near_misses": 0, "masked": 0})
    for case in cases:
        s = case.text.index(case.raw)
        over = [f for f in pii.find(case.text) if f.start < s + len(case.raw) and s < f.end]
        row = out[f"{case.kind}/{case.detail}"]
        if case.mask:
            row["valid"] += 1
            row["found"] += any(f.detail == case.detail for f in over) \
                and case.raw not in pii.mask(case.text)
        else:
            row["near_misses"] += 1
            row["masked"] += bool(over)
    return dict(sorted(out.items()))


def cpu_us_per_message(texts: list[str], *masks: Callable[[str], str]) -> list[float]:
    """Median CPU µs per message of each ``mask``, rounds interleaved (same machine noise)."""
    rounds: list[list[float]] = [[] for _ in masks]
    for _ in range(ROUNDS):
        for i, mask in enumerate(masks):
            t0 = time.process_time()
            for text in texts:
                mask(text)
            rounds[i].append((time.process_time() - t0) / len(texts) * 1e6)
    return [round(statistics.median(r), 1) for r in rounds]


def score_other(path: Path, cases: list[pii_corpus.Case]
                ) -> tuple[dict[str, pii_corpus.Score], Callable[[str], str]]:
    """``cases`` scored with the ``find``/``mask`` of another copy of nlp/pii.py."""
    spec = importlib.util.spec_from_file_location("pii_before", path)
    assert spec is not None and spec.loader is not None
    other = importlib.util.module_from_spec(spec)
    sys.modules["pii_before"] = other  # dataclasses look their module up
    spec.loader.exec_module(other)

    def find(text: str) -> list[pii.Finding]:
        return [pii.Finding(pii.Kind(f.kind.value), f.start, f.end, f.detail, f.masked)
                for f in other.find(text)]

    return pii_corpus.score(cases, find=find, mask=other.mask), other.mask


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, help="another nlp/pii.py to score as well")
    args = parser.parse_args()
    cases = pii_corpus.corpus()
    hand = pii_corpus.load()
    scores = pii_corpus.score(cases)
    print(f"corpus: {len(hand)} hand-written rows + {len(cases) - len(hand)} generated "
          f"(seed 15)\n")
    print(pii_corpus.table(scores))
    details = per_detail(cases)
    print("\ndetail                        valid  found  near-miss  masked")
    for name, d in details.items():
        print(f"{name:<29} {d['valid']:>5} {d['found']:>6} {d['near_misses']:>10} "
              f"{d['masked']:>7}")
    misses = [m for s in scores.values() for m in s.misses]
    if misses:
        print("\nerrors:")
        for m in misses:
            print("  " + m)
    before, before_mask = score_other(args.before, cases) if args.before else (None, None)
    if before is not None:
        print(f"\nbefore ({args.before}):")
        print(pii_corpus.table(before))
    texts = [c.text for c in cases]
    plain = [t for t in texts if not pii.find(t)]
    masks = [pii.mask] + ([before_mask] if before_mask else [])
    every, empty = cpu_us_per_message(texts, *masks), cpu_us_per_message(plain, *masks)
    cost: dict[str, Any] = {"all_rows_us": every[0], "rows_without_pii_us": empty[0]}
    print(f"\nnlp.pii.mask CPU time per message (median of {ROUNDS}): "
          f"{cost['all_rows_us']} µs over all rows, {cost['rows_without_pii_us']} µs "
          f"over rows with nothing to mask")
    if before_mask:
        cost["before"] = {"all_rows_us": every[1], "rows_without_pii_us": empty[1]}
        print(f"before: {every[1]} µs over all rows, {empty[1]} µs over rows with nothing "
              "to mask (interleaved rounds)")
    per_kind = {k: {"valid": s.valid, "near_misses": s.near_misses, "tp": s.tp,
                         "fp": s.fp, "fn": s.fn, "precision": round(s.precision, 4),
                         "recall": round(s.recall, 4),
                         "detail_accuracy": round(s.detail_accuracy, 4)}
                for k, s in scores.items()}
    result: dict[str, Any] = {
        "bench": "pii",
        "rows": {"hand": len(hand), "generated": len(cases) - len(hand)},
        "per_kind": per_kind,
        "per_detail": details,
        "errors": misses,
        "cpu_us_per_message": cost,
    }
    if before is not None:
        result["before"] = {"module": str(args.before), "per_kind": {
            k: {"precision": round(s.precision, 4), "recall": round(s.recall, 4), "fp": s.fp,
                "fn": s.fn} for k, s in before.items()}}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({"bench": "pii", **{f"{k}_p": v["precision"] for k, v in per_kind.items()},
                      **{f"{k}_r": v["recall"] for k, v in per_kind.items()},
                      "cpu_us_per_message": cost["all_rows_us"]}))


if __name__ == "__main__":
    main()
