"""Support questions in dialect over short MSA policy documents, through the whole service.

``.venv/bin/python bench/support.py [--set dev|test|test2|…|test12]``

Data (``bench/data/support/<set>/``, written for this bench from knowledge of
the dialects): ``docs/*.md`` short MSA policies; ``questions.tsv`` (region,
script, document, gold fact, question); ``unanswerable.tsv`` (questions the
documents cannot answer); ``threads.tsv`` (5-turn threads, one region each).

The service runs in-process on 127.0.0.1:0 on the embedded default (SQLite,
offline responder, no model); the documents go through ``kb.ingest_files``
and every question is a real SendMessage turn in a thread of its own.
Metrics:

* ``answer_rate``: the gold fact is in the reply (whitespace-normalised).
* ``dialect_agreement``: the thread's dialect (``turn_completed.dialect``)
  equals the question's region.  Arabizi rows are labelled with the dialect
  they are written in; MSA rows agree when the reply is not mirrored into a
  regional dialect (``reply_register`` msa or neutral).
* ``mirrored``: dialect questions (not MSA) whose reply mirrored their own
  region; the rest got the neutral voice (never foreign, but not theirs).
* ``reply_foreign``: replies mirrored (``reply_register == "dialect"``) into a
  dialect other than the question's region (must be 0).
* ``abstention``: unanswerable questions whose reply quotes no document.
* ``answer_chars_mean``: mean length in characters of the replies that quote a
  document (lead-in included): answers stay short, never the whole document.
* ``leaks``: replies showing a file name, slug path (›), Markdown heading or
  bracketed source (must be 0).
* ``thread_switches`` / ``thread_foreign_switches``: replies in 5-turn threads
  whose voice changes from the previous reply's (mirrored region, neutral or
  msa) / replies mirrored into a region other than the thread's.  A neutral
  reply is never a foreign switch; ``turn_completed.dialect`` alone is the
  thread's posterior, not the reply's voice, so ``reply_register`` decides.
* ``recall@1`` with and without the dialect bridge: the question's document
  is the top knowledge-base hit (store searched directly, same documents).

Prints a table, writes ``bench/results/support.json`` (one entry per set);
the last line is one JSON object.  Figures come from a loaded 2-core machine.
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
import re  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from typing import Any  # noqa: E402

import nlp  # noqa: E402
from bench._support_sets import (  # noqa: E402
    COUNTRY,
    DATA,
    SETS,
    TENANT,
    Question,
    load,
    norm,
    save_result,
    served,
    turn,
)
from memory import Kind, kb, open_store  # noqa: E402

NEUTRAL = frozenset({"msa", "neutral", ""})
_LEAK = re.compile(r"(^|\s)#{1,6}\s|›|\[[^\]]*\]|\b[\w-]+\.(?:md|txt|jsonl)\b")


def foreign(voice: str, region: str) -> bool:
    """A reply mirrored into a region that is not the customer's (neutral never is)."""
    return voice not in NEUTRAL and voice != region


async def _recall_at_1(docs: list[Path], questions: list[Question], tmp: Path,
                       bridge: bool) -> float:
    store = await open_store(None, sqlite_path=tmp / f"recall-{bridge}.sqlite3",
                             keys=nlp.key_function("builtin"), bridge=bridge)
    try:
        await kb.ingest_files(store, TENANT, docs)
        right = 0
        for q in questions:
            hits = await store.search(TENANT, q.text, kinds={Kind.DOCUMENT}, k=1)
            right += bool(hits) and hits[0].record.doc_id == q.doc
        return right / len(questions)
    finally:
        await store.close()


