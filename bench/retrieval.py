"""Retrieval quality of the memory store on a BEIR-style QA set, with anchors.

    python bench/retrieval.py [--corpus C.jsonl] [--queries Q.jsonl]
                              [--store sqlite|postgres|both] [--dsn ADMIN_DSN]

Corpus lines are ``{_id, title, text}``; query lines ``{_id, text,
relevant_passage_ids}``.  The corpus goes through the knowledge-base ingest
path (``memory.kb.ingest_files``), queries through ``memory.kb.search``.  In
the same run two anchors are measured on the same data:

* ``pg_arabic_ts_rank``: PostgreSQL's built-in ``arabic`` config over raw
  title+text, OR query of the raw words, ranked by ``ts_rank``;
* ``fts5_unicode61``: SQLite FTS5 ``unicode61`` over raw title+text, OR query
  of the raw words, ranked by ``bm25()``.

``--distractors N`` adds N unrelated Arabic texts (dialect tweets from
../shared/data, cycled) to our stores' knowledge base after the corpus: the
answer must still be found in a bigger haystack, which also checks that the
PostgreSQL store's candidate pruning holds up as the table grows.

``--misspell SEED`` replaces each question by a misspelled copy (see
``misspell``: seeded, realistic Arabic typing errors), to measure typo
tolerance; the corpus is untouched.  ``--no-typo`` switches the stores'
typo stage (memory.typo) off, for the figures without it.  ``--other-tenant N``
puts N distractors in a second tenant of the same store: the questions'
tenant is unchanged, so its rankings must be those of the run without it
(both stores keep ranking statistics per tenant); each system's
``rankings_sha256`` (a digest of every query's ranked ids) shows whether they are.

Prints a table, writes ``bench/results/<out>.json``, and prints one JSON
object as the last line.  PostgreSQL work happens in a database this script
creates and drops.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Running ``python bench/retrieval.py`` puts bench/ first on sys.path, where
# bench/nlp.py would shadow the nlp package; the script's folder holds no
# imports of ours, so drop it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench._pg

import argparse  # noqa: E402
import asyncio  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import sqlite3  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Awaitable, Callable, Sequence  # noqa: E402

import asyncpg  # noqa: E402

from bench._pg import fresh_database_async  # noqa: E402
from memory import (  # noqa: E402
    Kind,
    MemoryStore,
    NewRecord,
    PostgresMemoryStore,
    SqliteMemoryStore,
    kb,
)
from nlp import dialect_to_msa, key_function  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data"
TENANT = "bench"
OTHER_TENANT = "bench-other"  # --other-tenant
WORD = re.compile(r"\w+")
Ranker = Callable[[str], Awaitable[list[str]]]


# Realistic Arabic typing errors, after the list: a hamza left out,
# ة typed as ه, ى as ي, and neighbouring or look-alike letters confused.
_LETTER_SWAPS = {
    "أ": "ا", "إ": "ا", "آ": "ا", "ؤ": "و", "ئ": "ي", "ة": "ه", "ى": "ي",
    "ض": "ظ", "ظ": "ض", "ذ": "ز", "ث": "س", "ص": "س", "ط": "ت", "ق": "ك", "د": "ذ",
}
_ARABIC_WORD = re.compile(r"[\u0621-\u064A]{4,}")


def misspell(text: str, rng: random.Random, rate: float = 0.35) -> str:
    """One seeded error in about ``rate`` of the Arabic words of 4+ letters.

    Each chosen word gets one of, uniformly: a look-alike or hamza/ta-marbuta/
    alef-maqsura letter replaced (``_LETTER_SWAPS``, when the word has one;
    otherwise a transposition), two adjacent inner letters transposed, one
    inner letter dropped, one inner letter doubled.  The first letter is never
    touched (people rarely mistype it).  Same seed, same copy.

    >>> misspell("متى ولد جمال خاشقجي", random.Random(1), rate=1.0)  # doctest: +SKIP
    'متى ولد جمل خاشجقي'
    """

    def one(m: re.Match[str]) -> str:
        word = m.group()
        if rng.random() >= rate:
            return word
        kind = rng.randrange(4)
        inner = range(1, len(word))
        if kind == 0:
            spots = [i for i in inner if word[i] in _LETTER_SWAPS]
            if spots:
                i = rng.choice(spots)
                return word[:i] + _LETTER_SWAPS[word[i]] + word[i + 1:]
            kind = 1
        if kind == 1:
            i = rng.randrange(1, len(word) - 1)
            return word[:i] + word[i + 1] + word[i] + word[i + 2:]
        i = rng.randrange(1, len(word))
        if kind == 2:
            return word[:i] + word[i + 1:]
        return word[:i] + word[i] + word[i:]

    return _ARABIC_WORD.sub(one, text)


def load_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def score(rankings: Sequence[list[str]], queries: Sequence[dict]) -> dict[str, float]:
    """recall@1/5/10 and MRR@10 (a query counts when ANY relevant id is ranked)."""
    totals = {"recall@1": 0.0, "recall@5": 0.0, "recall@10": 0.0, "mrr@10": 0.0}
    for ranked, query in zip(rankings, queries, strict=True):
        relevant = set(query["relevant_passage_ids"])
        rank = next((i for i, d in enumerate(ranked[:10], 1) if d in relevant), None)
        if rank is None:
            continue
        totals["mrr@10"] += 1 / rank
        for cut in (1, 5, 10):
            totals[f"recall@{cut}"] += rank <= cut
    return {name: round(value / len(queries), 4) for name, value in totals.items()}


async def run(name: str, ranker: Ranker, queries: Sequence[dict]) -> dict[str, float | str]:
    started = time.perf_counter()
    rankings = [await ranker(q["text"]) for q in queries]
    elapsed = time.perf_counter() - started
    # A digest of every query's ranked ids: two runs (e.g. with and without
    # --other-tenant) ranked identically exactly when their digests are equal.
    digest = hashlib.sha256(json.dumps(rankings).encode()).hexdigest()[:16]
    return {**score(rankings, queries), "ms_per_query": round(1000 * elapsed / len(queries), 2),
            "rankings_sha256": digest}


async def add_distractors(store: MemoryStore, count: int, tenant: str = TENANT) -> None:
    texts: list[str] = []
    for path in sorted(DATA.glob("dialect_*.tsv")):
        lines = path.read_text(encoding="utf-8").splitlines()[1:]
        texts.extend(line.split("\t")[1] for line in lines if line.count("\t") >= 1)
    batch: list[NewRecord] = []
    for i in range(count):
        batch.append(NewRecord(tenant=tenant, kind=Kind.DOCUMENT, id=f"noise{i}",
                               doc_id=f"noise{i}", text=texts[i % len(texts)]))
        if len(batch) == 2_000 or i == count - 1:
            await store.put(batch)
            batch = []


async def load_store(store: MemoryStore, args: argparse.Namespace) -> float:
    """Set up ``store`` and load the corpus and both sets of distractors into it,
    the same for every store; the load's seconds (setup not counted)."""
    await store.setup()
    t0 = time.perf_counter()
    await kb.ingest_files(store, TENANT, [args.corpus])
    await add_distractors(store, args.distractors)
    await add_distractors(store, args.other_tenant, OTHER_TENANT)
    return round(time.perf_counter() - t0, 2)


