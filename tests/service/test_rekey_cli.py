"""``diwaniya migrate`` re-keys memory rows keyed by an older key function
(memory.rekey), on both stores: progress on stderr, one line on stdout, a
second run does nothing, ``--rekey`` forces it.  The rows are written as a
release before counts became digits wrote them (tests/memory/test_memory_rekey.py)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nlp.keys
from memory import Kind, NewRecord, open_store
from nlp import KEYS_VERSION
from tests.conftest import fresh_database
from tests.memory.test_memory_rekey import pre_count_keys
from tests.service._cli import run_cli

OLD = f"builtin/{KEYS_VERSION - 1}"
NOW = f"builtin/{KEYS_VERSION}"
TEXTS = {"refund": "يعاد المبلغ إلى البطاقة خلال ثلاثة أيام عمل.",
         "fee": "رسوم إصدار البطاقة البديلة 25 ريالاً.",
         "hours": "ساعات العمل من الأحد إلى الخميس."}


@pytest.fixture(params=["sqlite", "postgres"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    folder = {"DIWANIYA_DATA_DIR": str(tmp_path / "data")}
    if request.param == "sqlite":
        yield folder
        return
    with fresh_database("diwaniya_rekey_cli") as dsn:
        yield {**folder, "DATABASE_URL": dsn}


async def _write_old_rows(env: dict[str, str]) -> None:
    store = await open_store(env.get("DATABASE_URL"), keys=pre_count_keys, fingerprint=OLD,
                             sqlite_path=Path(env["DIWANIYA_DATA_DIR"]) / "memory.sqlite3")
    try:
        await store.put([NewRecord(tenant="acme", kind=Kind.DOCUMENT, id=f"{d}#0", doc_id=d,
                                   title=d, text=text) for d, text in TEXTS.items()])
    finally:
        await store.close()


async def _top(env: dict[str, str], query: str) -> str:
    store = await open_store(env.get("DATABASE_URL"), keys=nlp.keys.stem_and_surface_keys,
                             sqlite_path=Path(env["DIWANIYA_DATA_DIR"]) / "memory.sqlite3")
    try:
        hits = await store.search("acme", query, kinds={Kind.DOCUMENT}, k=1)
    finally:
        await store.close()
    return hits[0].record.id if hits else ""


def test_migrate_rekeys_old_rows_once_and_rekey_forces_it(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    asyncio.run(_write_old_rows(env))
    run = run_cli(monkeypatch, capsys, env, "migrate")
    assert run.returncode == 0, run.stderr
    assert "diwaniya: re-keying memory: 3/3 rows" in run.stderr
    last = run.stdout.splitlines()[-1]
    assert re.search(rf"; memory keys {OLD} -> {NOW}: 3 rows re-keyed \(1 changed\) in [0-9.]+ s$",
                     last), last
    assert asyncio.run(_top(env, "ترجع الفلوس بعد 3 ايام؟")) == "refund#0"

    again = run_cli(monkeypatch, capsys, env, "migrate")
    assert again.returncode == 0, again.stderr
    assert "re-keying" not in again.stderr
    assert again.stdout.splitlines()[-1].endswith(f"; memory keys {NOW}")

    forced = run_cli(monkeypatch, capsys, env, "migrate", "--rekey")
    assert forced.returncode == 0, forced.stderr
    assert "diwaniya: re-keying memory: 3/3 rows" in forced.stderr
    assert f"memory keys {NOW} -> {NOW}: 3 rows re-keyed (0 changed)" in forced.stdout


def test_serve_with_migrate_on_start_rekeys_before_serving(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """A real ``serve`` (build_app, server started) re-keys before its first request, on
    the one memory store it serves with: it used to open, set up and close another first."""
    import memory
    import service.app
    import service.server

    asyncio.run(_write_old_rows(env))
    served: list[tuple[str, int]] = []
    opened: list[str] = []
    real_open = memory.open_store

    async def counted_open(*args: Any, **kwargs: Any) -> Any:
        opened.append("memory")
        return await real_open(*args, **kwargs)

    async def serve_until_signal(server: object, stop: object) -> None:
        # Serving: what a request would find, and how many stores were opened so far.
        served.append((await _top(env, "ترجع الفلوس بعد 3 ايام؟"), len(opened)))

    monkeypatch.setattr(memory, "open_store", counted_open)
    monkeypatch.setattr(service.app, "open_store", counted_open)
    monkeypatch.setattr(service.server, "serve_until_signal", serve_until_signal)
    run = run_cli(monkeypatch, capsys, {**env, "DIWANIYA_WORKERS": "1",
                                        "DIWANIYA_LISTEN": "127.0.0.1:0",
                                        "DIWANIYA_MIGRATE_ON_START": "true"}, "serve")
    assert run.returncode == 0, run.stderr
    assert "diwaniya: re-keying memory: 3/3 rows" in run.stderr
    assert "diwaniya listening on 127.0.0.1:" in run.stdout
    assert served == [("refund#0", 1)]
