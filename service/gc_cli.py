"""``diwaniya gc``: the retention sweep (majlis.gc), directly on the database the
settings name (``DATABASE_URL``, else the SQLite files in ``DIWANIYA_DATA_DIR``).

Progress goes to stderr, one line per batch; the last line on stdout is one
JSON object of counts. ``--dry-run`` counts and changes nothing. It runs
beside serving replicas (a thread whose turn is in flight is skipped, and
counted in ``busy``) and is idempotent: an interrupted run is simply run again.

>>> main(["gc", "--dry-run"])   # doctest: +SKIP
idle threads: would delete 3 (0 memories; busy, skipped: 0)
…
{"dry_run": true, "threads_expired": 3, "checkpoints_pruned": 120, …}
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import TYPE_CHECKING, Any

from diwaniya.errors import DiwaniyaError, NotFound, Unavailable

if TYPE_CHECKING:
    from service.settings import Settings

_MIGRATE = "run `diwaniya migrate` with the same settings first"
_AGAIN = "gc is idempotent: run it again once the database answers"


def add_parser(sub: Any) -> None:
    gc = sub.add_parser(
        "gc", help="delete what retention lets go (idle threads, old checkpoints, expired "
                   "request records, turn events and rate-limit counters), then exit")
    gc.add_argument("--dry-run", action="store_true",
                    help="print what would be deleted; change nothing")
    gc.add_argument("--batch-size", type=_batch, default=500, metavar="N",
                    help="threads listed and rows deleted per statement (default 500)")


def _batch(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of rows ≥ 1")
    return int(value)


def _progress(line: str) -> None:
    print(f"diwaniya gc: {line}", file=sys.stderr, flush=True)


async def run(settings: Settings, args: argparse.Namespace) -> int:
    from majlis.gc import Collector, Windows
    from service.app import retention_policy

    policy = retention_policy(settings)
    windows = Windows(settings.request_replay_window_s, settings.turn_events_ttl_s)
    async with contextlib.AsyncExitStack() as stack:
        opened = await (_postgres(settings, stack) if settings.database_dsn()
                        else _sqlite(settings, stack))
        store, threads, memory, counters = opened
        collector = Collector(store, threads, memory, counters, policy, windows,
                              batch=args.batch_size, progress=_progress)
        try:
            report = await collector.run(dry_run=args.dry_run)
        except DiwaniyaError:
            raise
        except Exception as exc:  # the database went away mid-run, a lock timed out …
            raise Unavailable(f"gc stopped part-way ({type(exc).__name__}: {exc}); what it "
                              f"deleted so far stays deleted — {_AGAIN}") from exc
    print(json.dumps(report.as_dict()), flush=True)
    return 0


async def _postgres(settings: Settings, stack: contextlib.AsyncExitStack) -> tuple[Any, ...]:
    from majlis.gc_pg import PostgresRetention
    from majlis.limit_storage import PG_TABLE, PostgresCounters
    from majlis.persistence import PoolOptions, open_postgres
    from majlis.pg_budget import application_name
    from service.app import retention_policy

    dsn = settings.database_dsn()
    assert dsn
    try:
        db = await open_postgres(dsn, migrate=False, prepare_threshold=settings.prepare_threshold,
                                 retention=retention_policy(settings), options=PoolOptions(
                                     min_size=1, max_size=2, lock_pool_size=1,
                                     application_name=application_name(
                                         settings.pg_application_name)))
    except Unavailable as exc:
        raise Unavailable(f"{exc.message} — check DATABASE_URL and that PostgreSQL is up; "
                          f"{_AGAIN}") from exc
    stack.push_async_callback(db.close)
    assert db.pool is not None
    store = PostgresRetention(db.pool)
    missing = await store.missing_tables()
    if missing:
        raise NotFound(f"the database has no {', '.join(missing)} "
                       f"table{'s' if len(missing) > 1 else ''}: {_MIGRATE}")
    async with db.pool.connection() as conn:
        cur = await conn.execute("SELECT to_regclass('memory_records') IS NOT NULL AS memory,"
                                 " to_regclass(%s) IS NOT NULL AS counters", (PG_TABLE,))
        row = await cur.fetchone()
    assert row is not None
    memory = None
    if row["memory"]:  # no memory tables: no memories to erase
        memory = await _memory(dsn, settings)
        stack.push_async_callback(memory.close)
    return store, db.threads, memory, PostgresCounters(db.pool) if row["counters"] else None


async def _memory(dsn: str | None, settings: Settings) -> Any:
    import nlp
    from memory import open_store

    # Erasing writes no index terms: the built-in keys are enough to open it.
    return await open_store(dsn, sqlite_path=settings.data_dir / "memory.sqlite3",
                            keys=nlp.stem_and_surface_keys, pool_max=2)


async def _sqlite(settings: Settings, stack: contextlib.AsyncExitStack) -> tuple[Any, ...]:
    import aiosqlite

    from majlis.gc_sqlite import SqliteRetention
    from majlis.limit_storage import SqliteCounters
    from majlis.persistence import open_sqlite
    from service.app import retention_policy

    folder = settings.data_dir
    if not (folder / "threads.sqlite3").is_file():
        raise NotFound(f"no database in {folder.resolve()}: set DIWANIYA_DATA_DIR to the "
                       f"serving processes' folder, or {_MIGRATE}")
    db = await open_sqlite(folder, migrate=False, retention=retention_policy(settings))
    stack.push_async_callback(db.close)
    conn = await aiosqlite.connect(folder / "threads.sqlite3")
    stack.push_async_callback(conn.close)
    # The serving processes write meanwhile: wait out their commits, never fail on them.
    await conn.execute("PRAGMA busy_timeout=30000")
    store = SqliteRetention(conn)
    missing = await store.missing_tables()
    if missing:
        raise NotFound(f"{folder / 'threads.sqlite3'} has no {', '.join(missing)} "
                       f"table{'s' if len(missing) > 1 else ''}: {_MIGRATE}")
    memory = None
    if (folder / "memory.sqlite3").is_file():
        memory = await _memory(None, settings)
        stack.push_async_callback(memory.close)
    counters = None
    if (folder / "limits.sqlite3").is_file():
        counters = await SqliteCounters.open(folder / "limits.sqlite3")
        stack.push_async_callback(counters.close)
    return store, db.threads, memory, counters
