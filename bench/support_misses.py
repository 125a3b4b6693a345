"""Why support questions are missed: each failed question of bench/support.py, by cause.

``.venv/bin/python bench/support_misses.py [--set test5 ...] [--show]``

For every question the reply over gRPC is compared with the offline
responder's own stages, run on the same store (SQLite, bridge on, the five
chunks the service recalls):

* ``routing``: the knowledge-base answer holds the gold fact, yet the reply
  took another path (order number asked, handoff, clarify).
* ``gold_not_sentence``: the gold fact is no substring of any document
  sentence (a data/format matter: digits vs words, a span across sentences).
* ``retrieval``: the gold sentence's document is not among the recalled chunks.
* ``wrong_sentence``: selection chose a sentence without the gold fact
  (``…_same_doc`` when from the right document).
* ``gated``: selection chose the gold sentence but the grounding bars refused it
  (reply abstained or asked to clarify).
* ``other``: the pipeline answers here but the gRPC reply does not (should be 0).

Prints the counts per set and cause; ``--show`` lists every miss with its cause.
The last line is one JSON object.  Development tool: it reads the sets' answers.
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
from collections import Counter  # noqa: E402
from typing import Any  # noqa: E402

import nlp  # noqa: E402
from bench._support_sets import (  # noqa: E402
    COUNTRY,
    DATA,
    SETS,
    TENANT,
    load,
    norm,
    recall_chunks,
    served,
    turn,
)
from majlis.models import support as support_rules  # noqa: E402
from majlis.models.answers import MSA_CHUNKS, document_of, select_answer  # noqa: E402
from majlis.models.extract import split_sentences  # noqa: E402
from majlis.models.offline import OfflineResponder  # noqa: E402
from majlis.models.types import Recalled  # noqa: E402
from memory import kb  # noqa: E402


async def diagnose(folder: Path) -> tuple[Counter[str], list[str], dict[str, Any]]:
    support_set = load(folder)
    docs, questions = support_set.docs, support_set.questions
    gold_doc_sentences = {}
    for path in docs:
        gold_doc_sentences[path.name] = [norm(s) for s in split_sentences(
            path.read_text(encoding="utf-8"))]
    responder = OfflineResponder(keys=nlp.search_keys, expand=nlp.dialect_to_msa,
                                 dialect_cue=nlp.has_dialect_words)
    causes: Counter[str] = Counter()
    lines: list[str] = []
    extra = Counter[str]()
    with tempfile.TemporaryDirectory() as tmp_name:
        async with served(Path(tmp_name)) as (app, client):
            await kb.ingest_files(app.store, TENANT, docs)
            for i, q in enumerate(questions):
                t = await turn(client, q.text, user=f"q{i}",
                               country=COUNTRY.get(q.region, ""))
                gold = norm(q.gold)
                if gold in t.reply:
                    causes["answered"] += 1
                    continue
                asked = support_rules.business_text(q.text)
                recalled = await recall_chunks(app.store, q.text)
                top1 = bool(recalled) and document_of(recalled[0]) == q.doc
                extra["top1"] += top1

                def select(rs: list[Recalled], asked: str = asked) -> Any:
                    return select_answer(asked, rs, keys=responder._keys,
                                         stop=responder._stop, expand=responder._expand,
                                         dialect_cue=responder._dialect_cue)

                found = responder.choose(asked, recalled)
                if not responder._grounded(found):
                    # Nothing served: an ungrounded answer holding the gold fact, from
                    # either pool, makes the miss the bars' (``gated``), not selection's.
                    for other in (select(recalled), select(recalled[:MSA_CHUNKS])):
                        if other is not None and gold in norm(other.text):
                            found = other
                            break
                chosen = norm(found.text) if found is not None else ""
                grounded = responder._grounded(found)
                in_doc = any(gold in s for s in gold_doc_sentences.get(q.doc, []))
                recalled_docs = [document_of(r) for r in recalled]
                if gold in chosen and grounded:
                    cause = "routing"
                elif not in_doc:
                    cause = "gold_not_sentence"
                elif q.doc not in recalled_docs:
                    cause = "retrieval"
                elif gold not in chosen:
                    same = found is not None and document_of(found.source) == q.doc
                    cause = "wrong_sentence_same_doc" if same else "wrong_sentence"
                else:
                    cause = "gated"
                causes[cause] += 1
                detail = ""
                if found is not None:
                    detail = (f"cov={found.coverage:.2f} grd={found.grounding:.2f} "
                              f"typed={found.typed} dia={found.dialect} "
                              f"plain_missing={found.plain_missing} lead={found.lead:.1f} "
                              f"q={found.qtype.value}")
                rank = recalled_docs.index(q.doc) if q.doc in recalled_docs else -1
                lines.append(f"{cause}\t{q.region}/{q.script}\t{q.text}\n"
                             f"\tgold: {gold}  doc={q.doc} top1={top1} rank={rank}\n"
                             f"\tchosen: {chosen[:140]}\n\t{detail}\n"
                             f"\treply: {t.reply[:120]}")
    return causes, lines, {"questions": len(questions)}


async def main_async(sets: list[str], data: Path, show: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    total: Counter[str] = Counter()
    for name in sets:
        causes, lines, meta = await diagnose(data / name)
        out[name] = {**meta, **dict(causes)}
        total.update(causes)
        if show:
            print(f"== {name}", file=sys.stderr)
            print("\n".join(lines), file=sys.stderr)
    keys = ["answered", "routing", "gold_not_sentence", "retrieval", "wrong_sentence",
            "wrong_sentence_same_doc", "gated", "other"]
    print(f"{'set':<8}" + "".join(f"{k[:14]:>16}" for k in keys))
    for name in sets:
        print(f"{name:<8}" + "".join(f"{out[name].get(k, 0):>16}" for k in keys))
    print(f"{'all':<8}" + "".join(f"{total.get(k, 0):>16}" for k in keys))
    out["all"] = dict(total)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", choices=SETS)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(main_async(args.set or list(SETS), args.data, args.show))
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
