"""The grounding bars' second look without framing words, checked leave-one-set-out.

``nice -n 10 .venv/bin/python bench/framing_loso.py [--sets dev test …]``

OfflineResponder._grounded looks again, without them, at an answer whose chunk
lacks only words that frame the question (Answer.without_framing: dialect
function words of majlis/models/data/function_words.tsv, frame verbs and measure
nouns beside a typed sentence).  The rule's choices are which words it may set
aside.  For each set held out, every word that let an unanswerable question of
the *other* sets be quoted is banned, and the held-out set is scored with the
rest: its answers and abstention are what the rule earns on data its word list
was not checked on.  The three selection stages of OfflineResponder._answer are
replayed on the service's own store (selection level: routing such as asking
an order number is not simulated; bench/support.py is the end-to-end figure).
Prints a table per set (bars alone, rule in-sample, rule LOSO); the last line
is one JSON object.  Writes nothing.
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
import tempfile  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

import nlp  # noqa: E402
from bench._support_sets import DATA, SETS, TENANT, load, norm, recall_chunks, served  # noqa: E402
from majlis.models import support as support_rules  # noqa: E402
from majlis.models.answers import Answer  # noqa: E402
from majlis.models.offline import OfflineResponder  # noqa: E402
from majlis.models.types import Recalled  # noqa: E402
from memory import kb  # noqa: E402

Row = tuple[str, str, list[Recalled]]  # business text, normalised gold ("" unanswerable), recall


class _Banned(OfflineResponder):
    """The served bars, with the second look refused when it sets aside a banned word
    (``None``: no second look at all, the bars alone)."""

    def __init__(self, banned: frozenset[str] | None) -> None:
        super().__init__(keys=nlp.search_keys, expand=nlp.dialect_to_msa,
                         dialect_cue=nlp.has_dialect_words)
        self.banned = banned

    def _grounded(self, found: Answer | None) -> bool:
        if found is None:
            return False
        if self._passes(found):
            return True
        second = found.without_framing
        return (self.banned is not None and second is not None
                and self.banned.isdisjoint(second.set_aside) and self._passes(second))


def decide(r: OfflineResponder, asked: str, recalled: Sequence[Recalled]) -> Answer | None:
    """OfflineResponder._answer's stages (OfflineResponder.choose): the answer served, or None."""
    found = r.choose(asked, recalled)
    return found if found is not None and r._grounded(found) else None


async def extract(folder: Path) -> list[Row]:
    support_set = load(folder)
    items = ([(q.text, norm(q.gold)) for q in support_set.questions]
             + [(u.text, "") for u in support_set.unanswerable])
    rows: list[Row] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        async with served(Path(tmp_name)) as (app, _client):
            await kb.ingest_files(app.store, TENANT, support_set.docs)
            for text, gold in items:
                rows.append((support_rules.business_text(text), gold,
                             await recall_chunks(app.store, text)))
    return rows


def score(r: OfflineResponder, rows: Sequence[Row]) -> dict[str, Any]:
    answered = abstained = 0
    leaked: set[str] = set()  # words set aside for an unanswerable that was quoted
    for asked, gold, recalled in rows:
        found = decide(r, asked, recalled)
        if gold:
            answered += found is not None and gold in norm(found.text)
        elif found is None:
            abstained += 1
        elif not r._passes(found) and found.without_framing is not None:
            leaked |= set(found.without_framing.set_aside)
    return {"answered": answered, "questions": sum(1 for _a, g, _r in rows if g),
            "abstained": abstained, "unanswerable": sum(1 for _a, g, _r in rows if not g),
            "leaked_words": sorted(leaked)}


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    data = {name: await extract(args.data / name) for name in args.sets}
    bars, full = _Banned(None), _Banned(frozenset())
    inside = {name: score(full, rows) for name, rows in data.items()}
    out: dict[str, Any] = {}
    print(f"{'set':8} {'bars':>9} {'in-sample':>10} {'LOSO':>9}   abstained bars/in/LOSO")
    for name, rows in data.items():
        banned = frozenset(w for other, s in inside.items() if other != name
                           for w in s["leaked_words"])
        before, loso = score(bars, rows), score(_Banned(banned), rows)
        out[name] = {"bars": before, "in_sample": inside[name], "loso": loso,
                     "banned": sorted(banned)}
        print(f"{name:8} {before['answered']:4}/{before['questions']:<4} "
              f"{inside[name]['answered']:5}/{inside[name]['questions']:<4} "
              f"{loso['answered']:4}/{loso['questions']:<4}   "
              f"{before['abstained']}/{inside[name]['abstained']}/{loso['abstained']}"
              f" of {before['unanswerable']}")
    total = {k: {m: sum(v[k][m] for v in out.values())
                 for m in ("answered", "questions", "abstained", "unanswerable")}
             for k in ("bars", "in_sample", "loso")}
    print("total", json.dumps(total))
    return {"bench": "framing_loso", "sets": out, "total": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS), choices=SETS)
    parser.add_argument("--data", type=Path, default=DATA)
    result = asyncio.run(main_async(parser.parse_args()))
    print(json.dumps({"bench": result["bench"], "total": result["total"],
                      "banned": {k: v["banned"] for k, v in result["sets"].items()}},
                     ensure_ascii=False))


if __name__ == "__main__":
    main()
