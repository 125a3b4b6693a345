"""``diwaniya``: serve, migrate, chat, thread release, kb (service.kb_cli).

>>> main(["chat", "--once", "السلام عليكم", "--json"])   # doctest: +SKIP
{"thread_id": "…", "turn_id": "…", "seq": 1, "turn_started": {…}}
…
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

from pydantic import ValidationError

from diwaniya.errors import DiwaniyaError
from service import kb_cli
from service.settings import Settings


def _positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of processes ≥ 1")
    return int(value)


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

    sub.add_parser("migrate", help="create or upgrade the database tables, then exit")

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

    thread = sub.add_parser("thread", help="manage a thread on a running server")
    thsub = thread.add_subparsers(dest="thread_command", required=True)
    release = thsub.add_parser("release", help="give a handed-off thread back to the bot")
    release.add_argument("--thread", required=True, help="the thread id")
    release.add_argument("--user", required=True, help="the thread's user id")
    release.add_argument("--target", default="", help="HOST:PORT of the server")
    release.add_argument("--api-key", default=os.environ.get("DIWANIYA_API_KEY"))

    kb_cli.add_parser(sub)
    return p


def _serve_command(settings: Settings, args: argparse.Namespace) -> int:
    """One process, or a supervisor of N (service.workers) when more than one is wanted."""
    from service import workers

    if args.supervisor_pid:
        workers.die_with_parent(args.supervisor_pid)
        asyncio.run(_serve(settings, args.listen, reuse_port=True))
        return 0
    n = args.workers or settings.workers or workers.cpu_quota_workers()
    if n == 1:
        asyncio.run(_serve(settings, args.listen))
        return 0
    if settings.migrate_on_start:
        asyncio.run(_migrate(settings))
    return workers.supervise(
        n, args.listen or settings.listen,
        stop_timeout_s=settings.drain_delay_s + settings.drain_grace_s + 15)


async def _serve(settings: Settings, listen: str | None, *, reuse_port: bool = False) -> None:
    from service.app import build_app
    from service.server import serve_until_signal, stop_on_signal

    stop = stop_on_signal()

    if settings.traces == "console":
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(
            formatter=lambda span: span.to_json(indent=None) + "\n")))
        trace.set_tracer_provider(provider)
    app = await build_app(settings)
    try:
        server = app.server(listen=listen, reuse_port=reuse_port)
        port = await server.start()
        host = (listen or settings.listen).rpartition(":")[0]
        logging.getLogger("diwaniya").info(
            "serving diwaniya.v1.Conversations on %s:%d (%s, %s)", host, port,
            app.persistence.backend, "model" if settings.model_base_url else "offline responder")
        print(f"diwaniya listening on {host}:{port}", flush=True)
        await serve_until_signal(server, stop)
    finally:
        await app.close()


async def _migrate(settings: Settings) -> str:
    from majlis.persistence import migrate_postgres, open_sqlite
    from memory import open_store

    dsn = settings.database_dsn()
    if dsn:
        await migrate_postgres(dsn, prepare_threshold=settings.prepare_threshold)
        from majlis.persistence import open_postgres

        db = await open_postgres(dsn, migrate=True, min_size=1, max_size=2, lock_pool_size=1)
    else:
        db = await open_sqlite(settings.data_dir)
    await db.close()
    store = await open_store(dsn, sqlite_path=settings.data_dir / "memory.sqlite3")
    await store.close()
    return f"migrated {'postgres' if dsn else f'sqlite in {settings.data_dir}'}"


async def _chat(settings: Settings, args: argparse.Namespace) -> int:
    from service.chat import repl, run_once
    from service.client import DiwaniyaClient

    target = args.target or settings.listen.replace("0.0.0.0", "127.0.0.1")
    client_time = datetime.fromisoformat(args.client_time) if args.client_time else None
    async with DiwaniyaClient(target, api_key=args.api_key) as client:
        if args.once is not None:
            return await run_once(client, args.once, user_id=args.user, thread_id=args.thread,
                                  country=args.country, timezone=args.timezone,
                                  client_time=client_time, as_json=args.json, out=sys.stdout)
        return await repl(client, user_id=args.user, thread_id=args.thread,
                          country=args.country, timezone=args.timezone)


async def _thread(settings: Settings, args: argparse.Namespace) -> int:
    """``diwaniya thread release --thread T --user U`` → one JSON line with the thread's state."""
    import grpc

    from service.client import DiwaniyaClient

    target = args.target or settings.listen.replace("0.0.0.0", "127.0.0.1")
    async with DiwaniyaClient(target, api_key=args.api_key) as client:
        try:
            view = await client.release_handoff(args.thread, user_id=args.user)
        except grpc.aio.AioRpcError as exc:
            print(f"diwaniya: {exc.code().name}: {exc.details()}", file=sys.stderr)
            return 2
    print(json.dumps({"thread_id": view.thread_id, "handed_off": view.handed_off,
                      "messages": len(view.messages)}, ensure_ascii=False))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    for stream in (sys.stdout, sys.stderr):
        # Arabic must print even under LANG=C.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure:
            reconfigure(encoding="utf-8")
    logging.basicConfig(level=os.environ.get("DIWANIYA_LOG_LEVEL", "INFO"),
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        settings = Settings()
        if args.command == "serve":
            return _serve_command(settings, args)
        if args.command == "migrate":
            print(asyncio.run(_migrate(settings)))
            return 0
        if args.command == "chat":
            return asyncio.run(_chat(settings, args))
        if args.command == "thread":
            return asyncio.run(_thread(settings, args))
        return asyncio.run(kb_cli.run(settings, args))
    except DiwaniyaError as exc:
        print(f"diwaniya: {exc.message}", file=sys.stderr)
        return 2
    except ValidationError as exc:
        problems = "; ".join(
            f"DIWANIYA_{'_'.join(str(p) for p in e['loc']).upper()}: {e['msg']}"
            for e in exc.errors())
        print(f"diwaniya: invalid settings — {problems}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
