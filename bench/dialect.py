"""Dialect identification benchmark.

``python bench/dialect.py [--data FILE.tsv]`` — any TSV with ``text`` and
``region`` columns; default: the fixed held-out split of
dialect_id_combined.tsv (see bench/train_dialect.py).  Prints accuracy,
macro-F1 over the regions present, per-region P/R/F1, the confusion matrix
and throughput; writes bench/results/dialect.json; last line is JSON.
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]  # bench/nlp.py ≠ nlp

from nlp.dialect import REGIONS, read_dialect_model  # noqa: E402

# The held-out split is defined once, in the training script.
_spec = importlib.util.spec_from_file_location("train_dialect", _HERE / "train_dialect.py")
assert _spec is not None and _spec.loader is not None
_train = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_train)
DATA, load_rows, split = _train.DATA, _train.load_rows, _train.split

RESULTS = Path(__file__).resolve().parent / "results" / "dialect.json"


def read_tsv(path: Path) -> list[tuple[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return [(r["text"], r["region"]) for r in csv.DictReader(f, delimiter="\t")]


def timed_pass(model: Any, texts: list[str]) -> tuple[float, list[str]]:
    t0 = time.perf_counter()
    preds = [model.identify(t).region for t in texts]
    return time.perf_counter() - t0, preds


def evaluate(rows: list[tuple[str, str]], warmup: list[str], repeats: int = 5) -> dict[str, Any]:
    """Quality plus three throughputs, each the median of ``repeats`` fresh instances.

    cold: a new instance, every word misses the per-word cache (a replica's
    first seconds); steady: a new instance that has first read ``warmup``
    (the training split's messages — traffic already seen, never the messages
    timed), then the evaluation messages, all unseen; repeat: the same
    messages a second time (every word cached: the ceiling).
    """
    texts = [t for t, _ in rows]
    cold, steady, repeat = [], [], []
    preds: list[str] = []
    for _ in range(repeats):
        model = read_dialect_model()
        model.identify("تسخين")  # first-call costs (regex compile) outside the timing
        elapsed, preds = timed_pass(model, texts)
        cold.append(elapsed)
        repeat.append(timed_pass(model, texts)[0])
        model = read_dialect_model()
        for t in warmup:
            model.identify(t)
        steady.append(timed_pass(model, texts)[0])
    elapsed = statistics.median(cold)
    elapsed_steady, elapsed_warm = statistics.median(steady), statistics.median(repeat)
    gold = [g for _, g in rows]
    present = [r for r in REGIONS if r in set(gold)]
    conf = {g: {p: 0 for p in REGIONS} for g in present}
    for g, p in zip(gold, preds, strict=True):
        conf[g][p] += 1
    per: dict[str, dict[str, float]] = {}
    for r in present:
        tp = conf[r][r]
        fp = sum(conf[g][r] for g in present if g != r)
        fn = sum(conf[r].values()) - tp
        prec = tp / (tp + fp) if tp + fp else 0.0
        rec = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        per[r] = {"precision": prec, "recall": rec, "f1": f1, "support": tp + fn}
    acc = sum(g == p for g, p in zip(gold, preds, strict=True)) / len(rows)
    return {
        "accuracy": acc,
        "macro_f1": sum(v["f1"] for v in per.values()) / len(per),
        "messages_per_s_cold": len(rows) / elapsed,
        "messages_per_s_steady": len(rows) / elapsed_steady,
        "messages_per_s_warm": len(rows) / elapsed_warm,
        "rows": len(rows),
        "per_region": per,
        "confusion": conf,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=None)
    args = ap.parse_args()
    train, heldout = split(load_rows(DATA))
    if args.data is None:
        rows, name = heldout, "heldout(dialect_id_combined)"
    else:
        rows, name = read_tsv(args.data), args.data.name
    res = evaluate(rows, warmup=[t for t, _ in train])
    print(f"data: {name}  rows: {res['rows']}")
    print(f"accuracy {res['accuracy']:.3f}  macro-F1 {res['macro_f1']:.3f}")
    print(f"messages/s on one core (median of 5 fresh instances): "
          f"cold {res['messages_per_s_cold']:.0f}, steady {res['messages_per_s_steady']:.0f} "
          f"(cache warmed on the training split), repeat {res['messages_per_s_warm']:.0f}")
    print(f"{'region':<10} {'P':>6} {'R':>6} {'F1':>6} {'n':>6}")
    for r, v in res["per_region"].items():
        print(f"{r:<10} {v['precision']:6.3f} {v['recall']:6.3f} {v['f1']:6.3f} {v['support']:6d}")
    print("confusion (rows gold, columns predicted):")
    print(" " * 10 + "".join(f"{p[:6]:>8}" for p in REGIONS))
    for g, row in res["confusion"].items():
        print(f"{g:<10}" + "".join(f"{row[p]:8d}" for p in REGIONS))
    summary = {"data": name, "accuracy": round(res["accuracy"], 4),
               "macro_f1": round(res["macro_f1"], 4),
               "messages_per_s": round(res["messages_per_s_steady"]),
               "messages_per_s_cold": round(res["messages_per_s_cold"]),
               "messages_per_s_warm": round(res["messages_per_s_warm"])}
    if args.data is None:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps({**summary, **res}, ensure_ascii=False, indent=1))
    print(json.dumps(summary, ensure_ascii=False))


if __name__ == "__main__":
    main()
