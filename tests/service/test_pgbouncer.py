"""Behind PgBouncer: session pooling works; transaction pooling is refused at startup.

The thread locks are session advisory locks and asyncpg caches prepared
statements per session, so a transaction-pooling PgBouncer would silently
break mutual exclusion of turns. A real PgBouncer (Debian package
``pgbouncer``, installed by .ci/run) in front of the test PostgreSQL.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
from pydantic import SecretStr

from diwaniya.errors import ConfigurationError
from majlis.persistence import check_session_pooling, open_postgres
from service import Settings
from service.app import open_persistence
from tests.conftest import _unavailable

REPO = Path(__file__).resolve().parents[2]
PGBOUNCER = shutil.which("pgbouncer") or ("/usr/sbin/pgbouncer"
                                          if Path("/usr/sbin/pgbouncer").exists() else None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def pgbouncer(pg_dsn: str) -> Iterator[Callable[[str], str]]:
    """``start(mode)`` → a DSN for the test database through PgBouncer in ``mode``."""
    if PGBOUNCER is None:
        _unavailable("pgbouncer is not installed (apt-get install pgbouncer)")
    assert PGBOUNCER is not None
    procs: list[subprocess.Popen[bytes]] = []
    # PgBouncer refuses to run as root; it then runs as postgres and must read
    # (and write its log into) this folder.
    folder = Path(tempfile.mkdtemp(prefix="diwaniya-pgbouncer-"))
    folder.chmod(0o777)
    dbname = pg_dsn.rsplit("/", 1)[1]

    def start(mode: str) -> str:
        port = _free_port()
        (folder / "users.txt").write_text('"postgres" ""\n')
        ini = folder / f"{mode}.ini"
        ini.write_text(
            "[databases]\n"
            f"{dbname} = host=127.0.0.1 port=5432 dbname={dbname}\n"
            "[pgbouncer]\n"
            f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {folder / 'users.txt'}\n"
            f"pool_mode = {mode}\ndefault_pool_size = 5\nmax_client_conn = 50\n"
            f"logfile = {folder / (mode + '.log')}\npidfile = {folder / (mode + '.pid')}\n")
        for f in folder.iterdir():
            f.chmod(0o666)
        argv = [PGBOUNCER, str(ini)]
        if os.geteuid() == 0:
            argv[1:1] = ["-u", "postgres"]
        procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        dsn = f"postgresql://postgres@127.0.0.1:{port}/{dbname}"
        deadline = time.monotonic() + 60
        while True:  # until it accepts a query (bounded; not a timing assertion)
            try:
                with psycopg.connect(dsn, connect_timeout=2, prepare_threshold=None) as conn:
                    conn.execute("SELECT 1")
                return dsn
            except psycopg.OperationalError:
                if time.monotonic() > deadline or procs[-1].poll() is not None:
                    log = folder / f"{mode}.log"
                    raise RuntimeError(f"pgbouncer did not start: "
                                       f"{log.read_text() if log.exists() else ''}") from None
                time.sleep(0.2)

    yield start
    for proc in procs:
        proc.terminate()
        proc.wait(timeout=30)
    shutil.rmtree(folder, ignore_errors=True)


async def test_transaction_pooling_is_detected(pgbouncer: Callable[[str], str]) -> None:
    dsn = pgbouncer("transaction")
    with pytest.raises(ConfigurationError, match="pool_mode=session"):
        await check_session_pooling(dsn)
    with pytest.raises(ConfigurationError, match="transaction or statement mode"):
        await open_postgres(dsn, prepare_threshold=None, min_size=1, max_size=2,
                            lock_pool_size=1)


async def test_session_pooling_is_accepted(pgbouncer: Callable[[str], str],
                                           tmp_path: Path) -> None:
    dsn = pgbouncer("session")
    await check_session_pooling(dsn)
    db = await open_persistence(Settings(database_url=SecretStr(dsn), data_dir=tmp_path,
                                         pg_max_connections=4, pool_min_size=1))
    try:
        await db.ping()
    finally:
        await db.close()


def test_serve_refuses_a_transaction_pooler_with_one_line(
    pgbouncer: Callable[[str], str], tmp_path: Path
) -> None:
    dsn = pgbouncer("transaction")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIWANIYA_")}
    env.update({"DATABASE_URL": dsn, "DIWANIYA_DATA_DIR": str(tmp_path),
                "DIWANIYA_METRICS_LISTEN": "127.0.0.1:0",  # 9464 would collide (xdist)
                "DIWANIYA_LOG_LEVEL": "WARNING", "PYTHONPATH": str(REPO)})
    done = subprocess.run(
        [sys.executable, "-m", "service", "serve", "--listen", "127.0.0.1:0", "--workers", "1"],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pool_mode=session" in lines[0], lines