def store_ranker(store: MemoryStore) -> Ranker:
    async def rank(text: str) -> list[str]:
        hits = await kb.search(store, TENANT, text, k=10)
        seen: dict[str, None] = {}
        for hit in hits:  # chunks → their document, first (best) occurrence
            seen.setdefault(hit.record.doc_id or hit.record.id, None)
        return list(seen)

    return rank


def fts5_anchor(corpus: Sequence[dict]) -> Ranker:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE c USING fts5(id UNINDEXED, body, tokenize='unicode61')")
    db.executemany("INSERT INTO c VALUES (?, ?)",
                   [(d["_id"], f"{d.get('title', '')} {d['text']}") for d in corpus])

    async def rank(text: str) -> list[str]:
        words = list(dict.fromkeys(WORD.findall(text)))
        if not words:
            return []
        match = " OR ".join(f'"{w}"' for w in words)
        rows = db.execute("SELECT id FROM c WHERE c MATCH ? ORDER BY bm25(c) LIMIT 10", (match,))
        return [r[0] for r in rows]

    return rank


async def pg_arabic_anchor(conn: asyncpg.Connection, corpus: Sequence[dict]) -> Ranker:
    await conn.execute(
        "CREATE TABLE anchor (id text PRIMARY KEY, tsv tsvector);"
        "CREATE INDEX ON anchor USING gin (tsv)"
    )
    await conn.executemany(
        "INSERT INTO anchor VALUES ($1, to_tsvector('arabic', $2))",
        [(d["_id"], f"{d.get('title', '')} {d['text']}") for d in corpus],
    )
    # OR of quoted raw words (quotes doubled), stemmed by the arabic config.
    sql = """
        WITH q AS (SELECT to_tsquery('arabic', array_to_string(
            array(SELECT '''' || replace(w, '''', '''''') || '''' FROM unnest($1::text[]) w),
            ' | ')) AS q)
        SELECT id FROM anchor, q WHERE tsv @@ q.q ORDER BY ts_rank(tsv, q.q) DESC, id LIMIT 10
    """

    async def rank(text: str) -> list[str]:
        words = list(dict.fromkeys(WORD.findall(text)))
        return [r[0] for r in await conn.fetch(sql, words)] if words else []

    return rank


