"""Load on a running service, against a bare LangGraph graph of the same shape.

``.venv/bin/python bench/load.py [--streams 32] [--turns 10] [--workers 1] [--mode both]``

Starts ``diwaniya serve`` as a subprocess on a free port with PostgreSQL = a
fresh database on 127.0.0.1:5432 (``--admin-dsn``), the offline responder and
``--workers N``; this process is the load generator.  N concurrent streams
(one TCP connection each, so ``--workers`` spreads them) each send M turns:

* ``fresh``: every turn starts a new thread;
* ``continuing``: every stream first opens a thread (not counted), then sends
  its M turns on it.

``--request-ids`` gives every turn a new ``request_id`` (the idempotent-retry
path: the request claim and its record in the commit).

Reported per mode: turns/s, time to first event (TTFE), time to
``turn_started`` (TTFE counts an early ``queued`` — a turn behind others still
starting — as the first event; this one does not) and turn latency
p50/p95/p99, errors by gRPC status, and CPU per turn (utime + stime from
/proc/<pid>/stat) of the three that share the machine: the server process and
its workers, PostgreSQL (the backends serving this run's database, and the
WAL writer, which is the instance's: on a shared PostgreSQL it counts others'
work too) and this load generator.

In the same run, after the service has stopped, the same concurrency drives a
bare graph of the service's shape in this process: as many nodes in a line as
the service runs LangGraph nodes on a message's path (``SERVICE_NODES``: its
five steps run as one node, majlis.graph), an AsyncPostgresSaver on an
equally configured psycopg pool, ``durability="exit"`` — the anchor for "how
much does the service add" (``bare``).  The issue's original anchor, five
nodes (one per step, as the service once ran them), is measured too
(``bare5``), so that fewer service nodes cannot pass for less service work.
Their turns/s and CPU per turn are printed with the ratios service / bare.

Time to first event is also printed split by when a turn started: the untimed
first turn of every stream at once (a cold burst on the just-started server,
``ttfe_burst_*``), the phase's first ``COLD_S`` and the rest, with the slowest
1 % and their start times. The server opens ``ceil(streams / workers)`` lock
connections at start (``DIWANIYA_PG_LOCK_POOL_MIN``): the budget below would
have it open 56 a process, more than the shared PostgreSQL holds for two.

Prints a table, writes bench/results/load.json (``--workers N`` > 1:
load_workers{N}.json; ``--out`` to choose); the last line is one JSON object.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import operator  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from collections import Counter  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Annotated, Any, TypedDict  # noqa: E402

import grpc  # noqa: E402
import psycopg  # noqa: E402

from bench._pg import fresh_database  # noqa: E402
from service import DiwaniyaClient  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
# A phase's first COLD_S seconds, reported apart (Phase.by_start).
COLD_S = 0.5
# Real support-chat openings and follow-ups in several dialects (offline responder).
TEXTS = ["السلام عليكم، عندي مشكلة في الطلب", "شلونك؟ وين وصل طلبي؟", "ازيك، الشحنة اتأخرت ليه؟",
         "كيفك؟ بدي رجّع الغرض", "بغيت نبدل العنوان ديال التوصيل", "شكو ماكو؟ اريد الفاتورة",
         "مرحبا، كم يوم ياخذ الاسترجاع؟", "يعطيك العافية، تمام"]


# ------------------------------------------------------------------ stats
def pct(values: list[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    k = min(len(ordered) - 1, max(0, round(p / 100 * (len(ordered) - 1))))
    return ordered[k]


@dataclass
class Phase:
    name: str
    turns: int = 0
    wall_s: float = 0.0
    ttfe_ms: list[float] = field(default_factory=list)
    # Time to ``turn_started`` (the turn holds its thread): TTFE counts an early
    # ``queued`` as the first event, this does not.
    started_ms: list[float] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    cpu_s: float = 0.0
    # PostgreSQL's backends for this database (and its WAL writer), and this process.
    pg_cpu_s: float = 0.0
    client_cpu_s: float = 0.0
    # pg_stat_wal flushes (the instance) and this database's transactions, in the phase.
    wal_syncs: int = 0
    commits: int = 0
    # The untimed first turn of every stream at once (drive_service): its TTFE.
    burst_ttfe_ms: list[float] = field(default_factory=list)
    # When each turn started, from the phase's first turn (perf_counter), beside ttfe_ms.
    t0: float = 0.0
    started_s: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "turns": self.turns, "wall_s": round(self.wall_s, 3),
            "turns_per_s": round(self.turns / self.wall_s, 1) if self.wall_s else 0.0,
            **{f"ttfe_p{p}_ms": _round(pct(self.ttfe_ms, p)) for p in (50, 95, 99)},
            **{f"turn_started_p{p}_ms": _round(pct(self.started_ms, p)) for p in (50, 95, 99)},
            **{f"latency_p{p}_ms": _round(pct(self.latency_ms, p)) for p in (50, 95, 99)},
            "errors": dict(self.errors),
            "server_cpu_ms_per_turn": round(self.cpu_s / self.turns * 1000, 2)
            if self.turns else None,
            **({"pg_cpu_ms_per_turn": round(self.pg_cpu_s / self.turns * 1000, 2),
                "client_cpu_ms_per_turn": round(self.client_cpu_s / self.turns * 1000, 2)}
               if self.turns and self.pg_cpu_s else {}),
            **({"pg_xacts_per_turn": round(self.commits / self.turns, 2),
                "wal_syncs_per_turn": round(self.wal_syncs / self.turns, 2)}
               if self.turns and self.commits else {}),
            **self.by_start(),
        }

    def by_start(self) -> dict[str, Any]:
        """TTFE of the turns that started in the phase's first COLD_S (a burst of
        new streams on a process whose pools are still small) apart from the rest,
        and the slowest first events with their start times: is the tail the
        start-up, or spread over the phase?"""
        if not self.started_s:
            return {}
        pairs = list(zip(self.started_s, self.ttfe_ms, strict=True))
        cold = [t for s, t in pairs if s < COLD_S]
        steady = [t for s, t in pairs if s >= COLD_S]
        slowest = sorted(pairs, key=lambda p: -p[1])[:max(1, len(pairs) // 100)]
        return {**{f"ttfe_burst_p{p}_ms": _round(pct(self.burst_ttfe_ms, p)) for p in (50, 99)},
                "ttfe_cold_turns": len(cold),
                **{f"ttfe_cold_p{p}_ms": _round(pct(cold, p)) for p in (50, 99)},
                **{f"ttfe_steady_p{p}_ms": _round(pct(steady, p)) for p in (50, 99)},
                "ttfe_slowest": [[round(s, 3), round(t, 1)] for s, t in slowest]}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def cpu_seconds(pids: list[int]) -> float:
    return sum(cpu_by_pid(pids).values())


def cpu_by_pid(pids: list[int]) -> dict[int, float]:
    found: dict[int, float] = {}
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[pid] = (int(fields[11]) + int(fields[12])) / TICK  # utime, stime
    return found


def server_pids(root: int) -> list[int]:
    pids = [root]
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == root:
                pids.append(int(entry))
    return pids


def pg_counters(dsn: str) -> tuple[int, int]:
    """(WAL flushes of the instance, commits in this database) so far."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT (SELECT wal_sync FROM pg_stat_wal), xact_commit FROM pg_stat_database"
            " WHERE datname = current_database()").fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


