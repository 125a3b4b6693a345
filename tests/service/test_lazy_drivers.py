"""The SQLite default never imports the PostgreSQL drivers (issue #12: start-up CPU).

psycopg (+ psycopg-pool, LangGraph's PostgreSQL saver) and asyncpg are
imported only by the functions that open a ``DATABASE_URL``
(majlis.persistence_pg, memory.postgres_store): every ``serve``, ``migrate``
and ``gc`` on the embedded default saves their import. ``sys.modules`` is
process-wide, so this needs a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.service._cli import run_probe

_DRIVERS = ("psycopg", "psycopg_pool", "asyncpg", "langgraph.checkpoint.postgres")

# migrate, then build and close the whole app, on SQLite; then which drivers got loaded.
_PROBE = f"""
import asyncio, sys
from service.cli import main
code = main(["migrate"])
from service.app import build_app
from service.settings import Settings

async def built() -> None:
    app = await build_app(Settings())
    await app.close()

asyncio.run(built())
print("loaded:", ",".join(m for m in {_DRIVERS!r} if m in sys.modules), "code:", code)
"""


def test_the_sqlite_default_loads_no_postgresql_driver(tmp_path: Path) -> None:
    done = run_probe(_PROBE, tmp_path / "data")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "loaded:  code: 0"
    assert (tmp_path / "data" / "threads.sqlite3").exists()  # it did open the SQLite store


def test_a_database_url_still_loads_them(pg_dsn: str) -> None:
    """The same probe's counterpart: opening PostgreSQL does import the drivers."""
    probe = (f"import asyncio, sys\nfrom majlis.persistence import migrate_postgres\n"
             f"asyncio.run(migrate_postgres({pg_dsn!r}, prepare_threshold=None))\n"
             f"from memory import PostgresMemoryStore\n"
             f"print(','.join(m for m in {_DRIVERS!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ",".join(_DRIVERS)