async def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DATA / "qa_arcd.corpus.jsonl")
    parser.add_argument("--queries", type=Path, default=DATA / "qa_arcd.queries.jsonl")
    parser.add_argument("--store", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--dsn", default="postgresql://postgres@127.0.0.1:5432/postgres",
                        help="admin DSN; a scratch database is created and dropped")
    parser.add_argument("--distractors", type=int, default=0,
                        help="unrelated texts added to our stores after the corpus")
    parser.add_argument("--misspell", type=int, default=None, metavar="SEED",
                        help="replace questions by seeded misspelled copies (see misspell)")
    parser.add_argument("--other-tenant", type=int, default=0, metavar="N",
                        help="N distractors in ANOTHER tenant of the same store: rankings must"
                             " not change (compare rankings_sha256 with a run without it)")
    parser.add_argument("--no-typo", action="store_true",
                        help="switch the stores' typo stage off (memory.typo)")
    parser.add_argument("--out", default=None, help="results name (default retrieval_<corpus>)")
    args = parser.parse_args(argv)

    corpus, queries = load_jsonl(args.corpus), load_jsonl(args.queries)
    if args.misspell is not None:
        rng = random.Random(args.misspell)
        queries = [{**q, "text": misspell(q["text"], rng)} for q in queries]
    keys = key_function("builtin")
    # As in the service: queries expanded by the dialect → MSA bridge (MSA
    # questions are left alone by it, and must not lose recall).
    bridge = dialect_to_msa
    results: dict[str, dict[str, float | str]] = {}
    timings: dict[str, float] = {}

    results["fts5_unicode61"] = await run("fts5", fts5_anchor(corpus), queries)
    if args.store in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            store = SqliteMemoryStore(Path(tmp) / "m.sqlite3", keys=keys, expand=bridge,
                                      typo=not args.no_typo)
            timings["sqlite_ingest_s"] = await load_store(store, args)
            results["memory_sqlite"] = await run("sqlite", store_ranker(store), queries)
            await store.close()

    async with fresh_database_async(args.dsn) as db:
        dsn = db.dsn
        conn = await asyncpg.connect(dsn)
        results["pg_arabic_ts_rank"] = await run(
            "arabic", await pg_arabic_anchor(conn, corpus), queries)
        await conn.close()
        if args.store in ("postgres", "both"):
            pg = await PostgresMemoryStore.connect(dsn, keys=keys, max_size=2, expand=bridge,
                                                   typo=not args.no_typo)
            timings["postgres_ingest_s"] = await load_store(pg, args)
            results["memory_postgres"] = await run("postgres", store_ranker(pg), queries)
            await pg.close()

    cols = ["recall@1", "recall@5", "recall@10", "mrr@10", "ms_per_query", "rankings_sha256"]
    print(f"{args.corpus.name}: {len(corpus)} passages (+{args.distractors} distractors"
          f" in our stores), {len(queries)} queries")
    print(f"{'system':<20}" + "".join(f"{c:>14}" for c in cols[:-1]) + f"{cols[-1]:>18}")
    for system, row in results.items():
        print(f"{system:<20}" + "".join(f"{row[c]!s:>14}" for c in cols[:-1])
              + f"{row[cols[-1]]!s:>18}")
    summary = {"corpus": args.corpus.name, "passages": len(corpus), "queries": len(queries),
               "distractors": args.distractors,
               "other_tenant_rows": args.other_tenant, "misspell_seed": args.misspell,
               "typo_stage": not args.no_typo,
               "results": results, **timings}
    result_name = args.out or "retrieval_" + args.corpus.name.split(".")[0] + (
        f"_distractors{args.distractors}" if args.distractors else "") + (
        f"_othertenant{args.other_tenant}" if args.other_tenant else "") + (
        f"_misspelled{args.misspell}" if args.misspell is not None else "") + (
        "_notypo" if args.no_typo else "")
    out = ROOT / "bench" / "results" / f"{result_name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary, ensure_ascii=False))
    return summary


if __name__ == "__main__":
    asyncio.run(main())
