"""The one-statement fenced commit (majlis.pg_commit) writes the rows LangGraph's saver writes.

Two threads run the same two turns of a small graph (a list channel stored as
a blob, a text channel inline); one thread's deferred writes are applied by
``AsyncPostgresSaver`` itself, the other's by the one statement. Their rows
and the state read back must be the same; a commit whose fence does not match
writes nothing at all.
"""

from __future__ import annotations

import json
import operator
import re
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, StateGraph
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from majlis import pg_commit
from majlis.fence import DeferredSaver, PendingCheckpoint, deferring

_RANDOM_PART = re.compile(r"(\d{32})\.\d+\.\d+")


class _State(TypedDict, total=False):
    messages: Annotated[list[dict[str, Any]], operator.add]
    phase: str


def _reply(state: _State) -> dict[str, Any]:
    text = state["messages"][-1]["text"]
    return {"messages": [{"role": "assistant", "text": f"أهلين، {text}"}], "phase": "تحية"}


@pytest.fixture
async def saver(pg_dsn: str) -> AsyncIterator[AsyncPostgresSaver]:
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        pg_dsn, min_size=1, max_size=2, open=False,
        kwargs={"autocommit": True, "row_factory": dict_row})
    await pool.open(wait=True)
    real = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
    await real.setup()
    try:
        yield real
    finally:
        await pool.close()


async def _turn(saver: AsyncPostgresSaver, thread: str, text: str, *, one_statement: bool,
                head: str = "SELECT 1") -> bool:
    builder = StateGraph(_State)
    builder.add_node("reply", _reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    graph = builder.compile(checkpointer=DeferredSaver(saver))
    pending = PendingCheckpoint(thread, saver.serde)
    with deferring(pending):
        await graph.ainvoke({"messages": [{"role": "user", "text": text}]},
                            {"configurable": {"thread_id": thread}}, durability="exit")
    assert pending.checkpoint is not None and pg_commit.supported(pending.ops)
    pool: Any = saver.conn
    async with pool.connection() as conn:
        if not one_statement:
            await pending.apply(AsyncPostgresSaver(conn, serde=saver.serde))
            return True
        sql, params = pg_commit.fenced_commit_sql(head, [], ops=pending.ops, serde=saver.serde)
        cur = await conn.execute(sql, params)
        return await cur.fetchone() is not None


async def _rows(saver: AsyncPostgresSaver, thread: str) -> dict[str, Any]:
    pool: Any = saver.conn
    async with pool.connection() as conn:
        blobs = await (await conn.execute(
            "SELECT channel, version, type, blob FROM checkpoint_blobs WHERE thread_id = %s"
            " ORDER BY channel, version", (thread,))).fetchall()
        points = await (await conn.execute(
            "SELECT checkpoint, metadata, parent_checkpoint_id IS NULL AS root FROM checkpoints"
            " WHERE thread_id = %s ORDER BY checkpoint_id", (thread,))).fetchall()
        writes = await (await conn.execute(
            "SELECT channel, type, blob, idx FROM checkpoint_writes WHERE thread_id = %s"
            " ORDER BY checkpoint_id, task_id, idx", (thread,))).fetchall()
    for point in points:
        for volatile in ("id", "ts"):
            point["checkpoint"].pop(volatile, None)
        # Channel versions end in a random fraction ("…0003.0.2598…"): keep the counter.
        point["checkpoint"] = json.loads(_RANDOM_PART.sub(r"\1", json.dumps(point["checkpoint"])))
    for blob in blobs:
        blob["version"] = _RANDOM_PART.sub(r"\1", blob["version"])
    return {"blobs": blobs, "checkpoints": points, "writes": writes}


async def test_one_statement_writes_what_the_saver_writes(saver: AsyncPostgresSaver) -> None:
    by_saver, by_statement = uuid.uuid4().hex, uuid.uuid4().hex
    for text in ("السلام عليكم", "وين طلبي؟"):
        assert await _turn(saver, by_saver, text, one_statement=False)
        assert await _turn(saver, by_statement, text, one_statement=True)
    expected = await _rows(saver, by_saver)
    assert expected["blobs"] and len(expected["checkpoints"]) == 2
    assert await _rows(saver, by_statement) == expected
    state = await saver.aget_tuple({"configurable": {"thread_id": by_statement}})
    assert state is not None
    values = state.checkpoint["channel_values"]
    assert [m["text"] for m in values["messages"]] == [
        "السلام عليكم", "أهلين، السلام عليكم", "وين طلبي؟", "أهلين، وين طلبي؟"]
    assert values["phase"] == "تحية"


async def test_a_fenced_out_commit_writes_nothing(saver: AsyncPostgresSaver) -> None:
    thread = uuid.uuid4().hex
    # The head statement matches no row, as when the turn's token moved on.
    assert not await _turn(saver, thread, "مرحبا", one_statement=True,
                           head="SELECT 1 WHERE false")
    assert await _rows(saver, thread) == {"blobs": [], "checkpoints": [], "writes": []}
    assert await saver.aget_tuple({"configurable": {"thread_id": thread}}) is None