async def run(folder: Path, show: bool, show_switches: bool = False) -> dict[str, Any]:
    support_set = load(folder)
    docs, questions = support_set.docs, support_set.questions
    unanswerable, threads = support_set.unanswerable, support_set.threads
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        by_region: Counter[str] = Counter()
        answered: Counter[str] = Counter()
        agreed: Counter[str] = Counter()
        misses: list[str] = []
        leaks = abstained = switches = foreign_switches = reply_foreign = mirrored = 0
        voices: dict[str, list[str]] = {}  # thread name → the voice of each reply
        quoted_chars: list[int] = []  # length of every reply that quotes a document
        async with served(tmp) as (app, client):
            started = time.perf_counter()
            await kb.ingest_files(app.store, TENANT, docs)
            for i, q in enumerate(questions):
                t = await turn(client, q.text, user=f"q{i}",
                               country=COUNTRY.get(q.region, ""))
                reply = t.reply
                label = f"{q.region}/{q.script}"
                by_region[label] += 1
                hit = norm(q.gold) in reply
                answered[label] += hit
                agreed[label] += (t.voice in NEUTRAL if q.region == "msa"
                                  else t.dialect == q.region)
                reply_foreign += foreign(t.voice, q.region)
                mirrored += q.region != "msa" and t.voice == q.region
                if foreign(t.voice, q.region):
                    misses.append(f"foreign voice {t.voice}\t{label}\t{q.text}")
                leaks += bool(_LEAK.search(reply))
                if t.quoted:
                    quoted_chars.append(len(reply))
                if not hit:
                    misses.append(f"{label}\t{q.text}\t→ {reply[:160]}")
            for i, u in enumerate(unanswerable):
                t = await turn(client, u.text, user=f"u{i}", country=COUNTRY.get(u.region, ""))
                abstained += not t.quoted
                reply_foreign += foreign(t.voice, u.region)
                if foreign(t.voice, u.region):
                    misses.append(f"foreign voice {t.voice}\tunanswerable {u.region}\t{u.text}")
                leaks += bool(_LEAK.search(t.reply))
                if t.quoted:
                    misses.append(f"unanswerable {u.region}\t{u.text}\t→ {t.reply[:160]}")
            thread_ids: dict[str, str] = {}
            last_voice: dict[str, str] = {}
            for row in threads:
                t = await turn(client, row.text, user=f"t-{row.name}",
                               thread=thread_ids.get(row.name, ""),
                               country=COUNTRY.get(row.region, ""))
                thread_ids[row.name] = t.thread_id
                switches += row.name in last_voice and t.voice != last_voice[row.name]
                last_voice[row.name] = t.voice
                voices.setdefault(f"{row.name} ({row.region})", []).append(t.voice)
                foreign_switches += foreign(t.voice, row.region)
                if foreign(t.voice, row.region):
                    misses.append(f"thread {row.name} {row.region}\t{row.text}\t→ {t.voice}")
                leaks += bool(_LEAK.search(t.reply))
            per_turn_ms = (time.perf_counter() - started) * 1000 / (
                len(questions) + len(unanswerable) + len(threads))
        with_bridge = await _recall_at_1(docs, questions, tmp, bridge=True)
        without_bridge = await _recall_at_1(docs, questions, tmp, bridge=False)
    if show:
        print("\n".join(misses), file=sys.stderr)
    if show_switches:
        for name, seq in voices.items():
            print(f"voices {name}: {' → '.join(seq)}", file=sys.stderr)
    n = len(questions)
    return {
        "set": folder.name,
        "documents": len(docs),
        "questions": n,
        "answer_rate": round(sum(answered.values()) / n, 4),
        "dialect_agreement": round(sum(agreed.values()) / n, 4),
        "mirrored": round(mirrored / max(sum(q.region != "msa" for q in questions), 1), 4),
        "unanswerable": len(unanswerable),
        "abstention": round(abstained / max(len(unanswerable), 1), 4),
        "leaks": leaks,
        "answer_chars_mean": round(sum(quoted_chars) / max(len(quoted_chars), 1), 1),
        "thread_turns": len(threads),
        "thread_switches": switches,
        "thread_foreign_switches": foreign_switches,
        "reply_foreign": reply_foreign,
        "recall@1_bridge": round(with_bridge, 4),
        "recall@1_no_bridge": round(without_bridge, 4),
        "ms_per_turn_grpc": round(per_turn_ms, 1),
        "by_region": {k: {"questions": by_region[k],
                          "answer_rate": round(answered[k] / by_region[k], 3),
                          "dialect_agreement": round(agreed[k] / by_region[k], 3)}
                      for k in sorted(by_region)},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=SETS, default="dev")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--show-misses", action="store_true",
                        help="print every missed question to stderr (dev tuning)")
    parser.add_argument("--show-switches", action="store_true",
                        help="print each thread's reply voices to stderr")
    args = parser.parse_args()
    result = asyncio.run(run(args.data / args.set, args.show_misses, args.show_switches))
    print(f"{'metric':<26}{'value':>10}")
    for key, value in result.items():
        if key != "by_region":
            print(f"{key:<26}{value!s:>10}")
    print(f"\n{'region/script':<22}{'n':>4}{'answers':>9}{'dialect':>9}")
    for label, row in result["by_region"].items():
        print(f"{label:<22}{row['questions']:>4}{row['answer_rate']:>9}"
              f"{row['dialect_agreement']:>9}")
    save_result("support", args.set, result)
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
