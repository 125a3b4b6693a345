"""DeferredSaver refuses graph writes made outside a turn's fenced commit.

Every checkpoint reaches the database through ``PendingCheckpoint.apply`` on
the commit's own connection. A graph write that arrives at the shared saver
with no pending checkpoint in its context escaped its turn (a stream closed by
the garbage collector in another context, say); written through, it would
become the thread's latest checkpoint without a fence — a fork.
"""

from __future__ import annotations

import logging
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import aiosqlite
import pytest
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import END, START, StateGraph

from majlis.fence import DeferredSaver, PendingCheckpoint, deferring


class _State(TypedDict, total=False):
    messages: Annotated[list[str], operator.add]


def _reply(state: _State) -> dict[str, Any]:
    return {"messages": [f"أهلين، {state['messages'][-1]}"]}


def _graph(saver: DeferredSaver) -> Any:
    builder = StateGraph(_State)
    builder.add_node("reply", _reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=saver)


async def test_a_write_outside_a_turns_deferral_is_refused_and_nothing_is_written(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with aiosqlite.connect(tmp_path / "c.sqlite") as conn:
        inner = AsyncSqliteSaver(conn)
        await inner.setup()
        graph = _graph(DeferredSaver(inner))
        config = {"configurable": {"thread_id": "t-1"}}
        with caplog.at_level(logging.WARNING, logger="diwaniya.fence"), \
                pytest.raises(RuntimeError, match="unfenced checkpoint write for thread t-1"):
            await graph.ainvoke({"messages": ["السلام عليكم"]}, config, durability="exit")
        assert await inner.aget_tuple(config) is None
        assert "refused an unfenced checkpoint write for thread t-1" in caplog.text

        # The same run inside a turn's deferral records its writes for the commit.
        pending = PendingCheckpoint("t-1", inner.serde, fresh=True)
        with deferring(pending):
            await graph.ainvoke({"messages": ["السلام عليكم"]}, config, durability="exit")
        assert pending.checkpoint is not None
        assert await inner.aget_tuple(config) is None
        await pending.apply(inner)
        head = await inner.aget_tuple(config)
        assert head is not None
        assert head.checkpoint["channel_values"]["messages"] == ["السلام عليكم",
                                                                 "أهلين، السلام عليكم"]
