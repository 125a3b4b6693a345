"""The support sets (bench/data/support/<set>/), read one way by every bench that uses them.

bench/support.py, support_misses.py, support_recall.py, answer_gate_loso.py and
answer_curve.py each used to parse the sets themselves (or load support.py as a
module to borrow its parser): one reader here, so that a format change (a
column, a comment convention) cannot leave one bench reading the sets otherwise.

A set's folder holds ``docs/*.md`` (short MSA policies), ``questions.tsv``
(region, script, document, gold fact, question), ``unanswerable.tsv`` (region,
script, question) and ``threads.tsv`` (thread name, region, message: five turns
a thread). Blank lines and lines starting with ``#`` are skipped.

    >>> dev = load(DATA / "dev")
    >>> q = dev.questions[0]
    >>> q.region, q.doc, q.gold, q.text
    ('gulf', 'returns.md', '14 يوما', 'كم يوم عندي عشان ارجع الجوال؟')
    >>> dev.threads[0]
    ThreadTurn(name='t-gulf', region='gulf', text='السلام عليكم')

Also here: :func:`served`, the service on its embedded default with the benches'
clock, and :func:`turn`, one SendMessage read from its events — the end-to-end
benches (support.py, support_misses.py, answer_gate_loso.py) run the sets against it;
:func:`recall_chunks`, what the recall step hands the responder, for the benches
that replay the responder's stages; :func:`save_result`, a keyed results file.
A bench script imports this as ``bench._support_sets`` once its preamble has put
the repository (not bench/, whose nlp.py would shadow the package) on sys.path.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from majlis.culture import FixedClock
from majlis.models.types import Recalled
from majlis.nodes.recall import RECALL_DOCUMENTS
from memory import Kind, MemoryStore
from service import DiwaniyaClient, Settings, build_app
from service.app import App
from service.auth import hash_key

TENANT = "support"
DATA = Path(__file__).resolve().parent / "data" / "support"
RESULTS = Path(__file__).resolve().parent / "results"
# The support sets in bench/data/support (test6: held out in session 7;
# test7, test8: held out in session 8; test9, test10: session 9; test11, test12:
# session 10; test13: session 11; test14: session 12; test15: session 13 — each run once
# on the frozen tree).
SETS = (
    "dev", "test", "test2", "test3", "test4", "test5",
    "test6", "test7", "test8", "test9", "test10", "test11", "test12",
    "test13", "test14", "test15",
)  # fmt: skip
# The country a customer of each region would send (the service may use it as a prior).
COUNTRY = {"gulf": "SA", "egyptian": "EG", "levantine": "LB", "maghrebi": "MA",
           "iraqi": "IQ", "msa": ""}
# A plain working day with no national or religious occasion, so no seasonal
# greeting colours the replies.
CLOCK = datetime(2026, 11, 2, 7, tzinfo=UTC)


@dataclass(frozen=True)
class Question:
    """A row of questions.tsv: the gold fact is quoted from document ``doc``."""

    region: str
    script: str
    doc: str
    gold: str
    text: str


@dataclass(frozen=True)
class Unanswerable:
    """A row of unanswerable.tsv: no document of the set answers it."""

    region: str
    script: str
    text: str


@dataclass(frozen=True)
class ThreadTurn:
    """A row of threads.tsv: one message of the five-turn thread ``name``."""

    name: str
    region: str
    text: str


@dataclass(frozen=True)
class SupportSet:
    name: str
    docs: list[Path]
    questions: list[Question]
    unanswerable: list[Unanswerable]
    threads: list[ThreadTurn]


def _rows(path: Path) -> list[list[str]]:
    return [line.rstrip("\n").split("\t") for line in path.open(encoding="utf-8")
            if line.strip() and not line.startswith("#")]


def load(folder: Path) -> SupportSet:
    """The set in ``folder``; a row with the wrong number of columns is a TypeError."""
    return SupportSet(
        name=folder.name,
        docs=sorted((folder / "docs").glob("*.md")),
        questions=[Question(*row) for row in _rows(folder / "questions.tsv")],
        unanswerable=[Unanswerable(*row) for row in _rows(folder / "unanswerable.tsv")],
        threads=[ThreadTurn(*row) for row in _rows(folder / "threads.tsv")],
    )


def norm(text: str) -> str:
    """Whitespace folded, as gold facts and replies are compared.

    >>> norm(" يعاد المبلغ\\n خلال  ١٤ يوماً ")
    'يعاد المبلغ خلال ١٤ يوماً'
    """
    return re.sub(r"\s+", " ", text).strip()


async def recall_chunks(store: MemoryStore, text: str, *, tenant: str = TENANT,
                        k: int = RECALL_DOCUMENTS) -> list[Recalled]:
    """The knowledge-base chunks the recall step hands the responder for ``text``
    (majlis.nodes.recall: the first ``k`` documents, as :class:`Recalled`)."""
    hits = await store.search(tenant, text, kinds={Kind.DOCUMENT}, k=k)
    return [Recalled(h.record.id, "document", h.record.title, h.record.text, h.snippet,
                     float(h.score)) for h in hits]


def save_result(bench: str, key: str, result: dict[str, Any]) -> None:
    """``result`` as entry ``key`` of bench/results/<bench>.json, the other entries kept
    (one per set, or per store: each run measures one)."""
    out = RESULTS / f"{bench}.json"
    saved = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    saved[key] = result
    out.write_text(json.dumps(saved, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


@dataclass(frozen=True)
class Turn:
    reply: str
    dialect: str  # the thread's dialect (turn_completed.dialect)
    voice: str  # what the reply was written in: a region when mirrored, else msa/neutral
    quoted: bool  # the reply quotes a document
    thread_id: str


def reply_voice(dialect: str, reply_register: str) -> str:
    """The reply's own voice: the thread's region only when the reply mirrored it.

    >>> reply_voice("gulf", "dialect"), reply_voice("levantine", "neutral")
    ('gulf', 'neutral')
    """
    if reply_register == "dialect":
        return dialect or "neutral"
    return reply_register or "neutral"


async def turn(client: DiwaniyaClient, text: str, *, user: str, thread: str = "",
               country: str = "") -> Turn:
    """One SendMessage turn, read from its events."""
    events = [e async for e in client.send(text, user_id=user, thread_id=thread, country=country)]
    done = events[-1].turn_completed
    quoted = any(e.HasField("memory_cited") and e.memory_cited.quoted for e in events)
    return Turn(norm(done.text), done.dialect, reply_voice(done.dialect, done.reply_register),
                quoted, events[-1].thread_id)


# The benches' client key, configured as its hash the way docs/security.md asks
# of a deployment: a plain key would print service.auth's plain-text warning
# once per set. The client still sends the key itself.
BENCH_KEY = "bench"


def bench_settings(tmp: Path) -> Settings:
    """The benches' service settings under ``tmp``: SQLite, any free port, BENCH_KEY → TENANT."""
    return Settings(data_dir=tmp / "data", listen="127.0.0.1:0",
                    api_keys={hash_key(BENCH_KEY): TENANT})


@asynccontextmanager
async def served(tmp: Path) -> AsyncIterator[tuple[App, DiwaniyaClient]]:
    """The service on its embedded default under ``tmp`` (SQLite, offline responder,
    the benches' clock and key), started on 127.0.0.1:0, and a client of it."""
    app = await build_app(bench_settings(tmp), clock=FixedClock(CLOCK))
    server = app.server()
    await server.start()
    try:
        async with DiwaniyaClient(f"127.0.0.1:{server.port}", api_key=BENCH_KEY) as client:
            yield app, client
    finally:
        await server.drain(0, delay=0)
        await app.close()
