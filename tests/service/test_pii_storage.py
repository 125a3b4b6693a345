"""No raw personal data anywhere, over gRPC, on both stores — checked in the database itself.

Every valid row of the labelled corpus (``tests/nlp/pii_corpus.tsv``: each
kind and country variant — Visa/Mastercard/Amex/mada, the nine IBANs, the
eight national IDs, the Gulf and Egyptian phones in three digit scripts,
e-mails) is sent as a turn, with the model (a fake) and with the offline
responder, budgets and ``request_id``s on so their tables have rows. Then,
per row: neither ``GetThread``, the streamed events, the model's requests
(``pii_to_model = "masked"``, the default), the log records, nor the stores
hold the raw value in any spelling — the SQLite files are scanned byte by
byte (WAL and journals included) *and* every row of every table is read;
every row of every PostgreSQL table (checkpoints and their writes, memories,
request records, the turn-event log, budget counters …) is read, bytea and
jsonb decoded. The module has its own PostgreSQL database, so nothing another
test wrote is scanned. The reply may echo the masked form. ``remember_fact``
masks what the model asks it to store.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest

from nlp import pii
from service import DiwaniyaClient, Settings, build_app
from tests.conftest import fresh_database
from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.nlp import pii_corpus
from tests.service.conftest import collect


@pytest.fixture(scope="module")
def pg_dsn() -> Iterator[str]:
    """This module's own database: the scans read every row, and only ours."""
    with fresh_database("diwaniya_pii") as dsn:
        yield dsn

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


def _leaks(blob: bytes | str, forms: list[str] | None = None) -> list[str]:
    # Text is searched as text: in UTF-8 a form's bytes occur in the blob's bytes
    # exactly where the form occurs in the text, and encoding a 12 MB log once
    # per form and per corpus row was most of the per-row tests' CPU.
    if isinstance(blob, str):
        return [f for f in (forms or _forms()) if f in blob]
    return [f for f in (forms or _forms()) if f.encode("utf-8") in blob]


def _value_bytes(value: Any) -> bytes:
    """What a stored value holds, as the scans search it (bytea and jsonb decoded)."""
    if isinstance(value, bytes | memoryview):
        return bytes(value)
    if value is None:
        return b""
    return (value if isinstance(value, str)
            else json.dumps(value, ensure_ascii=False, default=str)).encode("utf-8")


# No form holds a NUL, so joined on NULs the values leak exactly what each would
# alone: one search per form instead of one per form and per stored value.
_SEPARATOR = b"\x00"


def _values_leaks(values: list[bytes], forms: list[str]) -> list[str]:
    assert not any(_SEPARATOR.decode() in f for f in forms)
    return _leaks(_SEPARATOR.join(values), forms)


def _scan_sqlite(data_dir: Path, forms: list[str] | None = None,
                 rows: dict[str, int] | None = None) -> list[str]:
    """Byte scan of every file the SQLite stores wrote (databases, WAL, journals, freed
    pages), and every row of every table read back (a value may straddle two pages)."""
    forms = forms or _forms()
    files = [p for p in data_dir.rglob("*") if p.is_file()]
    assert any(p.name.startswith("threads.sqlite3") for p in files), files
    found = {leak for p in files for leak in _leaks(p.read_bytes(), forms)}
    values: list[bytes] = []
    for path in files:
        if path.suffix != ".sqlite3":
            continue
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            tables = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")]
            assert tables, path
            for table in tables:
                for row in conn.execute(f'SELECT * FROM "{table}"'):
                    if rows is not None:
                        rows[table] = rows.get(table, 0) + 1
                    values += (_value_bytes(value) for value in row)
    found.update(_values_leaks(values, forms))
    return sorted(found)


def _scan_postgres(dsn: str, forms: list[str] | None = None,
                   rows: dict[str, int] | None = None) -> list[str]:
    """Every row of every table, bytea and jsonb included."""
    forms = forms or _forms()
    values: list[bytes] = []
    with psycopg.connect(dsn) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) FROM "
            "information_schema.tables WHERE table_schema NOT IN ('pg_catalog', "
            "'information_schema') AND table_type = 'BASE TABLE'")]
        assert tables
        for table in tables:
            for row in conn.execute(f"SELECT * FROM {table}"):
                if rows is not None:
                    rows[table.rsplit(".", 1)[-1]] = rows.get(table.rsplit(".", 1)[-1], 0) + 1
                values += (_value_bytes(value) for value in row)
    return sorted(_values_leaks(values, forms))


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


