"""Full-text memory: user facts and a tenant knowledge base, searched in Arabic.

Index and query both go through one key function, injected by the caller
(``nlp.key_function``: stems plus whole words by default), so ``والكتاب``
in a document and ``كتاب`` in a question meet on the same key while the
original text is kept for display.

>>> store = await open_store(None, sqlite_path=Path("data/memory.sqlite3"),
...                          keys=nlp.key_function())  # doctest: +SKIP
>>> fact = NewRecord(tenant="t", kind=Kind.FACT, user_id="u", text="اسمي محمد")
>>> await store.put([fact])  # doctest: +SKIP
>>> (await store.search("t", "وش اسمي؟", user_id="u"))[0].snippet  # doctest: +SKIP
'[[اسمي]] محمد'
"""

from typing import TYPE_CHECKING, Any

from memory.chunking import Chunk, chunk_document
from memory.factory import open_store
from memory.facts import ExtractedFact, FactExtractor, RuleFactExtractor
from memory.kb import IngestReport, ingest_files
from memory.recall import RecallResult, recall, remember
from memory.records import Kind, MemoryRecord, NewRecord, SearchHit
from memory.sqlite_store import SqliteMemoryStore
from memory.store import MemoryStore
from memory.terms import KeyFunction

if TYPE_CHECKING:
    from memory.postgres_store import PostgresMemoryStore


def __getattr__(name: str) -> Any:
    """``memory.PostgresMemoryStore`` on first use: the SQLite default never loads asyncpg."""
    if name == "PostgresMemoryStore":
        from memory.postgres_store import PostgresMemoryStore

        return PostgresMemoryStore
    raise AttributeError(f"module 'memory' has no attribute {name!r}")

__all__ = [
    "Chunk",
    "ExtractedFact",
    "FactExtractor",
    "IngestReport",
    "KeyFunction",
    "Kind",
    "MemoryRecord",
    "MemoryStore",
    "NewRecord",
    "PostgresMemoryStore",
    "RecallResult",
    "RuleFactExtractor",
    "SearchHit",
    "SqliteMemoryStore",
    "chunk_document",
    "ingest_files",
    "open_store",
    "recall",
    "remember",
]
