"""A turn's fenced commit on PostgreSQL as ONE statement (docs/fencing.md).

The commit used to be a transaction: BEGIN, the fenced registry UPDATE, then
LangGraph's ``aput`` (a thread hop to serialise, a pipeline of blob inserts
and the checkpoint upsert), COMMIT — five round trips and the pipeline
machinery, the largest single cost of a turn. Here the same rows are written
by one data-modifying statement:

    WITH head AS (UPDATE diwaniya_threads … WHERE thread_id = … AND lease_epoch = token
                  RETURNING 1),
         req  AS (UPDATE diwaniya_requests … WHERE … AND EXISTS (SELECT 1 FROM head)),
         b0   AS (INSERT INTO checkpoint_blobs    SELECT … FROM (VALUES …) WHERE EXISTS (head)),
         c0   AS (INSERT INTO checkpoints         SELECT … WHERE EXISTS (head)),
         w0   AS (INSERT INTO checkpoint_writes   SELECT … FROM (VALUES …) WHERE EXISTS (head))
    SELECT 1 FROM head

Invariants kept: a single statement is atomic, so every row becomes visible or
none does; every insert is gated on ``head``, the UPDATE that row-locks the
thread and matches only while this turn's token is still its ``lease_epoch``
(under READ COMMITTED it re-checks a row a successor bumped meanwhile), so a
fenced-out turn writes nothing. The rows are exactly the ones
``AsyncPostgresSaver.aput``/``aput_writes`` write (same tables, columns,
conflict rules and serialisation), so the saver reads them back unchanged.

>>> sql, params = fenced_commit_sql("UPDATE … RETURNING 1", ["ثريد"], ops=[], serde=None)
>>> sql, params
('WITH head AS (UPDATE … RETURNING 1) SELECT 1 FROM head', ['ثريد'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.checkpoint.base import WRITES_IDX_MAP, get_serializable_checkpoint_metadata
from langgraph.checkpoint.serde.types import _DeltaSnapshot
from psycopg.types.json import Jsonb

_GATE = "WHERE EXISTS (SELECT 1 FROM head)"

# Explicit casts: parameters inside VALUES would otherwise be typed text, and
# a NULL text is not a bytea.
_BLOB_ROW = "(%s::text,%s::text,%s::text,%s::text,%s::text,%s::bytea)"
_BLOBS = ("INSERT INTO checkpoint_blobs (thread_id, checkpoint_ns, channel, version, type, blob)"
          " SELECT * FROM (VALUES {rows}) AS v " + _GATE +
          " ON CONFLICT (thread_id, checkpoint_ns, channel, version) DO NOTHING")
_CHECKPOINT = (
    "INSERT INTO checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,"
    " checkpoint, metadata) SELECT %s::text, %s::text, %s::text, %s::text, %s::jsonb, %s::jsonb "
    + _GATE + " ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id)"
    " DO UPDATE SET checkpoint = EXCLUDED.checkpoint, metadata = EXCLUDED.metadata")
_WRITE_ROW = ("(%s::text,%s::text,%s::text,%s::text,%s::text,%s::integer,%s::text,%s::text,"
              "%s::bytea)")
_WRITES = ("INSERT INTO checkpoint_writes (thread_id, checkpoint_ns, checkpoint_id, task_id,"
           " task_path, idx, channel, type, blob) SELECT * FROM (VALUES {rows}) AS v " + _GATE +
           " ON CONFLICT (thread_id, checkpoint_ns, checkpoint_id, task_id, idx) {action}")
_WRITES_UPSERT = ("DO UPDATE SET channel = EXCLUDED.channel, type = EXCLUDED.type,"
                  " blob = EXCLUDED.blob")

Op = tuple[str, tuple[Any, ...]]


def numbered(sql: str) -> str:
    """``sql`` with its ``%s`` placeholders as PostgreSQL's ``$1``, ``$2`` … for a raw cursor.

    The commit statement is built anew for every turn (its row counts vary)
    and runs to several kilobytes with a hundred parameters or more, past
    what psycopg caches its placeholder parsing for: its Python tokenizer
    re-read the whole statement on every commit. A raw cursor
    (``psycopg.AsyncRawCursor``) takes ``$n`` as they are. The statements
    built here hold no other ``%``.

    >>> numbered("SELECT %s::text, %s::int")
    'SELECT $1::text, $2::int'
    """
    parts = sql.split("%s")
    if "%" in "".join(parts):
        raise ValueError("numbered() takes only %s placeholders")
    out = [parts[0]]
    for i, part in enumerate(parts[1:], start=1):
        out.append(f"${i}")
        out.append(part)
    return "".join(out)


def supported(ops: Sequence[Op]) -> bool:
    """One checkpoint at most: two puts in one statement could touch one row twice."""
    return sum(1 for kind, _ in ops if kind == "put") <= 1


def fenced_commit_sql(head_sql: str, head_params: Sequence[Any], *, ops: Sequence[Op],
                      serde: Any, gated: Sequence[tuple[str, Sequence[Any]]] = (),
                      select: str = "SELECT 1 FROM head", select_params: Sequence[Any] = ()
                      ) -> tuple[str, list[Any]]:
    """The statement and its parameters: ``head_sql`` (the fenced UPDATE … RETURNING)
    gating the recorded saver ops and the caller's ``gated`` CTEs (``"name AS (…)"``,
    each already conditioned on ``head``), then ``select``, the main query (a row
    only when the fence matched: ``… FROM head``), parameters in text order."""
    parts = [f"WITH head AS ({head_sql})"]
    params = list(head_params)
    for cte, values in gated:
        parts.append(cte)
        params.extend(values)
    for n, (kind, args) in enumerate(ops):
        if kind == "put":
            ctes, values = _put(n, serde, *args)
        else:
            ctes, values = _writes(n, serde, *args)
        parts.extend(ctes)
        params.extend(values)
    return ", ".join(parts) + " " + select, [*params, *select_params]


def _put(n: int, serde: Any, config: Any, checkpoint: Any, metadata: Any,
         new_versions: Any) -> tuple[list[str], list[Any]]:
    """``AsyncPostgresSaver.aput``'s rows: primitive channel values inline in the
    checkpoint, the others as blobs for the channels whose version moved."""
    configurable = dict(config["configurable"])
    thread_id = configurable.pop("thread_id")
    checkpoint_ns = configurable.pop("checkpoint_ns")
    parent_id = configurable.pop("checkpoint_id", None)
    copy = checkpoint.copy()
    copy["channel_values"] = copy["channel_values"].copy()
    blob_values: dict[str, Any] = {}
    for k, v in checkpoint["channel_values"].items():
        if isinstance(v, _DeltaSnapshot):
            blob_values[k] = copy["channel_values"].pop(k)
            copy["channel_values"][k] = True
        elif v is None or isinstance(v, str | int | float | bool):
            pass
        else:
            blob_values[k] = copy["channel_values"].pop(k)
    ctes: list[str] = []
    params: list[Any] = []
    versions = {k: v for k, v in new_versions.items() if k in blob_values}
    if versions:
        rows = [(thread_id, checkpoint_ns, k, str(ver),
                 *(serde.dumps_typed(blob_values[k]) if k in blob_values else ("empty", None)))
                for k, ver in versions.items()]
        ctes.append(f"b{n} AS ({_BLOBS.format(rows=','.join([_BLOB_ROW] * len(rows)))})")
        params.extend(v for row in rows for v in row)
    ctes.append(f"c{n} AS ({_CHECKPOINT})")
    params.extend([thread_id, checkpoint_ns, checkpoint["id"], parent_id, Jsonb(copy),
                   Jsonb(get_serializable_checkpoint_metadata(config, metadata))])
    return ctes, params


def _writes(n: int, serde: Any, config: Any, writes: Sequence[tuple[str, Any]], task_id: str,
            task_path: str = "") -> tuple[list[str], list[Any]]:
    """``AsyncPostgresSaver.aput_writes``'s rows (special channels upsert, others insert once)."""
    if not writes:
        return [], []
    c = config["configurable"]
    rows = [(c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"], task_id, task_path,
             WRITES_IDX_MAP.get(channel, idx), channel, *serde.dumps_typed(value))
            for idx, (channel, value) in enumerate(writes)]
    action = _WRITES_UPSERT if all(w[0] in WRITES_IDX_MAP for w in writes) else "DO NOTHING"
    sql = _WRITES.format(rows=",".join([_WRITE_ROW] * len(rows)), action=action)
    return [f"w{n} AS ({sql})"], [v for row in rows for v in row]