# --- every valid corpus row, both stores, both responders ------------------------------

VALID = [c for c in pii_corpus.load() if c.mask and not c.note.startswith("KNOWN LIMIT")]
_TO_ASCII = str.maketrans("٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹", "01234567890123456789")
ROWS_PER_THREAD = 8  # a thread per few rows: histories stay short, the model sees several
MODEL_REPLY = "تمام، وصلتني المعلومة وبتابع لك الموضوع"
FAILURES = 4  # more than the model client's retries: the turn fails


def _row_forms(case: pii_corpus.Case) -> list[str]:
    """Every spelling a store might keep of ``case.raw``: as typed, in ASCII digits, without
    separators (in either), upper-cased, and JSON-escaped (ensure_ascii: «\\u0660…»)."""
    ascii_raw = case.raw.translate(_TO_ASCII)
    out = {case.raw, ascii_raw, re.sub(r"[ \-.()]", "", case.raw),
           re.sub(r"[ \-.()]", "", ascii_raw).lstrip("+"), ascii_raw.upper()}
    out |= {json.dumps(f)[1:-1] for f in list(out)}
    return sorted(f for f in out if len(f) >= 6)


@dataclass
class CorpusRun:
    """What each place held of each row's raw value, after the whole corpus was sent."""
    thread: dict[int, list[str]] = field(default_factory=dict)  # GetThread
    events: dict[int, list[str]] = field(default_factory=dict)  # the stream, every event
    shown: dict[int, str] = field(default_factory=dict)  # GetThread's text of the row's turn
    model: list[str] = field(default_factory=list)  # every request the fake model received
    logs: list[str] = field(default_factory=list)
    model_text: str = ""  # model and logs joined once, for the per-row searches
    log_text: str = ""
    store: list[str] = field(default_factory=list)  # forms found in the database
    rows: dict[str, int] = field(default_factory=dict)  # table → rows scanned
    failed: str = ""  # the status of the turn whose model failed
    held: bool = False  # a turn waits for approval (its interrupt is checkpointed)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


