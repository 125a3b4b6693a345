"""The graph's shape: routes without langchain callbacks, a message's turn as one node
(issue #11: tasks and Python calls per turn).

LangGraph wraps a plain route function with ``trace=True``: each route then
starts and ends a chain run for no handler, in two asyncio tasks of its own.
The routes here are passed untraced; their names and input views are unchanged.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from majlis.compaction import CompactionPolicy
from majlis.culture import SeasonCalendar, ToneProfile
from majlis.graph import GraphDeps, _CompactionView, _EntryView, build_graph
from majlis.models.offline import OfflineResponder
from majlis.tenants import Tenant, Tenants


def _deps(compaction_tokens: int) -> GraphDeps:
    tenant = Tenant(ToneProfile(), SeasonCalendar(), OfflineResponder(),
                    compaction=CompactionPolicy(tokens=compaction_tokens))
    # Building the graph reads only the tenants (whether any compacts); the
    # rest is held by the nodes until a turn runs.
    unused = cast(Any, None)
    return GraphDeps(identifier=unused, tenants=Tenants(default=tenant), store=unused,
                     extractor=unused, tools=unused)


@pytest.mark.parametrize("compaction_tokens", [0, 2000])
def test_every_route_is_untraced_with_its_view(compaction_tokens: int) -> None:
    graph = build_graph(_deps(compaction_tokens), InMemorySaver())
    routes = {(source, name): spec for source, specs in graph.builder.branches.items()
              for name, spec in specs.items()}
    # A message's turn is one node (analyse … remember): no route after phase.
    expected = {("__start__", "_entry")}
    if compaction_tokens:
        expected |= {(end, "route") for end in ("analyse", "settle", "remember")}
    assert set(routes) == expected
    for spec in routes.values():
        assert getattr(spec.path, "trace", True) is False
    views = {name: spec.input_schema for (_source, name), spec in routes.items()}
    assert views["_entry"] is _EntryView
    if compaction_tokens:
        assert views["route"] is _CompactionView


def test_a_message_runs_as_one_node_and_an_approval_as_another() -> None:
    graph = build_graph(_deps(0), InMemorySaver())
    # "remember" alone is reached by no edge (ReleaseHandoff writes as it).
    assert set(graph.builder.nodes) == {"analyse", "settle", "remember"}
    assert {(a, b) for a, b in graph.builder.edges} == {
        ("analyse", "__end__"), ("settle", "__end__"), ("remember", "__end__")}
