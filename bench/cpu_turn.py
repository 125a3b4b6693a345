"""Server CPU per turn, in one process, counted so a loaded machine does not blur it.

``.venv/bin/python bench/cpu_turn.py [--turns 200] [--mode fresh|continuing] [--unique]
[--pause S] [--profile OUT]``

Builds the app on a fresh PostgreSQL database (``--admin-dsn``), offline
responder, starts its gRPC server in this process and sends ``--turns``
sequential turns through a DiwaniyaClient on the same loop.  Reported per turn:
``calls`` — Python function calls (cProfile's total, primitive and recursive):
deterministic up to timer-driven work (the turn log's mid-turn flush), so a
change's effect shows through other helpers' load, which wall time and even
process time do not; and ``cpu_ms`` — process time (client included: the
client's share is the same before and after a server change), from a second,
unprofiled pass.  The Prometheus endpoint is on, as by default.  ``--profile``
writes the profiled pass's pstats file.
The last line is one JSON object.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import cProfile  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pstats  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from typing import Any  # noqa: E402

from bench._pg import fresh_database  # noqa: E402
from service import DiwaniyaClient, Settings, build_app  # noqa: E402

TEXTS = ["السلام عليكم، عندي مشكلة في الطلب", "شلونك؟ وين وصل طلبي؟", "ازيك، الشحنة اتأخرت ليه؟",
         "كيفك؟ بدي رجّع الغرض", "بغيت نبدل العنوان ديال التوصيل", "شكو ماكو؟ اريد الفاتورة",
         "مرحبا، كم يوم ياخذ الاسترجاع؟", "يعطيك العافية، تمام"]


def _unique(text: str, i: int) -> str:
    # The turn's number in Arabic-Indic digits: no two turns send the same text,
    # so a cache of per-text work shows only what it saves within a turn.
    return f"{text} {str(i).translate(str.maketrans('0123456789', '٠١٢٣٤٥٦٧٨٩'))}"


async def turns(client: DiwaniyaClient, n: int, mode: str, offset: int,
                unique: bool = False, pause_s: float = 0.0) -> None:
    thread = ""
    user = f"cpu-{uuid.uuid4().hex[:8]}"
    for i in range(n):
        text = TEXTS[(i + offset) % len(TEXTS)]
        text = _unique(text, offset * n + i) if unique else text
        if pause_s:
            await asyncio.sleep(pause_s)
        async for event in client.send(text, user_id=user,
                                       thread_id=thread if mode == "continuing" else "",
                                       timeout_s=60):
            thread = event.thread_id or thread


async def run(dsn: str, n: int, mode: str, profile: str | None,
              unique: bool, pause_s: float = 0.0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=Path(tmp) / "data", listen="127.0.0.1:0",
                            database_url=dsn, drain_grace_s=5.0)
        app = await build_app(settings)
        server = app.server()
        await server.start()
        client = DiwaniyaClient(f"127.0.0.1:{server.port}")
        try:
            await turns(client, 20, mode, 0, unique)  # warm: prepared statements, pools, caches
            prof = cProfile.Profile()
            prof.enable()
            await turns(client, n, mode, 1, unique, pause_s)
            prof.disable()
            stats = pstats.Stats(prof)
            if profile:
                stats.dump_stats(profile)
            cpu0 = time.process_time()
            await turns(client, n, mode, 2, unique, pause_s)
            cpu = time.process_time() - cpu0
        finally:
            await client.close()
            await server.drain(0, delay=0)
            await app.close()
    return {"mode": mode, "unique": unique, "pause_s": pause_s, "turns": n,
            "calls": round(stats.total_calls / n, 1),
            "primitive_calls": round(stats.prim_calls / n, 1),
            "cpu_ms": round(cpu * 1000 / n, 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--mode", choices=["fresh", "continuing"], default="fresh")
    ap.add_argument("--profile")
    ap.add_argument("--unique", action="store_true",
                    help="every turn's text different (a number appended)")
    ap.add_argument("--pause", type=float, default=0.0,
                    help="seconds between turns: a steady rate below full load")
    ap.add_argument("--admin-dsn", default=os.environ.get(
        "DIWANIYA_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres"))
    args = ap.parse_args(sys.argv[1:])
    # The product's default: a Prometheus endpoint (on a free port here), so
    # every metric recording goes through a reader as in production.
    os.environ.setdefault("DIWANIYA_METRICS_LISTEN", "127.0.0.1:0")
    os.environ.pop("DIWANIYA_MODEL_BASE_URL", None)
    with fresh_database(args.admin_dsn, "diwaniya_cputurn") as db:
        result = asyncio.run(run(db.dsn, args.turns, args.mode, args.profile, args.unique,
                                 args.pause))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
