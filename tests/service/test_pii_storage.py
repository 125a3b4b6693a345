"""No raw personal data anywhere, over gRPC, on both stores — checked in the database itself.

After turns carrying a card, a Kuwaiti civil ID, a Saudi IBAN, an Egyptian
national ID, phones in Latin and Arabic-Indic digits and an e-mail, neither
``GetThread``, the replay records, the memory tables nor the checkpoint blobs
hold the raw value (the SQLite files are scanned byte by byte, WAL included;
every PostgreSQL table row is read). The model request never holds it, nor
does a log line; the reply may echo the masked form. ``remember_fact`` masks
what the model asks it to store.
"""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import collect

SUFFIX = uuid.uuid4().hex[:8]
USER = f"pii-{SUFFIX}"
EMAIL = f"sara.{SUFFIX}@example.com"
# (as typed, what a store could hold instead: the same digits in ASCII without separators)
RAW: list[tuple[str, str]] = [
    ("٥٤٤٠ ١٢٣٤ ٥٦٧٨ ٩٠١٢", "5440123456789012"),  # Mastercard, Luhn-valid, Arabic-Indic
    ("302032404564", "302032404564"),  # Kuwaiti civil ID (mod-11)
    ("SA44 2000 0001 2345 6789 1234", "SA4420000001234567891234"),  # Saudi IBAN
    ("+965 9876 5432", "96598765432"),  # Kuwaiti mobile
    ("٠١٠٠١٢٣٤٥٦٧", "01001234567"),  # Egyptian mobile, Arabic-Indic
    ("29001011234567", "29001011234567"),  # Egyptian national ID
    (EMAIL, EMAIL),
]
TURNS = [
    f"السلام عليكم، بطاقتي {RAW[0][0]} انسحب منها مبلغ مرتين",
    f"رقمي المدني {RAW[1][0]} وايباني {RAW[2][0]} رجعوا الفلوس عليه",
    f"رقم جوالي {RAW[3][0]} وموبايل اخوي {RAW[4][0]} وايميلي {EMAIL}",
    f"الرقم القومي بتاعي {RAW[5][0]} يا باشا",
]


def _forms() -> list[str]:
    """Every spelling of a raw value a store might keep (typed, compact, JSON-escaped)."""
    out: list[str] = []
    for typed, compact in RAW:
        out += [typed, compact, json.dumps(typed)[1:-1]]
    return sorted(set(out))


def _leaks(blob: bytes | str) -> list[str]:
    data = blob if isinstance(blob, bytes) else blob.encode("utf-8")
    return [f for f in _forms() if f.encode("utf-8") in data]


def _scan_sqlite(data_dir: Path) -> list[str]:
    """Byte scan of every file the SQLite stores wrote (databases, WAL, journals)."""
    files = [p for p in data_dir.rglob("*") if p.is_file()]
    assert any(p.name.startswith("threads.sqlite3") for p in files), files
    return sorted({leak for p in files for leak in _leaks(p.read_bytes())})


def _scan_postgres(dsn: str) -> list[str]:
    """Every row of every table, bytea and jsonb included."""
    found: set[str] = set()
    with psycopg.connect(dsn) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) FROM "
            "information_schema.tables WHERE table_schema NOT IN ('pg_catalog', "
            "'information_schema') AND table_type = 'BASE TABLE'")]
        assert tables
        for table in tables:
            for row in conn.execute(f"SELECT * FROM {table}"):
                for value in row:
                    if isinstance(value, bytes | memoryview):
                        found.update(_leaks(bytes(value)))
                    elif value is not None:
                        found.update(_leaks(value if isinstance(value, str)
                                            else json.dumps(value, ensure_ascii=False,
                                                            default=str)))
    return sorted(found)


def _scan(svc: Any, backend: str) -> list[str]:
    if backend == "postgres":
        return _scan_postgres(svc.settings.database_dsn())
    return _scan_sqlite(svc.settings.data_dir)


