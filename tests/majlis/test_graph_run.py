"""majlis.graph_run: a node's events reach the turn live, in order, without LangGraph's
stream machinery; closing the run ends a node still running; a failure follows its events."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from majlis.events import PhaseChanged, TextDelta
from majlis.graph_run import DONE, GraphRun, event_writer


class _State(TypedDict, total=False):
    text: str


def _graph(node: Callable[[_State], Coroutine[Any, Any, dict[str, Any]]]) -> Any:
    builder = StateGraph(_State)
    builder.add_node("turn", node)  # type: ignore[call-overload]  # a plain coroutine node
    builder.add_edge(START, "turn")
    builder.add_edge("turn", END)
    return builder.compile(checkpointer=InMemorySaver())


CONFIG: Any = {"configurable": {"thread_id": "t1"}}


async def test_events_arrive_while_the_node_still_runs() -> None:
    reply_ready = asyncio.Event()

    async def node(state: _State) -> dict[str, Any]:
        write = event_writer()
        write(PhaseChanged(current="greeting"))
        await reply_ready.wait()  # a streaming model, still answering
        write(TextDelta(text="وعليكم السلام"))
        return {"text": "وعليكم السلام"}

    async with GraphRun(_graph(node), {"text": "السلام عليكم"}, CONFIG) as run:
        first = await run.next()  # read before the node could finish
        reply_ready.set()
        rest = [event async for event in _drain(run)]
    assert first == PhaseChanged(current="greeting")
    assert rest == [TextDelta(text="وعليكم السلام")]


async def test_a_failure_comes_after_the_events_before_it() -> None:
    async def node(state: _State) -> dict[str, Any]:
        event_writer()(PhaseChanged(current="transaction"))
        raise LookupError("the model failed")

    seen: list[Any] = []
    with pytest.raises(LookupError, match="the model failed"):
        async with GraphRun(_graph(node), {"text": "وين طلبي؟"}, CONFIG) as run:
            async for event in _drain(run):
                seen.append(event)
    assert seen == [PhaseChanged(current="transaction")]


async def test_closing_the_run_ends_a_node_still_running() -> None:
    ended: list[str] = []

    async def node(state: _State) -> dict[str, Any]:
        event_writer()(PhaseChanged(current="greeting"))
        try:
            await asyncio.Event().wait()  # never answers
        finally:
            ended.append("closed")
        return {}

    async with GraphRun(_graph(node), {"text": "هلا"}, CONFIG) as run:
        assert await run.next() == PhaseChanged(current="greeting")
    # Left while the node waited: it was cancelled and had ended before the exit returned.
    assert ended == ["closed"]


async def test_the_node_runs_in_the_run_task_without_langgraph_stream_tasks() -> None:
    """No custom stream mode: LangGraph runs the lone node inline (no executor task,
    no stream waiter task) — the one task is the run's own."""
    made: list[str] = []
    loop = asyncio.get_running_loop()

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
        made.append(getattr(coro, "__qualname__", type(coro).__name__))
        return asyncio.Task(coro, loop=loop, **kwargs)

    async def node(state: _State) -> dict[str, Any]:
        event_writer()(TextDelta(text="تمام"))
        await asyncio.sleep(0)
        event_writer()(TextDelta(text="، أبشر"))
        return {"text": "تمام، أبشر"}

    graph = _graph(node)
    loop.set_task_factory(factory)
    try:
        async with GraphRun(graph, {"text": "ابي ارجع الطلب"}, CONFIG) as run:
            events = [event async for event in _drain(run)]
    finally:
        loop.set_task_factory(None)
    assert events == [TextDelta(text="تمام"), TextDelta(text="، أبشر")]
    assert not [name for name in made if "wait" in name.lower()], made
    assert "GraphRun._drive" in made


async def _drain(run: GraphRun) -> Any:
    while (event := await run.next()) is not DONE:
        yield event
