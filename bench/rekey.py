"""How long an upgrade's re-key takes (memory.rekey): rows/s on both stores.

    nice -n 10 python bench/rekey.py [--rows 20000] [--dsn ADMIN_DSN] [--store sqlite,postgres]

The store is filled through ``store.put`` with ARCD passages (with titles)
and dialect tweets from ../shared/data, cycled up to ``--rows``, keyed as a
release before counts became digits keyed them (the built-in keys with the
counts pass off, fingerprint builtin/1).  Then ``rekey()`` with today's keys
is timed: every row is read and keyed, the rows whose keys changed are
rewritten with their statistics.  A second, forced run (``force=True``, no
row changes) times reading and keying alone.  Keying is part of the time: it
is the bulk of it.  The 1-minute load average is recorded beside each figure
(the machine is shared).

Prints a table, writes bench/results/rekey.json, and prints one JSON object as
the last line.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ is first on sys.path when run as a script; bench/nlp.py would shadow
# the nlp package.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench._pg

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402
from typing import Any  # noqa: E402
from unittest import mock  # noqa: E402

import nlp.keys  # noqa: E402
from bench._pg import fresh_database_async  # noqa: E402
from memory import Kind, NewRecord, PostgresMemoryStore, SqliteMemoryStore  # noqa: E402
from memory.rekey import RekeyReport  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "bench" / "results" / "rekey.json"
ADMIN = os.environ.get("DIWANIYA_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres")


def pre_count_keys(text: str) -> list[str]:
    """The built-in keys before counts became digits (nlp.KEYS_VERSION 1)."""
    with mock.patch.object(nlp.keys, "_counts_as_digits", lambda toks, arabizi: toks):
        return nlp.keys.stem_and_surface_keys(text)


def corpus(rows: int) -> list[NewRecord]:
    texts: list[tuple[str, str]] = []
    for line in (DATA / "qa_arcd.corpus.jsonl").read_text(encoding="utf-8").splitlines():
        if line:
            d = json.loads(line)
            texts.append((d["title"], d["text"]))
    for path in sorted(DATA.glob("dialect_*.tsv")):
        lines = path.read_text(encoding="utf-8").splitlines()[1:]
        texts.extend(("", line.split("\t")[1]) for line in lines if line.count("\t") >= 1)
    return [NewRecord(tenant=f"t{i % 4}", kind=Kind.DOCUMENT, id=f"r{i}#0", doc_id=f"r{i}",
                      title=texts[i % len(texts)][0], text=texts[i % len(texts)][1])
            for i in range(rows)]


async def measure(old: Any, new: Any, records: list[NewRecord]) -> dict[str, Any]:
    await old.setup()
    for start in range(0, len(records), 2_000):
        await old.put(records[start:start + 2_000])
    await old.close()
    await new.setup()
    out: dict[str, Any] = {}
    for name, force in (("upgrade", False), ("forced_no_change", True)):
        load = os.getloadavg()[0]
        report: RekeyReport = await new.rekey(force=force)
        out[name] = {"rows": report.rows, "changed": report.changed,
                     "seconds": round(report.seconds, 2),
                     "rows_per_s": round(report.rows / report.seconds),
                     "load_1min": round(load, 1)}
    await new.close()
    return out


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=20_000)
    p.add_argument("--dsn", default=ADMIN)
    p.add_argument("--store", default="sqlite,postgres")
    args = p.parse_args()
    records = corpus(args.rows)
    results: dict[str, Any] = {"rows": args.rows}
    stores = args.store.split(",")
    if "sqlite" in stores:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "memory.sqlite3"
            results["sqlite"] = await measure(
                SqliteMemoryStore(path, keys=pre_count_keys, fingerprint="builtin/1"),
                SqliteMemoryStore(path, keys=nlp.keys.stem_and_surface_keys), records)
    if "postgres" in stores:
        async with fresh_database_async(args.dsn) as db:
            results["postgres"] = await measure(
                await PostgresMemoryStore.connect(db.dsn, keys=pre_count_keys,
                                                  fingerprint="builtin/1"),
                await PostgresMemoryStore.connect(db.dsn, keys=nlp.keys.stem_and_surface_keys),
                records)
    print(f"{'store':<9} {'run':<17} {'rows':>7} {'changed':>8} {'s':>7} {'rows/s':>7} {'load':>5}")
    for store in stores:
        for run, r in results[store].items():
            print(f"{store:<9} {run:<17} {r['rows']:>7} {r['changed']:>8} {r['seconds']:>7} "
                  f"{r['rows_per_s']:>7} {r['load_1min']:>5}")
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results))


if __name__ == "__main__":
    asyncio.run(main())