async def test_offline_turns_store_no_raw_value(run_service, backend: str) -> None:
    async with run_service() as svc:
        thread_id = ""
        replies = []
        for text in TURNS:
            events = await collect(svc.client.send(text, user_id=USER, thread_id=thread_id,
                                                   country="KW"))
            thread_id = events[-1].thread_id
            replies.append(events[-1].turn_completed.text)
            started = events[0].turn_started.user_text
            assert not _leaks(started), started
        thread = await svc.client.get_thread(thread_id, user_id=USER)
        leaks = _scan(svc, backend)
    shown = [m.text for m in thread.messages]
    assert not _leaks("\n".join(shown)), shown
    # The user's display text is the masked text, otherwise as typed.
    assert shown[0] == "السلام عليكم، بطاقتي ****9012 انسحب منها مبلغ مرتين"
    assert "رقمي المدني ****4564 وايباني ****1234" in shown[2]
    assert "وايميلي s***@example.com" in shown[4]
    assert not _leaks("\n".join(replies))
    assert leaks == []


async def test_masked_facts_are_remembered(run_service, backend: str) -> None:
    """The memory still learns the (masked) phone: the extractor reads masked text."""
    user = f"{USER}-facts"
    async with run_service() as svc:
        await collect(svc.client.send(TURNS[2], user_id=user, country="KW"))
        store = svc.app.store
        hits = await store.search("default", "جوالي", user_id=user, k=10)
        leaks = _scan(svc, backend)
    texts = [h.record.text for h in hits]
    assert any("****5432" in t for t in texts), texts
    assert leaks == []


async def test_model_request_and_remember_fact_hold_no_raw_value(
    run_service, backend: str, openai_server: ScriptedOpenAIServer,
) -> None:
    user = f"{USER}-model"
    # The model asks remember_fact to store a raw card (as if a webhook had shown
    # it one): the stored memory and the tool result are masked all the same.
    openai_server.push(
        ScriptedReply.tool_call("remember_fact", {"fact": "بطاقة العميل 5440 1234 5678 9012"}),
        ScriptedReply.text("تم، سجلت بطاقتك المنتهية بـ ****9012 وبنرجع المبلغ خلال يومين"),
    )
    async with run_service(model_base_url=openai_server.base_url) as svc:
        events = await collect(svc.client.send(TURNS[0], user_id=user, country="KW"))
        leaks = _scan(svc, backend)
    bodies = json.dumps(openai_server.bodies, ensure_ascii=False)
    assert "****9012" in bodies  # the model saw the masked form …
    # … and never the raw one, except in its own tool call (the fake's script).
    first = json.dumps(openai_server.bodies[0], ensure_ascii=False)
    assert not _leaks(first), first
    second = openai_server.bodies[1]["messages"]
    tool_results = [m for m in second if m.get("role") == "tool"]
    assert tool_results and not _leaks(json.dumps(tool_results, ensure_ascii=False))
    assert "****9012" in events[-1].turn_completed.text
    assert leaks == []


async def test_log_lines_hold_no_raw_value(
    run_service, openai_server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture,
) -> None:
    """A failing model is logged (WARNING) with the thread and the failure: never the text."""
    caplog.set_level(logging.DEBUG)
    openai_server.push(*(ScriptedReply.error(500, "upstream exploded") for _ in range(4)))
    async with run_service(model_base_url=openai_server.base_url,
                           on_model_failure="offline") as svc:
        events = await collect(svc.client.send(TURNS[1], user_id=f"{USER}-log", country="KW"))
    assert events[-1].WhichOneof("event") == "turn_completed"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings, "the model failure must be logged"
    assert not _leaks(caplog.text)


async def test_raw_to_model_policy_still_stores_nothing_raw(
    run_service, backend: str, openai_server: ScriptedOpenAIServer,
) -> None:
    """``pii_to_model = "raw"``: the model gets this message as typed; the thread, the
    checkpoints and the reply stored keep the masked form even when the model echoes it."""
    user = f"{USER}-raw"
    openai_server.push(ScriptedReply.text(
        "تمام، سجلت البطاقة 5440 1234 5678 9012 وبنرجع المبلغ"))
    async with run_service(model_base_url=openai_server.base_url,
                           tenants={"default": {"pii_to_model": "raw"}}) as svc:
        events = await collect(svc.client.send(TURNS[0], user_id=user, country="KW"))
        thread = await svc.client.get_thread(events[-1].thread_id, user_id=user)
        leaks = _scan(svc, backend)
    last = openai_server.bodies[0]["messages"][-1]
    assert last["role"] == "user" and RAW[0][0] in last["content"]
    assert events[-1].turn_completed.text == "تمام، سجلت البطاقة ****9012 وبنرجع المبلغ"
    assert [m.text for m in thread.messages][1] == events[-1].turn_completed.text
    assert leaks == []
