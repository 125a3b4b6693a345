"""PostgreSQL statements per turn, counted by the server itself.

``.venv/bin/python bench/roundtrips.py [--log /var/log/postgresql/postgresql-15-main.log]``

Every statement is a round trip, and on a shared 2-core machine each one
wakes a backend and the service's loop (issue #11: ``--workers 2`` ≥ 200
turns/s).  This starts ``diwaniya serve`` (offline responder, one worker) on
a fresh database with ``log_statement = 'all'`` set for that database only,
warms it (prepared statements, pools), then sends one fresh and one
continuing turn, with and without a ``request_id``, and reads the statements
each turn sent from PostgreSQL's log (superuser DSN and a readable log file
needed).  Turns are sent back to back, as under load: a pool connection idle
for over majlis.persistence.IDLE_CHECK_S is checked with an empty statement
at checkout, which a busy service does not pay; such checks are listed apart.

Prints each turn's statements and a table; writes bench/results/roundtrips.json;
the last line is one JSON object.
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
import signal  # noqa: E402
import uuid  # noqa: E402

import psycopg  # noqa: E402

from service import DiwaniyaClient  # noqa: E402

sys.path.insert(0, str(_HERE))
from load import start_server  # noqa: E402

FRESH, NEXT = "السلام عليكم، عندي مشكلة في الطلب", "شلونك؟ وين وصل طلبي؟"


def _size(log: Path) -> int:
    return log.stat().st_size


def statements(log: Path, since: int, database: str) -> list[str]:
    """The statements ``database``'s sessions logged after byte ``since``, one line each."""
    with log.open(errors="replace") as f:
        f.seek(since)
        text = f.read()
    out: list[str] = []
    current = False
    for line in text.splitlines():
        if not line[:4].isdigit():  # a statement's continuation line
            if current:
                out[-1] += " " + line.strip()
            continue
        current = f"@{database} " in line and ("statement:" in line or "execute " in line)
        if current:
            out.append(line.split("LOG:", 1)[1].strip())
    return [" ".join(s.split()) for s in out]


def is_check(statement: str) -> bool:
    """psycopg-pool's checkout check of a connection idle > IDLE_CHECK_S: an empty query."""
    return statement.rstrip().endswith(("statement:", ":"))


async def count(target: str, log: Path, database: str) -> dict[str, list[str]]:
    client = DiwaniyaClient(target, own_connection=True)
    user = f"rt-{uuid.uuid4().hex[:8]}"

    async def turn(text: str, thread: str, keyed: bool) -> str:
        tid = thread
        async for event in client.send(text, user_id=user, thread_id=thread, timeout_s=60,
                                       request_id=uuid.uuid4().hex if keyed else ""):
            tid = event.thread_id or tid
        return tid

    for keyed in (False, True, False, True):  # warm: every statement prepared
        for _ in range(6):
            await turn(NEXT, await turn(FRESH, "", keyed), keyed)
    found: dict[str, list[str]] = {}
    for keyed in (False, True):
        thread = ""
        for mode in ("fresh", "continuing"):
            await asyncio.sleep(0.3)  # the last turn's statements are in the log
            since = _size(log)
            thread = await turn(FRESH if mode == "fresh" else NEXT, thread, keyed)
            await asyncio.sleep(0.3)  # and the unlock after the last event
            found[f"{mode}{' +request_id' if keyed else ''}"] = statements(log, since, database)
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--log", type=Path, default=Path("/var/log/postgresql/postgresql-15-main.log"))
    ap.add_argument("--admin-dsn", default=os.environ.get(
        "DIWANIYA_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres"))
    ap.add_argument("--out", type=Path, default=_HERE / "results" / "roundtrips.json")
    args = ap.parse_args()
    name = f"diwaniya_rt_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(args.admin_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
        conn.execute(f"ALTER DATABASE \"{name}\" SET log_statement = 'all'")
    try:
        proc, target = start_server(f"{args.admin_dsn.rsplit('/', 1)[0]}/{name}", 1, 20, 1)
        try:
            found = asyncio.run(count(target, args.log, name))
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)
    finally:
        with psycopg.connect(args.admin_dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    rows = {}
    for turn, sent in found.items():
        print(f"== {turn}")
        for statement in sent:
            print(f"   {statement[:150]}")
        checks = sum(map(is_check, sent))
        rows[turn] = {"statements": len(sent) - checks, "idle_checks": checks}
    print(f"{'turn':<26}{'statements':>11}{'idle checks':>13}")
    for turn, r in rows.items():
        print(f"{turn:<26}{r['statements']:>11}{r['idle_checks']:>13}")
    result = {"benchmark": "roundtrips", "turns": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n")
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
