"""``diwaniya``: serve, migrate, gc (service.gc_cli), chat, thread release, kb (service.kb_cli).

>>> main(["chat", "--once", "السلام عليكم", "--json"])   # doctest: +SKIP
{"thread_id": "…", "turn_id": "…", "seq": 1, "turn_started": {…}}
…

Each subcommand imports its own dependencies: ``chat`` and ``thread`` are
clients and load only ``diwaniya.client`` (grpcio + protobuf), never pydantic,
langgraph, the stores or numpy — that keeps ``chat --once`` under a second.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from diwaniya.errors import ConfigurationError, DiwaniyaError, StoreUnavailable
from service.cli_tls import tls_arguments

if TYPE_CHECKING:
    from diwaniya.client import AsyncClient
    from service.app import App
    from service.settings import Settings
    from service.telemetry import Telemetry


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of processes ≥ 1")
    return int(value)


def _client(args: argparse.Namespace) -> AsyncClient:
    from diwaniya.client import AsyncClient

    tls = bool(args.tls or args.tls_server_name)
    return AsyncClient(_client_target(args), api_key=args.api_key, tls=tls,
                       tls_ca=args.tls_ca, tls_cert=args.tls_cert, tls_key=args.tls_key,
                       tls_server_name=args.tls_server_name)


def _client_target(args: argparse.Namespace) -> str:
    """--target, else the server's own listen address (DIWANIYA_LISTEN, or the settings
    file's only when one is named: loading Settings costs pydantic's import)."""
    listen = args.target or os.environ.get("DIWANIYA_LISTEN", "")
    if not listen and os.environ.get("DIWANIYA_SETTINGS_FILE"):
        from service.settings import Settings

        listen = Settings().listen
    return (listen or "127.0.0.1:50051").replace("0.0.0.0", "127.0.0.1")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="diwaniya", description="Arabic-native conversational service")
    sub = p.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the gRPC server")
    serve.add_argument("--listen", help="HOST:PORT (default from DIWANIYA_LISTEN, 127.0.0.1:50051)")
    serve.add_argument("--workers", type=_positive, metavar="N",
                       help="server processes sharing the port (default DIWANIYA_WORKERS, "
                            "else the CPU quota)")
    # Set by the supervisor on its children (service.workers); not for operators.
    serve.add_argument("--supervisor-pid", type=int, default=0, help=argparse.SUPPRESS)

    migrate = sub.add_parser("migrate", help="create or upgrade the database tables, then exit")
    migrate.add_argument("--rekey", action="store_true",
                         help="re-key every stored memory row even when the recorded key "
                              "fingerprint matches (progress on stderr)")

    chat = sub.add_parser("chat", help="talk to a running server")
    chat.add_argument("--once", metavar="TEXT", help="send one message and exit")
    chat.add_argument("--thread", default="", help="continue this thread id")
    chat.add_argument("--user", default="cli-user", help="user id (default cli-user)")
    chat.add_argument("--country", default="", help="ISO 3166-1 alpha-2, e.g. KW")
    chat.add_argument("--timezone", default="", help="IANA zone, e.g. Asia/Riyadh")
    chat.add_argument("--client-time", default="",
                      help="ISO 8601 instant, e.g. 2027-02-25T09:00:00+03:00")
    chat.add_argument("--target", default="", help="HOST:PORT of the server")
    chat.add_argument("--api-key", default=os.environ.get("DIWANIYA_API_KEY"))
    chat.add_argument("--json", action="store_true", help="print every event as one JSON line")
    tls_arguments(chat)

    thread = sub.add_parser("thread", help="manage a thread on a running server")
    thsub = thread.add_subparsers(dest="thread_command", required=True)
    release = thsub.add_parser("release", help="give a handed-off thread back to the bot")
    release.add_argument("--thread", required=True, help="the thread id")
    release.add_argument("--user", required=True, help="the thread's user id")
    release.add_argument("--target", default="", help="HOST:PORT of the server")
    release.add_argument("--api-key", default=os.environ.get("DIWANIYA_API_KEY"))
    tls_arguments(release)

    from service import gc_cli, kb_cli  # parsers only: the commands import their own deps

    kb_cli.add_parser(sub)
    gc_cli.add_parser(sub)
    return p


def _serve_command(settings: Settings, args: argparse.Namespace) -> int:
    """One process, or a supervisor of N (service.workers) when more than one is wanted."""
    from service import priority, workers
    from service.app import preflight

    if args.supervisor_pid:
        workers.die_with_parent(args.supervisor_pid)
        # migrate_on_start is true here only when the supervisor could not reach
        # PostgreSQL to migrate (_migrate_before_workers): each worker then
        # migrates and re-keys itself, under the stores' advisory locks.
        priority.run(_serve(settings, args.listen, reuse_port=True,
                            rekey=settings.migrate_on_start),
                     lanes=settings.front_lane_loop)
        return 0
    n = args.workers or settings.workers or workers.cpu_quota_workers()
    if not (args.workers or settings.workers) and settings.database_dsn():
        # Counted from the CPUs, not asked for: never more processes than the
        # connection budget can give 3 connections each (majlis.pg_budget).
        from majlis.pg_budget import MIN_PER_PROCESS

        fit = max(1, settings.pg_max_connections // MIN_PER_PROCESS)
        if n > fit:
            logging.getLogger("diwaniya").warning(
                "%d CPUs but DIWANIYA_PG_MAX_CONNECTIONS=%d: running %d workers",
                n, settings.pg_max_connections, fit)
            n = fit
    # Refuse to start open, with unreadable keys/TLS files or a budget too small
    # for n processes — before a pool or a child process exists.
    preflight(settings, args.listen, workers=n)
    tools_files = {t.tools_file for t in settings.tenants.values()} | {settings.tools_file}
    if tools_files - {None}:
        # Checked once here, before the port is bound (build_app comes after the
        # bind): one line, and not one per worker.
        from service.app import load_webhooks

        for path in tools_files:
            load_webhooks(path)
    if n == 1:
        # build_app migrates; the re-key runs on the memory store it opened.
        priority.run(_serve(settings, args.listen, rekey=settings.migrate_on_start),
                     lanes=settings.front_lane_loop)
        return 0
    # The replica's connection budget is shared: each child gets its part.
    child_env = {"DIWANIYA_PG_MAX_CONNECTIONS": str(settings.pg_max_connections // n)}
    if settings.migrate_on_start and not asyncio.run(_migrate_before_workers(settings)):
        child_env["DIWANIYA_MIGRATE_ON_START"] = "true"
    return workers.supervise(
        n, args.listen or settings.listen,
        stop_timeout_s=settings.drain_delay_s + settings.drain_grace_s + 15,
        child_env=child_env)


async def _migrate_before_workers(settings: Settings) -> bool:
    """The supervisor's one migration; False when PostgreSQL cannot be reached now.

    Then the workers are started anyway — live, not ready, each waiting for the
    database like a single process (service.opening) — and each migrates once
    it answers: the migration and the re-key take advisory locks, so N at once
    is safe (several replicas starting together do the same). A permanent
    problem (a refused login, a bad URL) still exits 2 here.
    """
    dsn = settings.database_dsn()
    if not dsn:
        await _migrate(settings)
        return True
    from majlis.pg_budget import application_name
    from majlis.pg_probe import describe, open_failure, probe_postgres

    # One connection first: a refused one fails in milliseconds, where the
    # migration's pool would wait its whole open timeout before saying so.
    try:
        await probe_postgres(dsn, connect_timeout_s=settings.pg_connect_timeout_s,
                             application_name=application_name(settings.pg_application_name))
        await _migrate(settings)
        return True
    except Exception as exc:
        problem = open_failure(exc, retry_after_s=settings.retry_after_s)
        if problem is None:
            raise  # not the database: a bug keeps its traceback
        if not isinstance(problem, StoreUnavailable):
            raise problem from exc
        logging.getLogger("diwaniya").warning(
            "PostgreSQL at %s is not reachable (%s): starting the workers without migrating; "
            "each waits for the database, live and not ready, and migrates when it answers. "
            "Check DATABASE_URL and that the database is up", describe(dsn), problem.message)
        return False


async def _serve(settings: Settings, listen: str | None, *, reuse_port: bool = False,
                 rekey: bool = False) -> None:
    """Bind, open the app (waiting for PostgreSQL if need be), re-key, serve, close.

    The port is bound before the database is opened: a replica whose
    PostgreSQL is down is live (health ``""`` SERVING) and not ready, answers
    RPCs UNAVAILABLE and opens by itself when the database answers
    (service.opening, docs/outages.md). ``diwaniya listening on`` is printed
    once it serves; ``diwaniya waiting for the database`` while it waits.
    """
    from service import heap
    from service.app import build_server, configure_telemetry
    from service.opening import Pending
    from service.server import serve_until_signal, stop_on_signal

    stop = stop_on_signal()
    # Before the app: the server's interceptors need it, and the metrics of a
    # replica that waits for its database are worth seeing too.
    telemetry = configure_telemetry(settings)
    app: App | None = None
    try:
        if settings.metrics_listen:
            metrics_port = telemetry.serve_metrics(_worker_metrics_listen(settings))
            logging.getLogger("diwaniya").info("metrics on /metrics, port %d", metrics_port)
        pending: Pending[App] = Pending(retry_after_s=settings.retry_after_s)
        draining = asyncio.Event()
        server = build_server(settings, pending, draining, telemetry, listen=listen,
                              reuse_port=reuse_port)
        try:
            port = await server.start(opening=True)
        except (OSError, RuntimeError) as exc:
            # grpc says "Failed to bind …" as a RuntimeError: one line, status 2.
            raise ConfigurationError(
                f"cannot listen on {listen or settings.listen} (in use, or not an address of "
                "this host); set DIWANIYA_LISTEN or --listen") from exc
        host = (listen or settings.listen).rpartition(":")[0]
        try:
            app = await _open_app(settings, telemetry, stop, f"{host}:{port}")
            if app is not None and rekey:
                # On the store the app opened, not one opened, set up and closed
                # before it (~0.25 CPU-s of a SQLite start; a pool on PostgreSQL).
                # Its session advisory lock still comes after the pooling check.
                # Still pending meanwhile: RPCs UNAVAILABLE until it is done.
                await _rekey_store(app.store)
        except BaseException:
            await server.stop()
            raise
        if app is None:  # SIGTERM while waiting: never ready, so no drain delay
            await server.drain(delay=0)
            return
        # Everything built so far (modules, the graph, tables, pools, the server)
        # lives as long as the process: frozen out of the collector before the
        # first request (service.heap), so a full collection during turns no
        # longer walks it, nor does the one at interpreter exit (~0.4 CPU-s a process).
        # Before readiness and the "listening on" line: its one full collection
        # (~100 ms of a blocked loop) was the first request's wait.
        heap.settle()
        pending.set(app)
        await server.check_ready()  # readiness now, not at the next interval
        logging.getLogger("diwaniya").info(
            "serving diwaniya.v1.Conversations on %s:%d (%s, %s)", host, port,
            app.persistence.backend, "model" if settings.model_base_url else "offline responder")
        print(f"diwaniya listening on {host}:{port}", flush=True)
        await serve_until_signal(server, stop)
    finally:
        if app is not None:
            await app.close()  # closes the telemetry too
        else:
            telemetry.close()


async def _open_app(settings: Settings, telemetry: Telemetry, stop: asyncio.Event,
                    target: str) -> App | None:
    """build_app; on PostgreSQL, retried until the database answers (None: stopped first)."""
    from majlis.pg_budget import application_name
    from majlis.pg_probe import describe, probe_postgres
    from service.app import build_app
    from service.opening import open_when_reachable
    from service.workers import WAITING_PREFIX

    dsn = settings.database_dsn()
    if not dsn:  # SQLite: nothing to wait for, every failure is final
        return await build_app(settings, telemetry=telemetry)

    async def probe() -> None:
        await probe_postgres(dsn, connect_timeout_s=settings.pg_connect_timeout_s,
                             application_name=application_name(settings.pg_application_name))

    def waiting() -> None:
        print(f"{WAITING_PREFIX}{target}", flush=True)

    return await open_when_reachable(
        lambda: build_app(settings, telemetry=telemetry), probe=probe, stop=stop,
        where=describe(dsn), on_waiting=waiting, retry_after_s=settings.retry_after_s)


def _worker_metrics_listen(settings: Settings) -> str:
    """Worker N of ``serve --workers`` serves its own metrics on the base port + N.

    Each process has its own counters; one shared port would answer with a
    random worker's. Port 0 (tests) stays 0.
    """
    host, _, port = settings.metrics_listen.rpartition(":")
    index = int(os.environ.get("DIWANIYA_WORKER_INDEX", "0") or 0)
    return f"{host}:{int(port) + index}" if int(port) else settings.metrics_listen


async def _migrate(settings: Settings, *, rekey: bool = False) -> str:
    from majlis.persistence import open_sqlite

    dsn = settings.database_dsn()
    if dsn:
        from majlis.persistence import PoolOptions, open_postgres

        # The pooling check comes first (the migration lock is a session advisory
        # lock too), then the migration, both on these two pool connections.
        db = await open_postgres(dsn, prepare_threshold=settings.prepare_threshold, migrate=True,
                                 options=PoolOptions(min_size=1, max_size=2, lock_pool_size=1))
    else:
        db = await open_sqlite(settings.data_dir)
        # The rate-limit counters' file (PostgreSQL: a table migrate_postgres made).
        from majlis.limit_storage import SqliteCounters

        await (await SqliteCounters.open(settings.data_dir / "limits.sqlite3")).close()
    await db.close()
    keyed = await _rekey(settings, force=rekey)
    return f"migrated {'postgres' if dsn else f'sqlite in {settings.data_dir}'}; {keyed}"


async def _rekey(settings: Settings, *, force: bool = False) -> str:
    """Memory tables, and their rows re-keyed when keyed otherwise (memory.rekey).

    With the server's own key function (a camel store is re-keyed with camel);
    returns one line for stdout (:func:`_rekey_store`).
    """
    from memory import open_store
    from service.keys import search_key_function

    keys = await asyncio.to_thread(search_key_function, settings, os.environ)
    # Two connections: setup, then the re-key's one (it holds its lock on it).
    store = await open_store(settings.database_dsn(), keys=keys, pool_max=2,
                             sqlite_path=settings.data_dir / "memory.sqlite3")
    try:
        return await _rekey_store(store, force=force)
    finally:
        await store.close()


async def _rekey_store(store: object, *, force: bool = False) -> str:
    """Re-key ``store``'s rows when keyed otherwise; progress on stderr at most once a second."""
    import time

    from memory.rekey import RekeyableStore

    shown = 0.0

    def progress(done: int, total: int) -> None:
        nonlocal shown
        if done == total or time.monotonic() - shown >= 1.0:
            shown = time.monotonic()
            print(f"diwaniya: re-keying memory: {done}/{total} rows", file=sys.stderr, flush=True)

    if not isinstance(store, RekeyableStore):
        return "memory keys not recorded"
    report = await store.rekey(force=force, progress=progress)
    if not report.ran:
        return f"memory keys {report.after}"
    return (f"memory keys {report.before or 'unrecorded'} -> {report.after}: {report.rows} rows "
            f"re-keyed ({report.changed} changed) in {report.seconds:.1f} s")