async def _failing_turn(client: DiwaniyaClient, run: CorpusRun) -> None:
    """A turn whose model fails after its retries: its request record and events are
    stored too, and must hold no raw value either."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await collect(client.send(VALID[0].text, user_id="corpus-failing",
                                  request_id=f"failing-{uuid.uuid4().hex}"))
    run.failed = err.value.code().name


def _approval_tool(folder: Path) -> Path:
    """A tool that waits for approval: a held turn's interrupt (its arguments, the text)
    is checkpointed — scanned too. Never approved, so never called."""
    path = folder / "tools.json"
    path.write_text(json.dumps([{
        "name": "cancel_order", "description_ar": "إلغاء طلب",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                       "required": ["order_id"]},
        "url": "http://127.0.0.1:9/cancel", "requires_approval": True,
        "examples": ["الغي طلبي", "ابي الغي الطلب"],
        "parameter_patterns": {"order_id": r"\d{4,}"}}], ensure_ascii=False), encoding="utf-8")
    return path


async def _held_turn(client: DiwaniyaClient, run: CorpusRun) -> None:
    phone = next(c.raw for c in VALID if c.detail == "sa_ae_phone")
    events = await collect(client.send(f"ابي الغي طلبي رقم 4411 وجوالي {phone}",
                                       user_id="corpus-held"))
    assert any(e.HasField("approval_required") for e in events), events
    run.held = True


async def _send_corpus(settings: Settings, run: CorpusRun, *, tag: str) -> None:
    app = await build_app(settings)
    server = app.server()
    await server.start()
    client = DiwaniyaClient(f"127.0.0.1:{server.port}")
    try:
        for first in range(0, len(VALID), ROWS_PER_THREAD):
            user, thread_id = f"corpus-{tag}-{first}", ""
            turns = list(enumerate(VALID))[first:first + ROWS_PER_THREAD]
            for i, case in turns:
                events = await collect(client.send(
                    case.text, user_id=user, thread_id=thread_id, country=case.country
                    if case.country != "-" else "", request_id=f"{tag}-{i}-{uuid.uuid4().hex}"))
                assert events[-1].WhichOneof("event") == "turn_completed", events[-1]
                thread_id = events[-1].thread_id
                run.events.setdefault(i, []).extend(
                    _leaks("\n".join(str(e) for e in events), _row_forms(case)))
            view = await client.get_thread(thread_id, user_id=user)
            users = [m.text for m in view.messages if m.role == "user"]
            for (i, case), text in zip(turns, users, strict=True):
                run.thread.setdefault(i, []).extend(
                    _leaks("\n".join(m.text for m in view.messages), _row_forms(case)))
                run.shown[i] = text
        if tag == "model":
            await _failing_turn(client, run)
        else:
            await _held_turn(client, run)
    finally:
        await client.close()
        await server.drain(0, delay=0)
        await app.close()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def corpus_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
               ) -> CorpusRun:
    """The corpus sent once per store with a (fake) model, once offline; then everything
    scanned. Module-scoped: the per-row tests below only read the result."""
    backend = str(request.param)
    values: dict[str, Any] = {
        "data_dir": tmp_path_factory.mktemp(f"pii-{backend}") / "data",
        "listen": "127.0.0.1:0", "drain_grace_s": 5.0,
        # Budgets on, so their counter tables hold rows to scan.
        "rate_limit": "10000/hour", "tenant_token_budget": 10_000_000,
        "thread_token_budget": 1_000_000,
    }
    if backend == "postgres":
        values["database_url"] = request.getfixturevalue("pg_dsn")
    model = ScriptedOpenAIServer()
    model.push(*(ScriptedReply.text(MODEL_REPLY, usage=(20, 8)) for _ in VALID))
    model.push(*(ScriptedReply.error(500, "upstream exploded") for _ in range(FAILURES)))
    records = _Records()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(records)
    root.setLevel(logging.DEBUG)
    run = CorpusRun()
    try:
        asyncio.run(_send_corpus(Settings(**values, model_base_url=model.base_url), run,
                                 tag="model"))
        tools = _approval_tool(tmp_path_factory.mktemp(f"pii-tools-{backend}"))
        asyncio.run(_send_corpus(Settings(**values, tools_file=tools), run, tag="offline"))
        run.model = [json.dumps(b, ensure_ascii=False) for b in model.bodies]
        assert len(run.model) > len(VALID), "every model turn reached the (fake) model"
    finally:
        root.removeHandler(records)
        root.setLevel(old_level)
        model.close()
    run.logs = records.lines
    run.model_text, run.log_text = "\n".join(run.model), "\n".join(run.logs)
    forms = sorted({f for case in VALID for f in _row_forms(case)})
    settings = Settings(**values)
    run.store = (_scan_postgres(settings.database_dsn(), forms, run.rows)
                 if backend == "postgres" else _scan_sqlite(settings.data_dir, forms, run.rows))
    return run


# Under xdist the tests reading corpus_run share one worker per store
# (tests/conftest.py XDIST_GROUPS), so the corpus is sent once per store.
@pytest.mark.parametrize("i", range(len(VALID)),
                         ids=[f"{c.kind}-{c.detail}-{c.country}-{n}" for n, c in enumerate(VALID)])
def test_corpus_value_is_held_nowhere(corpus_run: CorpusRun, i: int) -> None:
    case = VALID[i]
    forms = _row_forms(case)
    assert corpus_run.thread[i] == [] and corpus_run.events[i] == [], case
    # GetThread shows the message masked, otherwise as typed.
    assert corpus_run.shown[i] == pii.mask(case.text) != case.text
    assert [f for f in forms if f in corpus_run.store] == [], case
    assert not _leaks(corpus_run.model_text, forms), case
    assert not _leaks(corpus_run.log_text, forms), case


def test_corpus_run_scanned_something(corpus_run: CorpusRun) -> None:
    """The scans are not vacuous: the model saw masked forms, logs were written."""
    assert any("****" in body for body in corpus_run.model)
    assert corpus_run.logs
    assert corpus_run.failed == "UNAVAILABLE" and corpus_run.held
    rows = corpus_run.rows
    # Every kind of table the must-show names held rows when it was scanned.
    for table in ("checkpoints", "diwaniya_requests", "diwaniya_turn_events", "memory_records",
                  "diwaniya_threads"):
        assert rows.get(table), (table, rows)
    # Checkpoint writes tables («writes», «checkpoint_writes») are scanned too, but are empty
    # even after the failed and the held turn: the graph runs with durability="exit" behind
    # majlis.fence, which commits a turn's checkpoint whole — nothing is left as a write.
    assert rows.get("limit_counters") or rows.get("diwaniya_limit_counters"), rows  # budgets
