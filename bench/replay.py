"""Replay cost of a repeated request_id on a long thread, both stores.

``nice -n 10 .venv/bin/python bench/replay.py [--turns 300] [--replays 30]``

Builds one thread of ``--turns`` turns (offline responder, every turn with a
request_id) through a real gRPC server, then replays the *oldest* and the
newest request ids ``--replays`` times each and times the whole RPC. Before
the request table, replay scanned up to 400 checkpoints and the oldest ids
beyond 200 did not replay at all: the same script against that code, 150
turns, gave replay p50 708 ms (PostgreSQL) and 302 ms (SQLite), and a mean
turn of 70 / 26 ms against 34 / 20 ms now (a loaded machine: indicative).
PostgreSQL: a database created for the run on ``DIWANIYA_BENCH_PG``
(default the local 127.0.0.1:5432) and dropped afterwards.

Prints a table, writes bench/results/replay.json; the last line is one JSON object.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))  # bench._pg

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

from bench._pg import fresh_database_async  # noqa: E402
from service import DiwaniyaClient, Settings, build_app  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "replay.json"
ADMIN = os.environ.get("DIWANIYA_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


async def _events(call: Any) -> list[Any]:
    return [e async for e in call]


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 2)}


async def run_store(store: str, turns: int, replays: int, data_dir: Path,
                    dsn: str | None) -> dict[str, Any]:
    settings = Settings(data_dir=data_dir, listen="127.0.0.1:0", database_url=dsn)
    app = await build_app(settings)
    server = app.server()
    await server.start()
    try:
        async with DiwaniyaClient(f"127.0.0.1:{server.port}") as client:
            thread_id = ""
            t0 = time.perf_counter()
            for i in range(turns):
                events = await _events(client.send(f"سؤال رقم {i} عن الطلب", user_id="bench",
                                                   thread_id=thread_id, request_id=f"r-{i}"))
                thread_id = events[-1].thread_id
            build_s = time.perf_counter() - t0
            out: dict[str, Any] = {"store": store, "turns": turns,
                                   "turn_ms_mean": round(build_s / turns * 1000, 2)}
            for label, i in (("oldest", 0), ("newest", turns - 1)):
                samples = []
                for _ in range(replays):
                    t = time.perf_counter()
                    events = await _events(client.send(
                        f"سؤال رقم {i} عن الطلب", user_id="bench", thread_id=thread_id,
                        request_id=f"r-{i}"))
                    samples.append(time.perf_counter() - t)
                    assert events[-1].turn_completed.replayed
                out[label] = _ms(samples)
            return out
    finally:
        await server.drain(0, delay=0)
        await app.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--replays", type=int, default=30)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(await run_store("sqlite", args.turns, args.replays, Path(tmp) / "s", None))
        async with fresh_database_async(ADMIN) as db:
            rows.append(await run_store("postgres", args.turns, args.replays,
                                        Path(tmp) / "p", db.dsn))
    print(f"{'store':<9} {'turns':>5} {'turn ms':>8} {'oldest p50/p95 ms':>19} "
          f"{'newest p50/p95 ms':>19}")
    for r in rows:
        print(f"{r['store']:<9} {r['turns']:>5} {r['turn_ms_mean']:>8} "
              f"{r['oldest']['p50_ms']:>9}/{r['oldest']['p95_ms']:<9} "
              f"{r['newest']['p50_ms']:>9}/{r['newest']['p95_ms']:<9}")
    result = {"bench": "replay", "note": "loaded 2-core machine shared with other work",
              "rows": rows}
    RESULTS.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
