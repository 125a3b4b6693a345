"""The offline responder's answers-vs-abstention curve over its dialect grounding bars.

``.venv/bin/python bench/answer_curve.py [--data ../shared/data] [--arcd-limit N]``

The dialect bars (``dialect_grounding_threshold`` 0.6, ``…_plain_…`` 0.7 and
``…_typed_…`` 0.5 in :class:`~majlis.models.offline.OfflineResponder`) are shifted
together by each offset in ``OFFSETS`` and measured on:

* the six support sets (bench/data/support/{dev,test,test2,test3,test4,test5}, all
  development data): ``answers`` = gold fact in the reply, ``abstention`` = the unanswerable
  questions quote no document.  The top 5 chunks are recalled as the service does
  (SQLite store, bridge on), once per question, then only the reply is recomposed.
* ARCD (../shared/data, read-only): ``arcd_span`` = gold span in the reply with the
  whole corpus; ``arcd_abstention`` = questions about the held-out half of the
  articles quote nothing.  ARCD questions are MSA, so the dialect bars move it only
  where the bridge reads a question as dialect.

A second curve moves ``lead_threshold`` (how far the source document must lead the
recall for a strongly typed sentence to answer a paraphrased question, 3 shipped;
99 turns that path off).  Offset 0 is the shipped setting.  No gRPC here
(bench/support.py and bench/offline_qa_grpc.py measure the whole service); prints
a table, writes bench/results/answer_curve.json, the last line is one JSON object.
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
from typing import Any  # noqa: E402

import nlp  # noqa: E402
from bench._support_sets import DATA, TENANT, load, norm, recall_chunks  # noqa: E402
from majlis.models import Citation, OfflineResponder, Recalled, ResponderContext  # noqa: E402
from memory import Kind, MemoryStore, NewRecord, kb, open_store  # noqa: E402

SETS = ("dev", "test", "test2", "test3", "test4", "test5")
OFFSETS = (-0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3)
LEADS = (2.0, 3.0, 5.0, 10.0, 99.0)  # 99: off (Answer.lead is capped at 10)
BARS = {"dialect_grounding_threshold": 0.6, "dialect_plain_grounding_threshold": 0.7,
        "dialect_typed_grounding_threshold": 0.5}

# (question, gold fact or None for unanswerable, recalled chunks)
Case = tuple[str, str | None, tuple[Recalled, ...]]


async def _recall(store: MemoryStore, tenant: str, text: str) -> tuple[Recalled, ...]:
    return tuple(await recall_chunks(store, text, tenant=tenant))


async def support_cases(folder: Path, tmp: Path) -> list[Case]:
    support_set = load(folder)
    store = await open_store(None, sqlite_path=tmp / f"{folder.name}.sqlite3",
                             keys=nlp.key_function("builtin"), bridge=True)
    try:
        await kb.ingest_files(store, TENANT, support_set.docs)
        cases: list[Case] = []
        for q in support_set.questions:
            cases.append((q.text, q.gold, await _recall(store, TENANT, q.text)))
        for u in support_set.unanswerable:
            cases.append((u.text, None, await _recall(store, TENANT, u.text)))
        return cases
    finally:
        await store.close()


async def arcd_cases(data: Path, tmp: Path, limit: int | None) -> tuple[list[Case], list[Case]]:
    corpus = [json.loads(x) for x in (data / "qa_arcd.corpus.jsonl").open(encoding="utf-8")]
    queries = [json.loads(x) for x in (data / "qa_arcd.queries.jsonl").open(encoding="utf-8")]
    queries = queries[:limit] if limit else queries

    def article(pid: str) -> str:
        return pid.rsplit("-", 1)[0]

    kept = set(sorted({article(p["_id"]) for p in corpus})[::2])
    store = await open_store(None, sqlite_path=tmp / "arcd.sqlite3",
                             keys=nlp.key_function("builtin"), bridge=True)
    try:
        for tenant, passages in (("all", corpus),
                                 ("half", [p for p in corpus if article(p["_id"]) in kept])):
            await store.put([NewRecord(tenant=tenant, kind=Kind.DOCUMENT, text=p["text"],
                                       id=p["_id"], title=p.get("title", ""),
                                       doc_id=article(p["_id"])) for p in passages])
        answerable = [(q["text"], "\x00".join(a["text"] for a in q["answers"] if a["text"]),
                       await _recall(store, "all", q["text"])) for q in queries]
        held_out = [(q["text"], None, await _recall(store, "half", q["text"])) for q in queries
                    if article(q["relevant_passage_ids"][0]) not in kept]
        return answerable, held_out
    finally:
        await store.close()


def score(responder: OfflineResponder, cases: list[Case]) -> tuple[float, float, float]:
    """(answer rate, abstention, mean characters of quoting replies) over ``cases``."""
    right = answerable = abstained = unanswerable = 0
    lengths: list[int] = []
    for text, gold, recalled in cases:
        extras: list[Any] = []
        ctx = ResponderContext(user_text=text, region="msa", is_request=True, recalled=recalled)
        reply = norm(responder._answer(ctx, extras))  # the knowledge-base part of compose
        quoted = any(isinstance(e, Citation) for e in extras)
        if quoted:
            lengths.append(len(reply))
        if gold is None:
            unanswerable += 1
            abstained += not quoted
        else:
            answerable += 1
            right += any(norm(g) in reply for g in gold.split("\x00") if g)
    return (right / max(answerable, 1), abstained / max(unanswerable, 1),
            sum(lengths) / max(len(lengths), 1))


async def run(data: Path, arcd_limit: int | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        support = [c for s in SETS for c in await support_cases(DATA / s, tmp)]
        arcd_all, arcd_half = await arcd_cases(data, tmp, arcd_limit)

    # A point of either curve: the support sets and ARCD through one responder's bars.
    def measured(at: OfflineResponder) -> dict[str, float]:
        answers, abstention, chars = score(at, support)
        span, _, _ = score(at, arcd_all)
        _, arcd_abstention, _ = score(at, arcd_half)
        return {"answers": round(answers, 4), "abstention": round(abstention, 4),
                "answer_chars": round(chars, 1), "arcd_span": round(span, 4),
                "arcd_abstention": round(arcd_abstention, 4)}

    def responder(**bars: Any) -> OfflineResponder:
        return OfflineResponder(keys=nlp.search_keys, expand=nlp.dialect_to_msa,
                                dialect_cue=nlp.has_dialect_words, **bars)

    curve = [{"offset": offset, **measured(responder(**{k: v + offset for k, v in BARS.items()}))}
             for offset in OFFSETS]
    leads = [{"lead_threshold": lead, **measured(responder(lead_threshold=lead))}
             for lead in LEADS]
    return {"support_questions": sum(g is not None for _, g, _ in support),
            "support_unanswerable": sum(g is None for _, g, _ in support),
            "arcd_answerable": len(arcd_all), "arcd_held_out": len(arcd_half),
            "bars": BARS, "curve": curve, "lead_curve": leads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=_HERE.parent.parent / "shared" / "data")
    parser.add_argument("--arcd-limit", type=int, default=None)
    args = parser.parse_args()
    result = asyncio.run(run(args.data, args.arcd_limit))
    print(f"{'offset':>7}{'answers':>9}{'abstain':>9}{'chars':>7}{'arcd_span':>11}"
          f"{'arcd_abst':>11}")
    for row in result["curve"]:
        print(f"{row['offset']:>7}{row['answers']:>9}{row['abstention']:>9}"
              f"{row['answer_chars']:>7}{row['arcd_span']:>11}{row['arcd_abstention']:>11}")
    print(f"{'lead':>7}{'answers':>9}{'abstain':>9}{'chars':>7}{'arcd_span':>11}"
          f"{'arcd_abst':>11}")
    for row in result["lead_curve"]:
        print(f"{row['lead_threshold']:>7}{row['answers']:>9}{row['abstention']:>9}"
              f"{row['answer_chars']:>7}{row['arcd_span']:>11}{row['arcd_abstention']:>11}")
    out = _HERE / "results" / "answer_curve.json"
    out.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
