"""``diwaniya gc`` and ``diwaniya migrate`` against a serving process on the same
database (both stores): a thread whose turn is in flight is left alone, the
commands say what to do when the database is not there, and migrate creates the
rate-limit table."""

from __future__ import annotations

import argparse
import json
import sqlite3
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from service import DiwaniyaClient, gc_cli
from service.settings import Settings
from tests.chaos.conftest import ServeProcess, serve_env
from tests.conftest import fresh_database
from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service._cli import run_cli
from tests.service._retention_db import ThreadRows
from tests.service.conftest import collect

REPLY = "أهلاً وسهلاً، كيف أقدر أساعدك اليوم؟"


@pytest.fixture(params=["sqlite", "postgres"])
def dsn(request: pytest.FixtureRequest) -> str | None:
    return str(request.getfixturevalue("pg_dsn")) if request.param == "postgres" else None


@pytest.fixture
def serve_processes() -> Iterator[list[ServeProcess]]:
    started: list[ServeProcess] = []
    yield started
    for proc in started:
        proc.kill()


@pytest.fixture
def fresh_pg() -> Iterator[str]:
    """A database of its own: migrate must find no table there already."""
    with fresh_database("diwaniya_gc") as dsn:
        yield dsn


async def _gc(settings: Settings, capsys: pytest.CaptureFixture[str]) -> dict[str, int]:
    capsys.readouterr()
    assert await gc_cli.run(settings, argparse.Namespace(dry_run=False, batch_size=50)) == 0
    return dict(json.loads(capsys.readouterr().out.splitlines()[-1]))


async def test_gc_leaves_a_turn_in_flight_on_another_process_intact(
    dsn: str | None, tmp_path: Path, openai_server: ScriptedOpenAIServer,
    serve_processes: list[ServeProcess], capsys: pytest.CaptureFixture[str],
) -> None:
    serve = ServeProcess(serve_env(tmp_path, dsn=dsn, model_base_url=openai_server.base_url),
                         tmp_path / "serve.log")
    serve_processes.append(serve)
    target = serve.start()
    # gc keeps one checkpoint and expires threads idle for an hour; the server
    # itself keeps everything, so only gc could touch the thread.
    strict = Settings(data_dir=tmp_path / "data", database_url=dsn, checkpoints_kept=1,
                      thread_idle_ttl_s=3600)
    db = ThreadRows(strict)
    hold = threading.Event()
    held = ScriptedReply.text(REPLY)
    held.hold = hold
    openai_server.push(ScriptedReply.text(REPLY), ScriptedReply.text(REPLY), held,
                       ScriptedReply.text(REPLY))
    user = f"gc-{uuid.uuid4().hex[:6]}"
    async with DiwaniyaClient(target) as client:
        first = await collect(client.send("السلام عليكم", user_id=user))
        thread_id = first[-1].thread_id
        await collect(client.send("عندي مشكلة في الطلب", user_id=user, thread_id=thread_id))
        db.age(thread_id, 7200)  # idle for two hours: gc would erase it, were it free
        running = client.send("متى يوصل الطلب؟", user_id=user, thread_id=thread_id).__aiter__()
        # turn_started is sent under the thread's lock: from here the turn holds it
        # (and the model, held, keeps it from committing).
        assert (await running.__anext__()).WhichOneof("event") == "turn_started"
        before = db.per_table(thread_id)
        try:
            report = await _gc(strict, capsys)
            after = db.per_table(thread_id)  # still held: the turn has not committed
        finally:
            hold.set()
        assert report["busy"] == 1 and report["threads_expired"] == 0
        # The running turn itself may still append to its event log (an event is
        # logged just after it is sent): gc removed nothing, and touched no other table.
        events = "diwaniya_turn_events"
        assert after.pop(events, 0) >= before.pop(events, 0)
        assert after == before
        rest = [e async for e in running]
        assert rest[-1].turn_completed.text == REPLY
        thread = await client.get_thread(thread_id, user_id=user)
        assert len(thread.messages) == 6
        # Once the turn committed the thread is active again: pruned, not expired.
        report = await _gc(strict, capsys)
        assert report["threads_expired"] == 0 and report["busy"] == 0
        assert db.checkpoints(thread_id) == 1
        more = await collect(client.send("شكراً", user_id=user, thread_id=thread_id))
        assert more[-1].HasField("turn_completed")


def test_gc_without_a_database_says_to_migrate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    run = run_cli(monkeypatch, capsys, {"DIWANIYA_DATA_DIR": str(tmp_path / "nowhere")}, "gc")
    assert run.returncode == 2
    assert "diwaniya migrate" in run.stderr and "DIWANIYA_DATA_DIR" in run.stderr


def test_gc_on_an_unmigrated_postgres_says_to_migrate(
    fresh_pg: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    run = run_cli(monkeypatch, capsys, {"DATABASE_URL": fresh_pg}, "gc", "--dry-run")
    assert run.returncode == 2
    assert "diwaniya migrate" in run.stderr and "diwaniya_threads" in run.stderr


def test_migrate_creates_the_rate_limit_table_on_both_stores(
    fresh_pg: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = run_cli(monkeypatch, capsys, {"DATABASE_URL": fresh_pg}, "migrate")
    assert run.returncode == 0, run.stderr
    with psycopg.connect(fresh_pg) as conn:
        (found,) = conn.execute("SELECT to_regclass('diwaniya_limit_counters')").fetchone() or (
            None,)
    assert found == "diwaniya_limit_counters"
    folder = tmp_path / "data"
    run = run_cli(monkeypatch, capsys, {"DIWANIYA_DATA_DIR": str(folder)}, "migrate")
    assert run.returncode == 0, run.stderr
    with sqlite3.connect(folder / "limits.sqlite3") as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "limit_counters" in tables
    # And gc runs on what migrate made: nothing to delete, every count 0.
    run = run_cli(monkeypatch, capsys, {"DATABASE_URL": fresh_pg}, "gc")
    assert run.returncode == 0, run.stderr
    assert not any(json.loads(run.stdout.splitlines()[-1]).values())
