"""ARCD through the whole service over gRPC, with no model configured.

``.venv/bin/python bench/offline_qa_grpc.py [--data ../shared/data] [--limit N]``

Starts the service in-process on 127.0.0.1:0 (SQLite, offline responder),
ingests qa_arcd.corpus.jsonl through the knowledge-base path for tenant
``arcd-all`` and every other article for tenant ``arcd-half``, then asks
every question with SendMessage:

* answerable (arcd-all): ``right_sentence`` = a gold answer span is in the
  reply; ``quoted`` = the reply quotes a passage (memory_cited.quoted);
  ``quoted_right_article`` = share of quotes from the question's article.
* unanswerable (arcd-half, questions about the missing articles):
  ``abstained`` = no passage quoted (it said it does not know, or asked).

Prints a table, writes bench/results/offline_qa_grpc.json; last line is JSON.
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
from datetime import UTC, datetime  # noqa: E402

from majlis.culture import FixedClock  # noqa: E402
from memory import kb  # noqa: E402
from service import DiwaniyaClient, Settings, build_app  # noqa: E402
from service.auth import hash_key  # noqa: E402


def _article(passage_id: str) -> str:
    return passage_id.rsplit("-", 1)[0]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


async def run(data: Path, limit: int | None) -> dict[str, float]:
    corpus = [json.loads(x) for x in (data / "qa_arcd.corpus.jsonl").open(encoding="utf-8")]
    queries = [json.loads(x) for x in (data / "qa_arcd.queries.jsonl").open(encoding="utf-8")]
    kept = set(sorted({_article(p["_id"]) for p in corpus})[::2])
    with tempfile.TemporaryDirectory() as tmp:
        half = Path(tmp) / "half.jsonl"
        half.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in corpus
                                if _article(p["_id"]) in kept), encoding="utf-8")
        settings = Settings(data_dir=Path(tmp) / "data", listen="127.0.0.1:0",
                            api_keys={hash_key("all"): "arcd-all", hash_key("half"): "arcd-half"})
        app = await build_app(settings, clock=FixedClock(datetime(2026, 11, 2, 6, tzinfo=UTC)))
        server = app.server()
        await server.start()
        try:
            await kb.ingest_files(app.store, "arcd-all", [data / "qa_arcd.corpus.jsonl"])
            await kb.ingest_files(app.store, "arcd-half", [half])
            target = f"127.0.0.1:{server.port}"
            asked = queries[:limit] if limit else queries
            right = quoted = quoted_right = 0
            started = time.perf_counter()
            async with DiwaniyaClient(target, api_key="all") as client:
                for q in asked:
                    events = [e async for e in client.send(q["text"], user_id="bench")]
                    reply = _norm(events[-1].turn_completed.text)
                    cites = [e.memory_cited.memory_id for e in events
                             if e.HasField("memory_cited") and e.memory_cited.quoted]
                    right += any(_norm(a["text"]) in reply for a in q["answers"] if a["text"])
                    quoted += bool(cites)
                    article = _article(q["relevant_passage_ids"][0])
                    quoted_right += any(article in c for c in cites)
            per_turn_ms = (time.perf_counter() - started) / len(asked) * 1000
            missing = [q for q in queries if _article(q["relevant_passage_ids"][0]) not in kept]
            missing = missing[:limit] if limit else missing
            abstained = 0
            async with DiwaniyaClient(target, api_key="half") as client:
                for q in missing:
                    events = [e async for e in client.send(q["text"], user_id="bench")]
                    abstained += not any(e.HasField("memory_cited") and e.memory_cited.quoted
                                         for e in events)
        finally:
            await server.drain(0, delay=0)
            await app.close()
    return {
        "questions": len(asked),
        "right_sentence": round(right / len(asked), 4),
        "quoted": round(quoted / len(asked), 4),
        "quoted_right_article": round(quoted_right / max(quoted, 1), 4),
        "unanswerable_questions": len(missing),
        "abstained": round(abstained / max(len(missing), 1), 4),
        "ms_per_turn_grpc": round(per_turn_ms, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=_HERE.parent.parent / "shared" / "data")
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    result = asyncio.run(run(args.data, args.limit))
    print(f"{'metric':<26}{'value':>10}")
    for key, value in result.items():
        print(f"{key:<26}{value:>10}")
    out = _HERE / "results" / "offline_qa_grpc.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
