"""A long thread's cost per turn and stored bytes, with and without compaction (and retention).

``nice -n 10 .venv/bin/python bench/history.py [--turns 500] [--compaction-tokens 1500]
[--keep-turns 4] [--retention 20] [--stores sqlite,postgres] [--repeat 1]``

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
turns 10, 100 and the last as the median (and the minimum, the least disturbed
by other work on a shared machine) of the turns around each (8–12, 98–102,
the last five), and the checkpoint bytes those turns added, per turn (net:
with retention the pruned checkpoints are subtracted) — the deterministic part
of the cost. Stored bytes per thread: the payload of the thread's
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
from typing import Any  # noqa: E402

import psycopg  # noqa: E402

from bench._pg import fresh_database_async  # noqa: E402
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


def _span(turn: int, turns: int, half: int = 2) -> tuple[int, int]:
    """The window of :func:`_window` as (turns done before it, turns done at its end)."""
    lo = max(0, min(turn - 1 - half, turns - 2 * half - 1))
    return lo, lo + 2 * half + 1


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
    points = (10, 100, args.turns)
    # Bytes before and after each window, at half and at the end.
    measured = {half, args.turns, *(_span(p, args.turns)[0] for p in points),
                *(_span(p, args.turns)[1] for p in points)}
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
                if i + 1 in measured:
                    stored[i + 1] = (_pg_bytes(dsn, thread_id) if dsn
                                     else await asyncio.to_thread(_sqlite_bytes, data_dir,
                                                                  thread_id))
            view = await client.get_thread(thread_id, user_id="bench")
    finally:
        await server.drain(0, delay=0)
        await app.close()
    spans = {p: _span(p, args.turns) for p in points}
    out: dict[str, Any] = {
        "store": store, "mode": mode, "turns": args.turns,
        "wall_ms": {str(p): round(_window(wall, p) * 1000, 2) for p in points},
        "wall_min_ms": {str(p): round(min(wall[a:b]) * 1000, 2) for p, (a, b) in spans.items()},
        "cpu_ms": {str(p): round(_window(cpu, p) * 1000, 2) for p in points},
        "bytes_per_turn": {str(p): (stored[b] - stored[a]) // (b - a)
                           for p, (a, b) in spans.items()},
        "stored_bytes": {str(k): stored[k] for k in (half, args.turns)},
        "messages_kept": len(view.messages), "folded_turns": view.folded_turns,
    }
    out["wall_ratio"] = round(out["wall_ms"][str(args.turns)] / out["wall_ms"]["10"], 2)
    out["wall_min_ratio"] = round(out["wall_min_ms"][str(args.turns)] / out["wall_min_ms"]["10"],
                                  2)
    out["cpu_ratio"] = round(out["cpu_ms"][str(args.turns)] / out["cpu_ms"]["10"], 2)
    out["growth"] = round(math.log2(stored[args.turns] / stored[half]), 2) if stored[half] else 0
    return out


async def one_run(store: str, mode: str, args: argparse.Namespace,
                  data_dir: Path) -> dict[str, Any]:
    """One (store, mode) run on a database of its own."""
    if store == "sqlite":
        return await run(store, mode, args, data_dir, None)
    async with fresh_database_async(ADMIN) as db:
        return await run(store, mode, args, data_dir, db.dsn)


def combine(runs: list[dict[str, Any]], turns: int) -> dict[str, Any]:
    """Repeated runs of one (store, mode): medians of the medians, minimum of the minima."""
    out = dict(runs[-1])
    for key, pick in (("wall_ms", statistics.median), ("cpu_ms", statistics.median),
                      ("wall_min_ms", min)):
        out[key] = {p: round(pick([r[key][p] for r in runs]), 2) for p in runs[0][key]}
    last = str(turns)
    for ratio, key in (("wall_ratio", "wall_ms"), ("cpu_ratio", "cpu_ms"),
                       ("wall_min_ratio", "wall_min_ms")):
        out[ratio] = round(out[key][last] / out[key]["10"], 2)
    out["runs"] = len(runs)
    return out


def _print(rows: list[dict[str, Any]], turns: int) -> None:
    half = turns // 2
    at = f"@10/100/{turns}"
    print(f"{'store':<9}{'mode':<11}{'wall ms ' + at:>21}{'ratio':>6}{'min ms ' + at:>21}"
          f"{'ratio':>6}{'cpu ms ' + at:>21}{'ratio':>6}{'B/turn ' + at:>23}"
          f"{'KB @' + str(half):>9}{'KB @' + str(turns):>9}{'growth':>7}{'kept':>5}")
    for r in rows:
        w, m, c = r["wall_ms"], r["wall_min_ms"], r["cpu_ms"]
        b, t = r["stored_bytes"], r["bytes_per_turn"]

        def three(d: dict[str, Any]) -> str:
            return f"{d['10']:>7}/{d['100']:>6}/{d[str(turns)]:>6}"

        print(f"{r['store']:<9}{r['mode']:<11}{three(w):>21}{r['wall_ratio']:>6}"
              f"{three(m):>21}{r['wall_min_ratio']:>6}{three(c):>21}{r['cpu_ratio']:>6}"
              f"{three(t):>23}{b[str(half)] / 1024:>9.0f}{b[str(turns)] / 1024:>9.0f}"
              f"{r['growth']:>7}{r['messages_kept']:>5}")


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--compaction-tokens", type=int, default=1500)
    parser.add_argument("--keep-turns", type=int, default=4)
    parser.add_argument("--retention", type=int, default=20,
                        help="checkpoints kept per thread in the retention modes")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--modes", default="plain,compaction,retention,both")
    parser.add_argument("--repeat", type=int, default=1,
                        help="interleaved runs of each (store, mode); medians across them")
    args = parser.parse_args()
    retention = RETENTION in Settings.model_fields
    modes = [m for m in args.modes.split(",") if retention or m not in ("retention", "both")]
    skipped = [m for m in args.modes.split(",") if m not in modes]
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        # Interleaved: each repetition runs every (store, mode) once, so a burst of
        # load elsewhere on the machine falls on one run of each, not on one mode.
        for rep in range(args.repeat):
            for store in args.stores.split(","):
                for mode in modes:
                    runs.setdefault((store, mode), []).append(await one_run(
                        store, mode, args, Path(tmp) / f"{store}-{mode}-{rep}"))
    rows = [combine(r, args.turns) for r in runs.values()]
    _print(rows, args.turns)
    note = ("loaded 2-core machine shared with other work; latency = median of 5 turns "
            f"around each point (median over {args.repeat} interleaved runs; min: the least "
            "disturbed turn)")
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
