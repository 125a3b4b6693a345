"""What keeping only the latest N checkpoints costs a turn's commit, and what it saves.

``.venv/bin/python bench/retention_commit.py [--turns 80] [--kept 10]``

Two engines on one database, one with ``DIWANIYA_CHECKPOINTS_KEPT=0`` (keep
all) and one with ``--kept``, run turns on a thread each, *interleaved* (turn
i on one, then turn i on the other, the order alternating), so machine
noise hits both alike. Each
fenced commit (``ThreadStore.commit_turn``, where the pruning runs) is timed:
wall milliseconds and this process's CPU milliseconds (``time.process_time``;
PostgreSQL's own work shows in wall time only). Reported: the median over
the turns after the first ``--kept`` (when pruning deletes one checkpoint per
commit), and the thread's stored checkpoint rows and bytes at the end.
Both stores: SQLite in a temporary folder, PostgreSQL in a database created
for the run on ``DIWANIYA_BENCH_PG`` (default the local 127.0.0.1:5432).

Prints a table, writes bench/results/retention_commit.json; the last line is one JSON object.
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
import os  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import psycopg  # noqa: E402

from bench._pg import fresh_database_async  # noqa: E402
from majlis.requests import TurnRequest  # noqa: E402
from service import Settings, build_app  # noqa: E402

ROOT = _HERE.parent
RESULTS = ROOT / "bench" / "results" / "retention_commit.json"
ADMIN = os.environ.get("DIWANIYA_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
TEXTS = ("السلام عليكم", "عندي مشكلة في الطلب", "الطلب ما وصل للحين", "متى يوصل؟",
         "طيب شكراً", "ودي أغير العنوان")


class Timed:
    """Wraps a thread store's commit_turn, recording (wall ms, cpu ms) per call."""

    def __init__(self, threads: Any) -> None:
        self.samples: list[tuple[float, float]] = []
        inner = threads.commit_turn

        async def commit_turn(*args: Any, **kwargs: Any) -> None:
            wall, cpu = time.perf_counter(), time.process_time()
            await inner(*args, **kwargs)
            self.samples.append(((time.perf_counter() - wall) * 1000,
                                 (time.process_time() - cpu) * 1000))

        threads.commit_turn = commit_turn


def _stored(settings: Settings, thread_id: str) -> tuple[int, int]:
    """(checkpoint rows, bytes of checkpoints + writes + blobs) of one thread."""
    dsn = settings.database_dsn()
    if dsn:
        with psycopg.connect(dsn) as conn:
            rows = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s",
                                (thread_id,)).fetchone()
            size = conn.execute(
                "SELECT (SELECT coalesce(sum(pg_column_size(c.*)), 0) FROM checkpoints c"
                " WHERE thread_id = %(t)s) + (SELECT coalesce(sum(pg_column_size(b.*)), 0)"
                " FROM checkpoint_blobs b WHERE thread_id = %(t)s) + (SELECT"
                " coalesce(sum(pg_column_size(w.*)), 0) FROM checkpoint_writes w"
                " WHERE thread_id = %(t)s)", {"t": thread_id}).fetchone()
        return int(rows[0] if rows else 0), int(size[0] if size else 0)
    with sqlite3.connect(Path(settings.data_dir) / "threads.sqlite3") as conn:
        (rows,) = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = ?",
                               (thread_id,)).fetchone()
        (size,) = conn.execute(
            "SELECT (SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0)"
            " FROM checkpoints WHERE thread_id = ?1) + (SELECT coalesce(sum(length(value)), 0)"
            " FROM writes WHERE thread_id = ?1)", (thread_id,)).fetchone()
    return int(rows), int(size)


async def run_store(base: dict[str, Any], turns: int, kept: int) -> dict[str, Any]:
    apps, timers, threads = {}, {}, {}
    for n in (0, kept):
        settings = Settings(**base, checkpoints_kept=n)
        apps[n] = await build_app(settings)
        timers[n] = Timed(apps[n].persistence.threads)
        threads[n] = ""
    try:
        for i in range(turns):
            # Alternating which goes first: neither always follows the other's fsync.
            for n in ((0, kept) if i % 2 == 0 else (kept, 0)):
                request = TurnRequest(tenant="bench", user_id=f"u{n}", thread_id=threads[n],
                                      text=TEXTS[i % len(TEXTS)])
                async for envelope in apps[n].engine.run_turn(request):
                    threads[n] = envelope.thread_id
        out: dict[str, Any] = {}
        for n in (0, kept):
            steady = timers[n].samples[kept:]
            rows, size = _stored(apps[n].settings, threads[n])
            out[f"kept_{n}"] = {
                "commit_wall_ms": round(statistics.median(s[0] for s in steady), 2),
                "commit_cpu_ms": round(statistics.median(s[1] for s in steady), 2),
                "checkpoints": rows, "stored_bytes": size}
        return out
    finally:
        for app in apps.values():
            await app.close()


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--turns", type=int, default=80)
    p.add_argument("--kept", type=int, default=10)
    args = p.parse_args()
    os.environ.setdefault("DIWANIYA_METRICS_LISTEN", "")
    results: dict[str, Any] = {"turns": args.turns, "kept": args.kept}
    with tempfile.TemporaryDirectory() as folder:
        results["sqlite"] = await run_store(
            {"data_dir": Path(folder), "metrics_listen": ""}, args.turns, args.kept)
    async with fresh_database_async(ADMIN) as db:
        with tempfile.TemporaryDirectory() as folder:
            results["postgres"] = await run_store(
                {"data_dir": Path(folder), "metrics_listen": "", "database_url": db.dsn},
                args.turns, args.kept)
    print(f"{'store':<9} {'kept':>5} {'commit wall ms':>15} {'commit cpu ms':>14} "
          f"{'checkpoints':>12} {'stored bytes':>13}")
    for store in ("sqlite", "postgres"):
        for n in (0, args.kept):
            r = results[store][f"kept_{n}"]
            print(f"{store:<9} {n if n else 'all':>5} {r['commit_wall_ms']:>15} "
                  f"{r['commit_cpu_ms']:>14} {r['checkpoints']:>12} {r['stored_bytes']:>13}")
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results))


if __name__ == "__main__":
    asyncio.run(main())
