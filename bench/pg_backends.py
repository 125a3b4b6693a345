"""PostgreSQL backends one ``build_app`` opens, and what they cost the server.

``.venv/bin/python bench/pg_backends.py [--runs 10] [--admin postgresql://postgres@127.0.0.1/postgres]``

Every in-process server of the test suite (and every ``serve``) is a
``build_app``; each PostgreSQL session it opens is a backend fork, its
authentication and its catalog cache warm-up on the server (50–90 ms of server
CPU each on the 2-core machine). This builds and closes the app ``--runs``
times on a fresh database, with the test suite's environment
(``DIWANIYA_PG_LOCK_POOL_MIN=1``, ``DIWANIYA_POOL_MIN_SIZE=1``, tests/conftest.py;
either may be overridden from the environment), in two shapes:

- ``start_close``: ``build_app`` then ``close`` (the start-up alone);
- ``one_turn``: ``build_app``, one first turn through the engine, ``close``.

Counted by the server: ``pg_stat_database.sessions`` of the fresh database
before and after (every session ever opened on it, closed ones included), and
the CPU of every ``postgres`` process over the runs (on a shared server other
users' work too; the sessions are exact). Prints a table, writes
bench/results/pg_backends.json; the last line is one JSON object.
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
import tempfile  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import psycopg  # noqa: E402
from pydantic import SecretStr  # noqa: E402

from bench._pg import fresh_database  # noqa: E402

sys.path.append(str(_HERE))  # last: bench/nlp.py must not hide the nlp package
from suite_cpu import postgres_cpu_s  # noqa: E402

RESULTS = _HERE / "results" / "pg_backends.json"


def sessions(admin: str, database: str) -> int:
    """Sessions ever opened on ``database`` (closed backends have flushed their stats)."""
    with psycopg.connect(admin, autocommit=True) as conn:
        row = conn.execute("SELECT sessions FROM pg_stat_database WHERE datname = %s",
                           (database,)).fetchone()
    return int(row[0]) if row else 0


async def build_and_close(dsn: str, data_dir: Path, *, turn: bool) -> None:
    from majlis.requests import TurnRequest
    from service import Settings, build_app

    app = await build_app(Settings(database_url=SecretStr(dsn), data_dir=data_dir,
                                   listen="127.0.0.1:0"))
    try:
        if turn:
            request = TurnRequest(tenant="bench", user_id="u1", text="السلام عليكم")
            async for _ in app.engine.run_turn(request):
                pass
    finally:
        await app.close()


def measure(admin: str, runs: int, *, turn: bool) -> dict[str, Any]:
    with fresh_database(admin, "diwaniya_bench_backends") as db, \
            tempfile.TemporaryDirectory() as tmp:
        asyncio.run(build_and_close(db.dsn, Path(tmp), turn=turn))  # migrated, warm
        time.sleep(0.5)
        before, cpu0 = sessions(admin, db.name), postgres_cpu_s()
        for _ in range(runs):
            asyncio.run(build_and_close(db.dsn, Path(tmp), turn=turn))
        time.sleep(0.5)  # the last backends' exit flushes their statistics
        after, cpu1 = sessions(admin, db.name), postgres_cpu_s()
    return {"runs": runs, "sessions_per_app": (after - before) / runs,
            "server_cpu_ms_per_app": round((cpu1 - cpu0) * 1000 / runs, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--admin", default=os.environ.get(
        "DIWANIYA_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres"))
    args = parser.parse_args()
    # The test suite's servers (tests/conftest.py): a free metrics port, pools from 1.
    os.environ.setdefault("DIWANIYA_METRICS_LISTEN", "127.0.0.1:0")
    os.environ.setdefault("DIWANIYA_PG_LOCK_POOL_MIN", "1")
    os.environ.setdefault("DIWANIYA_POOL_MIN_SIZE", "1")
    rows = {shape: measure(args.admin, args.runs, turn=shape == "one_turn")
            for shape in ("start_close", "one_turn")}
    print(f"{'shape':<12} {'runs':>5} {'sessions/app':>13} {'server CPU ms/app':>18}")
    for shape, row in rows.items():
        print(f"{shape:<12} {row['runs']:>5} {row['sessions_per_app']:>13.1f} "
              f"{row['server_cpu_ms_per_app']:>18.1f}")
    out = {"bench": "pg_backends", **rows}
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
