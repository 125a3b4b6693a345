"""Knowledge-base recall on the support sets, store only: recall@1/@5 with and without the bridge.

``.venv/bin/python bench/support_recall.py [--set test7 ...] [--store sqlite|postgres]
[--show]``

The retrieval half of bench/support.py without the service: each set's
documents go through ``kb.ingest_files`` into a fresh store (SQLite file, or a
PostgreSQL database this script creates and drops), and each question is one
``kb.search``.  A question is right at k when its document is among the
documents of the first k hits.  Seconds per set instead of minutes, so a
lexicon or ranking change can be measured on all nine sets at once.
``--show`` lists, per set, every question whose document is not first (with
the bridge), its rank and the bridge's words for it.

Prints a table, writes ``bench/results/support_recall.json``; the last line
is one JSON object.  Development tool: it reads the sets' answers.
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
import uuid  # noqa: E402
from typing import Any  # noqa: E402

import asyncpg  # noqa: E402

import nlp  # noqa: E402
from bench._support_sets import DATA, SETS, TENANT, load, save_result  # noqa: E402
from memory import kb, open_store  # noqa: E402


async def _recall(folder: Path, tmp: Path, *, bridge: bool, dsn: str | None,
                  show: list[str] | None) -> dict[str, float]:
    support_set = load(folder)
    docs, questions = support_set.docs, support_set.questions
    database = None
    url = None
    if dsn is not None:
        database = f"support_recall_{uuid.uuid4().hex[:10]}"
        admin = await asyncpg.connect(dsn)
        await admin.execute(f'CREATE DATABASE "{database}"')
        await admin.close()
        url = dsn.rsplit("/", 1)[0] + "/" + database
    store = await open_store(url, sqlite_path=tmp / f"{folder.name}-{bridge}.sqlite3",
                             keys=nlp.key_function("builtin"), bridge=bridge)
    try:
        await kb.ingest_files(store, TENANT, docs)
        at1 = at5 = 0
        for q in questions:
            hits = await kb.search(store, TENANT, q.text, k=5)
            ranked = list(dict.fromkeys(h.record.doc_id for h in hits))
            at1 += ranked[:1] == [q.doc]
            at5 += q.doc in ranked
            if show is not None and ranked[:1] != [q.doc]:
                rank = ranked.index(q.doc) if q.doc in ranked else -1
                show.append(f"{folder.name}\t{q.region}/{q.script}\t{q.doc}\trank={rank}"
                            f"\ttop={ranked[:2]}\n\t{q.text}\n\tbridge: "
                            f"{nlp.dialect_to_msa(q.text)}")
        n = len(questions)
        return {"recall@1": round(at1 / n, 4), "recall@5": round(at5 / n, 4)}
    finally:
        await store.close()
        if database is not None and dsn is not None:
            admin = await asyncpg.connect(dsn)
            await admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            await admin.close()


async def main_async(sets: list[str], data: Path, dsn: str | None,
                     show: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as tmp_name:
        for name in sets:
            on = await _recall(data / name, Path(tmp_name), bridge=True, dsn=dsn,
                               show=lines if show else None)
            off = await _recall(data / name, Path(tmp_name), bridge=False, dsn=dsn, show=None)
            out[name] = {"bridge": on, "no_bridge": off}
    if show:
        print("\n".join(lines), file=sys.stderr)
    print(f"{'set':<8}{'r@1 bridge':>12}{'r@5 bridge':>12}{'r@1 none':>12}{'r@5 none':>12}")
    for name in sets:
        on, off = out[name]["bridge"], out[name]["no_bridge"]
        print(f"{name:<8}{on['recall@1']:>12}{on['recall@5']:>12}"
              f"{off['recall@1']:>12}{off['recall@5']:>12}")
    mean = {f"{side}_{m}": round(sum(out[s][side][m] for s in sets) / len(sets), 4)
            for side in ("bridge", "no_bridge") for m in ("recall@1", "recall@5")}
    print(f"{'mean':<8}{mean['bridge_recall@1']:>12}{mean['bridge_recall@5']:>12}"
          f"{mean['no_bridge_recall@1']:>12}{mean['no_bridge_recall@5']:>12}")
    out["mean"] = mean
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", action="append", choices=SETS)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/postgres",
                        help="admin DSN for --store postgres")
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    dsn = args.dsn if args.store == "postgres" else None
    result = asyncio.run(main_async(args.set or list(SETS), args.data, dsn, args.show))
    save_result("support_recall", args.store, result)
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