def pg_pids(dsn: str) -> list[int]:
    """The PostgreSQL processes serving ``dsn``'s database, and the WAL writer
    (which flushes asynchronous commits): PostgreSQL runs on this machine."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE (datname = current_database()"
            " AND pid <> pg_backend_pid()) OR backend_type = 'walwriter'").fetchall()
    return [int(r[0]) for r in rows]


# -------------------------------------------------------------- service
def start_server(dsn: str, workers: int, pool_max: int,
                 lock_min: int) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "DATABASE_URL": dsn, "DIWANIYA_LISTEN": "127.0.0.1:0",
           "DIWANIYA_LOG_LEVEL": "WARNING", "DIWANIYA_POOL_MAX_SIZE": str(pool_max),
           # The budget the figures were measured with: pool_max queries plus
           # the former fixed 64 lock and 10 memory connections per process.
           "DIWANIYA_PG_MAX_CONNECTIONS": str(workers * (pool_max + 74)),
           "DIWANIYA_DRAIN_DELAY_S": "0", "DIWANIYA_DRAIN_GRACE_S": "5",
           "DIWANIYA_MAX_CONCURRENT_STREAMS": "1024",
           # That budget is larger than the shared PostgreSQL holds with two
           # workers (2 x 56 lock connections): open what the load runs at
           # once, not the whole lock pool the service opens by default.
           "DIWANIYA_PG_LOCK_POOL_MIN": str(lock_min)}
    # No Prometheus endpoint unless asked for: its fixed default port would
    # collide with any other service on the machine, and nothing reads it here.
    env.setdefault("DIWANIYA_METRICS_LISTEN", "")
    env.pop("DIWANIYA_MODEL_BASE_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--workers", str(workers)],
        env=env, stdout=subprocess.PIPE, text=True, cwd=_HERE.parent)
    line = proc.stdout.readline() if proc.stdout else ""
    if "listening on" not in line:
        proc.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return proc, line.strip().rsplit(" ", 1)[-1]


async def one_turn(client: DiwaniyaClient, phase: Phase, text: str, user: str,
                   thread_id: str, request_ids: bool = False) -> str:
    started = time.perf_counter()
    first: float | None = None
    turn_started: float | None = None
    last_thread = thread_id
    # --request-ids: every turn carries a new request_id, as a retry-safe client sends.
    request_id = uuid.uuid4().hex if request_ids else ""
    try:
        async for event in client.send(text, user_id=user, thread_id=thread_id, timeout_s=120,
                                       request_id=request_id):
            if first is None:
                first = time.perf_counter()
            if turn_started is None and event.WhichOneof("event") == "turn_started":
                turn_started = time.perf_counter()
            last_thread = event.thread_id or last_thread
    except grpc.aio.AioRpcError as exc:
        phase.errors[exc.code().name] += 1
        return last_thread
    done = time.perf_counter()
    phase.turns += 1
    phase.ttfe_ms.append(((first or done) - started) * 1000)
    phase.started_ms.append(((turn_started or done) - started) * 1000)
    phase.started_s.append(started - phase.t0)
    phase.latency_ms.append((done - started) * 1000)
    return last_thread


async def drive_service(target: str, pids: list[int], mode: str, streams: int,
                        turns: int, request_ids: bool = False, dsn: str = "") -> Phase:
    phase = Phase(f"service/{mode}")
    clients = [DiwaniyaClient(target, own_connection=True) for _ in range(streams)]
    try:
        users = [f"load-{uuid.uuid4().hex[:8]}" for _ in range(streams)]
        threads = [""] * streams
        if mode == "continuing":
            warm = Phase("warm-up")
            threads = list(await asyncio.gather(*(
                one_turn(c, warm, "السلام عليكم", u, "") for c, u in zip(clients, users,
                                                                        strict=True))))
        else:  # connect every channel and warm the server before the clock starts
            warm = Phase("warm-up")
            await asyncio.gather(*(one_turn(c, warm, "السلام عليكم", u, "")
                                   for c, u in zip(clients, users, strict=True)))

        async def stream(i: int) -> None:
            for j in range(turns):
                text = TEXTS[(i + j) % len(TEXTS)]
                await one_turn(clients[i], phase, text, users[i], threads[i], request_ids)

        phase.burst_ttfe_ms = warm.ttfe_ms
        # After the warm-up: every pool connection (and so its backend) is open.
        pg0 = cpu_by_pid(await asyncio.to_thread(pg_pids, dsn) if dsn else [])
        wal0 = await asyncio.to_thread(pg_counters, dsn) if dsn else (0, 0)
        me0 = time.process_time()
        cpu0, t0 = cpu_seconds(pids), time.perf_counter()
        phase.t0 = t0
        await asyncio.gather(*(stream(i) for i in range(streams)))
        phase.wall_s = time.perf_counter() - t0
        phase.cpu_s = cpu_seconds(pids) - cpu0
        phase.client_cpu_s = time.process_time() - me0
        # Backends opened during the phase count from their start.
        pg1 = cpu_by_pid(await asyncio.to_thread(pg_pids, dsn) if dsn else [])
        phase.pg_cpu_s = sum(t - pg0.get(pid, 0.0) for pid, t in pg1.items())
        if dsn:
            # Statistics reach pg_stat_* when a backend goes idle: wait them in.
            await asyncio.sleep(1.5)
            wal1 = await asyncio.to_thread(pg_counters, dsn)
            # Less this bench's own two reads (one commit each).
            phase.wal_syncs, phase.commits = wal1[0] - wal0[0], wal1[1] - wal0[1] - 2
    finally:
        await asyncio.gather(*(c.close() for c in clients))
    return phase


# ------------------------------------------------------------ bare graph
class State(TypedDict, total=False):
    messages: Annotated[list[dict[str, Any]], operator.add]
    turn: dict[str, Any]


# LangGraph nodes on a message's path in majlis.graph.build_graph: "turn"
# (analyse … remember in one node since session 12). Kept in step by
# tests/majlis/test_graph_routes.py, so a smaller service graph cannot pass
# for a cheaper service against a bare graph larger than its own.
SERVICE_NODES = 1
STEPS = ["analyse", "phase", "recall", "respond", "remember"]


async def drive_bare(dsn: str, mode: str, streams: int, turns: int, pool_max: int,
                     nodes: int = SERVICE_NODES, label: str = "bare") -> Phase:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.graph import END, START, StateGraph
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    def node(name: str) -> Any:
        def run(state: State) -> dict[str, Any]:
            turn = dict(state.get("turn") or {})
            turn[name] = True
            if name == "remember":
                return {"turn": turn, "messages": [{"role": "user", "text": turn["text"]},
                                                   {"role": "assistant", "text": "تمام"}]}
            return {"turn": turn}
        return run

    # n nodes in a line; the last one writes the messages, as "remember" does.
    names = [*STEPS[:nodes - 1], "remember"]
    builder = StateGraph(State)
    for name in names:
        builder.add_node(name, node(name))
    builder.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        builder.add_edge(a, b)
    builder.add_edge(names[-1], END)
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        dsn, min_size=2, max_size=pool_max, open=False, check=AsyncConnectionPool.check_connection,
        kwargs={"autocommit": True, "row_factory": dict_row, "prepare_threshold": 5})
    await pool.open(wait=True)
    saver = AsyncPostgresSaver(pool)
    await saver.setup()
    graph = builder.compile(checkpointer=saver)
    phase = Phase(f"{label}/{mode}")

    async def turn(thread: str, text: str) -> None:
        started = time.perf_counter()
        config: Any = {"configurable": {"thread_id": thread}}
        await graph.ainvoke({"turn": {"text": text}}, config, durability="exit")
        done = time.perf_counter()
        phase.turns += 1
        phase.latency_ms.append((done - started) * 1000)

    try:
        threads = [uuid.uuid4().hex for _ in range(streams)]
        # Untimed: opens the pool's connections and, for continuing, the threads.
        await asyncio.gather(*(graph.ainvoke({"turn": {"text": "السلام عليكم"}},
                                                 {"configurable": {"thread_id": t}},
                                                 durability="exit") for t in threads))

        async def stream(i: int) -> None:
            for j in range(turns):
                thread = threads[i] if mode == "continuing" else uuid.uuid4().hex
                await turn(thread, TEXTS[(i + j) % len(TEXTS)])

        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(stream(i) for i in range(streams)))
        phase.wall_s = time.perf_counter() - t0
        phase.cpu_s = time.process_time() - cpu0
    finally:
        await pool.close()
    return phase


# ------------------------------------------------------------------ main
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--streams", type=int, default=32)
    ap.add_argument("--turns", type=int, default=10, help="turns per stream and mode")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--mode", choices=["fresh", "continuing", "both"], default="both")
    ap.add_argument("--pool-max", type=int, default=20, help="PostgreSQL pool size per process")
    ap.add_argument("--no-bare", action="store_true", help="skip the bare-graph anchor")
    ap.add_argument("--request-ids", action="store_true",
                    help="send a new request_id with every turn (the idempotent-retry path)")
    ap.add_argument("--admin-dsn", default=os.environ.get(
        "DIWANIYA_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres"))
    ap.add_argument("--out", type=Path, default=None,
                    help="default bench/results/load.json, load_workers{N}.json for N > 1")
    args = ap.parse_args()
    # One file per worker count, so a --workers 2 run does not overwrite the
    # one-worker figures that the README quotes beside it.
    out: Path = args.out or _HERE / "results" / (
        "load.json" if args.workers == 1 else f"load_workers{args.workers}.json")
    modes = ["fresh", "continuing"] if args.mode == "both" else [args.mode]

    phases: list[Phase] = []
    with fresh_database(args.admin_dsn, "diwaniya_load") as db:
        dsn = db.dsn
        proc, target = start_server(dsn, args.workers, args.pool_max,
                                    -(-args.streams // args.workers))
        try:
            pids = server_pids(proc.pid)
            for mode in modes:
                phases.append(asyncio.run(drive_service(target, pids, mode, args.streams,
                                                        args.turns, args.request_ids, dsn)))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        if not args.no_bare:
            for mode in modes:
                for nodes, label in ((SERVICE_NODES, "bare"), (len(STEPS), "bare5")):
                    phases.append(asyncio.run(drive_bare(
                        dsn, mode, args.streams, args.turns, args.pool_max, nodes, label)))

    rows = {p.name: p.summary() for p in phases}
    ratios: dict[str, float] = {}
    ratios5: dict[str, float] = {}
    for mode in modes:
        svc = rows.get(f"service/{mode}")
        for into, label in ((ratios, "bare"), (ratios5, "bare5")):
            bare = rows.get(f"{label}/{mode}")
            if svc and bare and bare["turns_per_s"]:
                into[mode] = round(svc["turns_per_s"] / bare["turns_per_s"], 3)

    print(f"load: {args.streams} streams x {args.turns} turns, --workers {args.workers}, "
          f"PostgreSQL, offline responder ({os.cpu_count()} CPUs)"
          + (", a request_id per turn" if args.request_ids else ""))
    head = (f"{'phase':<20}{'turns/s':>9}{'cpu ms/turn':>12}{'ttfe p50/p95/p99 ms':>24}"
            f"{'latency p50/p95/p99 ms':>26}  errors")
    print(head)
    print("-" * len(head))
    for key, r in rows.items():
        ttfe = "/".join(f"{r[f'ttfe_p{p}_ms'] or 0:.0f}" for p in (50, 95, 99))
        lat = "/".join(f"{r[f'latency_p{p}_ms'] or 0:.0f}" for p in (50, 95, 99))
        if key.startswith("bare"):
            ttfe = "-"
        print(f"{key:<20}{r['turns_per_s']:>9.1f}{r['server_cpu_ms_per_turn'] or 0:>12.2f}"
              f"{ttfe:>24}{lat:>26}  {r['errors'] or ''}")
    for key, r in rows.items():
        if "ttfe_cold_turns" in r:
            def pair(name: str, r: dict[str, Any] = r) -> str:
                return f"{r[f'{name}_p50_ms'] or 0:.0f}/{r[f'{name}_p99_ms'] or 0:.0f}"
            print(f"{key} turn_started p50/p95/p99 ms (an early queued is not a start): "
                  + "/".join(f"{r[f'turn_started_p{p}_ms'] or 0:.0f}" for p in (50, 95, 99)))
            print(f"{key} ttfe p50/p99 ms: untimed first burst {pair('ttfe_burst')} "
                  f"(with the channels' connects), first {COLD_S:g} s "
                  f"({r['ttfe_cold_turns']} turns) {pair('ttfe_cold')}, after "
                  f"{pair('ttfe_steady')}; slowest (start s, ms): "
                  + " ".join(f"{s:.2f}:{t:.0f}" for s, t in r["ttfe_slowest"]))
    for key, r in rows.items():
        if "pg_cpu_ms_per_turn" in r:
            print(f"{key} CPU ms per turn: server {r['server_cpu_ms_per_turn']:.2f}, PostgreSQL "
                  f"{r['pg_cpu_ms_per_turn']:.2f}, load generator "
                  f"{r['client_cpu_ms_per_turn']:.2f}; PostgreSQL transactions per turn "
                  f"{r.get('pg_xacts_per_turn', 0):.2f}, WAL flushes per turn "
                  f"{r.get('wal_syncs_per_turn', 0):.2f} (the instance's)")
    for mode, ratio in ratios.items():
        print(f"service / bare graph throughput ({mode}): {ratio:.2f} "
              f"({SERVICE_NODES} nodes, the service's shape); "
              f"{ratios5.get(mode, 0):.2f} against five nodes")
    result = {"benchmark": "load", "streams": args.streams, "turns": args.turns,
              "workers": args.workers, "request_ids": args.request_ids,
              "cpus": os.cpu_count(), "phases": rows, "bare_nodes": SERVICE_NODES,
              "ratio_vs_bare": ratios, "ratio_vs_bare5": ratios5}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
