"""A long thread's cost per turn and stored bytes, with and without compaction (and retention).

``nice -n 10 .venv/bin/python bench/history.py [--turns 500] [--compaction-tokens 1500]
[--keep-turns 4] [--retention 20] [--stores sqlite,postgres]``

One thread of ``--turns`` turns (offline responder, a request_id on every
turn, support questions with an order number) through a real gRPC server on
127.0.0.1:0, on each store, in each mode:

* ``plain`` — neither (the history is rewritten whole in every checkpoint);
* ``compaction`` — ``DIWANIYA_COMPACTION_TOKENS`` / ``_KEEP_TURNS`` (majlis.compaction);
* ``retention`` / ``both`` — ``DIWANIYA_CHECKPOINTS_KEPT`` (keep the latest N
  checkpoints), alone and with compaction, when this build has that setting;
  otherwise those rows are skipped and said to be.

Per turn: the wall time of the whole RPC and the CPU time of this process
(client, server and SQLite; PostgreSQL's own CPU is not in it), reported at
turns 10, 100 and the last as the median of the turns around each (8–12,
98–102, the last five). Stored bytes per thread: the payload of the thread's
rows in the checkpoint tables — SQLite ``length()`` of ``checkpoints``
(checkpoint, metadata) and ``writes`` (value); PostgreSQL ``pg_column_size``
(stored, possibly compressed) of ``checkpoints`` (checkpoint, metadata),
``checkpoint_blobs`` (blob) and ``checkpoint_writes`` (blob) — at the last
turn and at half of it, so ``growth`` = log2(bytes(last) / bytes(half)) is ~1
for linear growth and ~2 for quadratic. Each (store, mode) gets a fresh
database: SQLite in a temporary directory, PostgreSQL a database created on
``DIWANIYA_BENCH_PG`` (default the local 127.0.0.1:5432) and dropped after.

Prints a table, writes bench/results/history.json; the last line is one JSON object.
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
import math  # noqa: E402
import os  # noqa: E402
import sqlite3  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from typing import Any  # noqa: E402

import psycopg  # noqa: E402

from service import DiwaniyaClient, Settings, build_app  # noqa: E402

RESULTS = _HERE / "results" / "history.json"
ADMIN = os.environ.get("DIWANIYA_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")
# B2's retention setting (keep the latest N checkpoints per thread; 0 = all).
RETENTION = "checkpoints_kept"
MESSAGES = ("السلام عليكم", "وين طلبي رقم 48213؟", "متى يوصل الطلب؟", "ابي ارجع المنتج",
            "كم سعر التوصيل؟", "عندكم فرع في حولي؟", "الطلب تأخر وايد", "شكرا لك",
            "ابي اغير العنوان", "هل الدفع عند الاستلام متاح؟")


def _window(samples: list[float], turn: int, half: int = 2) -> float:
    """The median of the samples of turns ``turn - half`` … ``turn + half`` (1-based)."""
    lo = max(0, min(turn - 1 - half, len(samples) - 2 * half - 1))
    return statistics.median(samples[lo:lo + 2 * half + 1])


def _sqlite_bytes(data_dir: Path, thread_id: str) -> int:
    with sqlite3.connect(data_dir / "threads.sqlite3") as conn:
        cp = conn.execute("SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0)"
                          " FROM checkpoints WHERE thread_id = ?", (thread_id,)).fetchone()[0]
        wr = conn.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes"
                          " WHERE thread_id = ?", (thread_id,)).fetchone()[0]
    return int(cp) + int(wr)


def _pg_bytes(dsn: str, thread_id: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT (SELECT COALESCE(SUM(pg_column_size(checkpoint) + pg_column_size(metadata)),"
            " 0) FROM checkpoints WHERE thread_id = %s)"
            " + (SELECT COALESCE(SUM(pg_column_size(blob)), 0) FROM checkpoint_blobs"
            " WHERE thread_id = %s)"
            " + (SELECT COALESCE(SUM(pg_column_size(blob)), 0) FROM checkpoint_writes"
            " WHERE thread_id = %s)", (thread_id, thread_id, thread_id)).fetchone()
    return int(row[0]) if row else 0


async def run(store: str, mode: str, args: argparse.Namespace, data_dir: Path,
              dsn: str | None) -> dict[str, Any]:
    values: dict[str, Any] = {"data_dir": data_dir, "listen": "127.0.0.1:0", "database_url": dsn,
                              "metrics_listen": ""}
    if mode in ("compaction", "both"):
        values.update(compaction_tokens=args.compaction_tokens,
                      compaction_keep_turns=args.keep_turns)
    if mode in ("retention", "both"):
        values[RETENTION] = args.retention
    app = await build_app(Settings(**values))
    server = app.server()
    await server.start()
    wall: list[float] = []
    cpu: list[float] = []
    stored: dict[int, int] = {}
    half = args.turns // 2
    try:
        async with DiwaniyaClient(f"127.0.0.1:{server.port}") as client:
            thread_id = ""
            for i in range(args.turns):
                text = MESSAGES[i % len(MESSAGES)]
                t, c = time.perf_counter(), time.process_time()
                events = [e async for e in client.send(text, user_id="bench", thread_id=thread_id,
                                                       request_id=f"r-{i}")]
                wall.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
                thread_id = events[-1].thread_id
                if i + 1 in (half, args.turns):
                    stored[i + 1] = (_pg_bytes(dsn, thread_id) if dsn
                                     else await asyncio.to_thread(_sqlite_bytes, data_dir,
                                                                  thread_id))
            view = await client.get_thread(thread_id, user_id="bench")
    finally:
        await server.drain(0, delay=0)
        await app.close()
    points = (10, 100, args.turns)
    out: dict[str, Any] = {
        "store": store, "mode": mode, "turns": args.turns,
        "wall_ms": {str(p): round(_window(wall, p) * 1000, 2) for p in points},
        "cpu_ms": {str(p): round(_window(cpu, p) * 1000, 2) for p in points},
        "stored_bytes": {str(k): v for k, v in stored.items()},
        "messages_kept": len(view.messages), "folded_turns": view.folded_turns,
    }
    out["wall_ratio"] = round(out["wall_ms"][str(args.turns)] / out["wall_ms"]["10"], 2)
    out["cpu_ratio"] = round(out["cpu_ms"][str(args.turns)] / out["cpu_ms"]["10"], 2)
    out["growth"] = round(math.log2(stored[args.turns] / stored[half]), 2) if stored[half] else 0
    return out


async def store_runs(store: str, modes: list[str], args: argparse.Namespace,
                     tmp: Path) -> list[dict[str, Any]]:
    rows = []
    for mode in modes:
        if store == "sqlite":
            rows.append(await run(store, mode, args, tmp / f"s-{mode}", None))
            continue
        name = f"diwaniya_bench_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(ADMIN, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        try:
            rows.append(await run(store, mode, args, tmp / f"p-{mode}",
                                  f"{ADMIN.rsplit('/', 1)[0]}/{name}"))
        finally:
            with psycopg.connect(ADMIN, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return rows


def _print(rows: list[dict[str, Any]], turns: int) -> None:
    half = turns // 2
    print(f"{'store':<9}{'mode':<12}{'wall ms @10/100/' + str(turns):>22}{'ratio':>7}"
          f"{'cpu ms @10/100/' + str(turns):>22}{'ratio':>7}"
          f"{'KB @' + str(half):>11}{'KB @' + str(turns):>11}{'growth':>8}{'kept':>6}")
    for r in rows:
        w, c, b = r["wall_ms"], r["cpu_ms"], r["stored_bytes"]
        print(f"{r['store']:<9}{r['mode']:<12}"
              f"{w['10']:>8}/{w['100']:>6}/{w[str(turns)]:>6}{r['wall_ratio']:>7}"
              f"{c['10']:>8}/{c['100']:>6}/{c[str(turns)]:>6}{r['cpu_ratio']:>7}"
              f"{b[str(half)] / 1024:>11.0f}{b[str(turns)] / 1024:>11.0f}{r['growth']:>8}"
              f"{r['messages_kept']:>6}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--compaction-tokens", type=int, default=1500)
    parser.add_argument("--keep-turns", type=int, default=4)
    parser.add_argument("--retention", type=int, default=20,
                        help="checkpoints kept per thread in the retention modes")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--modes", default="plain,compaction,retention,both")
    args = parser.parse_args()
    retention = RETENTION in Settings.model_fields
    modes = [m for m in args.modes.split(",") if retention or m not in ("retention", "both")]
    skipped = [m for m in args.modes.split(",") if m not in modes]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for store in args.stores.split(","):
            rows += await store_runs(store, modes, args, Path(tmp))
    _print(rows, args.turns)
    note = ("loaded 2-core machine shared with other work; latency = median of 5 turns "
            "around each point")
    if skipped:
        note += (f"; modes {', '.join(skipped)} skipped: this build has no "
                 f"DIWANIYA_{RETENTION.upper()} setting (retention is another branch)")
        print(f"skipped {', '.join(skipped)}: no DIWANIYA_{RETENTION.upper()} in this build")
    result = {"bench": "history", "note": note, "turns": args.turns,
              "compaction_tokens": args.compaction_tokens, "keep_turns": args.keep_turns,
              "retention": args.retention if retention else None, "rows": rows}
    RESULTS.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
