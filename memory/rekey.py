"""Re-keying: stored index keys follow the key function that queries use.

Index keys are derived when a row is written and stored with it (SQLite
``memory_records.keys``, PostgreSQL ``memory_records.tsv``), while a query is
keyed by the running code.  When the key function changes (a new
``nlp.KEYS_VERSION``, or ``DIWANIYA_SEARCH_KEYS`` switched between builtin and
camel) old rows would keep old keys and silently stop matching: «ثلاثة أيام»
written before counts became digits is not found by «3 أيام».

Each store therefore records the fingerprint (``nlp.keys_fingerprint``) its
rows were keyed with, and ``rekey()`` recomputes every row's keys from its
stored title and text exactly as ``put`` does (memory.text_keys), in
keyset-paged batches, each batch one transaction through the stores' own
statistics paths (SQLite triggers; PostgreSQL term/stat deltas under the
tenant locks), so document frequencies, lengths and pools stay those of a
fresh ingest.  Rows whose keys do not change are not written.  The
fingerprint is recorded only after the last batch: an interrupted run is
simply run again (rows already done are read, found equal and skipped).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["BATCH_ROWS", "Progress", "RekeyReport", "RekeyableStore", "needs_rekey",
           "warn_if_stale"]

_log = logging.getLogger("diwaniya.memory")

# Rows read and re-keyed per transaction: a batch holds the write lock
# (SQLite) or its tenants' locks (PostgreSQL) only while it is written, and
# keying is done before the transaction, so writers wait a few ms at most.
BATCH_ROWS = 500

# Called after each batch with (rows done, rows in the store at the start).
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class RekeyReport:
    """What one ``rekey()`` did.  ``before`` is the recorded fingerprint
    (``None``: none recorded), ``after`` the one recorded now."""

    before: str | None
    after: str
    rows: int  # rows read and keyed
    changed: int  # rows whose stored keys were rewritten
    seconds: float
    ran: bool  # False: the recorded fingerprint already matched (no-op)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def needs_rekey(recorded: str | None, current: str, *, has_rows: bool) -> bool:
    """Whether rows keyed under ``recorded`` must be re-keyed for ``current``.

    No fingerprint and no rows: nothing to re-key (the fingerprint is just
    recorded).  No fingerprint but rows: written before fingerprints, by an
    older key function.

    >>> needs_rekey(None, "builtin/2", has_rows=False)
    False
    >>> needs_rekey(None, "builtin/2", has_rows=True)
    True
    >>> needs_rekey("builtin/2", "builtin/2", has_rows=True)
    False
    """
    if recorded is None:
        return has_rows
    return recorded != current


def warn_if_stale(recorded: str | None, current: str, *, where: str) -> None:
    """Log (at setup) that rows keyed otherwise wait for `diwaniya migrate`."""
    if recorded != current:
        _log.warning("memory rows in %s were keyed as %s, this process keys as %s: some "
                     "may not be found until `diwaniya migrate` (or a start with "
                     "DIWANIYA_MIGRATE_ON_START) re-keys them", where,
                     recorded or "(before key fingerprints)", current)


@runtime_checkable
class RekeyableStore(Protocol):
    """A store that records its keys fingerprint and can re-key its rows."""

    async def keys_fingerprint(self) -> str | None:
        """The fingerprint recorded for the stored rows' keys, or ``None``."""
        ...

    async def rekey(self, *, force: bool = False, progress: Progress | None = None,
                    batch: int = BATCH_ROWS) -> RekeyReport:
        """Re-key every row when the recorded fingerprint differs (always with ``force``)."""
        ...