async def _chat(args: argparse.Namespace) -> int:
    from service.chat import repl, run_once

    client_time = datetime.fromisoformat(args.client_time) if args.client_time else None
    async with _client(args) as client:
        if args.once is not None:
            return await run_once(client, args.once, user_id=args.user, thread_id=args.thread,
                                  country=args.country, timezone=args.timezone,
                                  client_time=client_time, as_json=args.json, out=sys.stdout)
        return await repl(client, user_id=args.user, thread_id=args.thread,
                          country=args.country, timezone=args.timezone)


async def _thread(args: argparse.Namespace) -> int:
    """``diwaniya thread release --thread T --user U`` → one JSON line with the thread's state."""
    async with _client(args) as client:
        try:
            view = await client.release_handoff(args.thread, user_id=args.user)
        except DiwaniyaError as exc:
            code = exc.rpc_status.code if exc.rpc_status else type(exc).__name__
            print(f"diwaniya: {code} ({exc.reason}): {exc.message}", file=sys.stderr)
            return 2
    print(json.dumps({"thread_id": view.thread_id, "handed_off": view.handed_off,
                      "messages": len(view.messages)}, ensure_ascii=False))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; bad settings or configuration exit 2 with one line on stderr."""
    args = _parser().parse_args(argv)
    for stream in (sys.stdout, sys.stderr):
        # Arabic must print even under LANG=C.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure:
            reconfigure(encoding="utf-8")
    try:
        # The client subcommands first: they need no server settings (nor pydantic).
        if args.command == "chat":
            return asyncio.run(_chat(args))
        if args.command == "thread":
            return asyncio.run(_thread(args))
        return _server_command(args)
    except DiwaniyaError as exc:
        print(f"diwaniya: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _server_command(args: argparse.Namespace) -> int:
    """serve, migrate and kb: the subcommands that run server code on this machine."""
    from service.logs import configure_logging
    from service.settings import load_settings, unknown_variables

    # Until the settings are read (they may be invalid): JSON at INFO, text withheld.
    configure_logging()
    # Settings first, before any heavy import: a bad value is one line, at once.
    settings = load_settings()
    configure_logging(format=settings.log_format, level=settings.log_level,
                      message_text=settings.log_message_text)
    for warning in unknown_variables(settings, os.environ):
        logging.getLogger("diwaniya.settings").warning("%s", warning)
    if args.command == "serve":
        return _serve_command(settings, args)
    if args.command == "migrate":
        print(asyncio.run(_migrate(settings, rekey=args.rekey)))
        return 0
    if args.command == "gc":
        from service import gc_cli

        return asyncio.run(gc_cli.run(settings, args))
    from service import kb_cli

    return asyncio.run(kb_cli.run(settings, args))


if __name__ == "__main__":
    sys.exit(main())
