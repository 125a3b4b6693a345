"""The graph's shape: a turn is one LangGraph node, the one route left is untraced
(issue #11: tasks and Python calls per turn).

A message's analyse … remember and an approval's settle → remember run inside
one node (majlis.graph._turn): no route at START or after phase, no second
node. LangGraph wraps a plain route function with ``trace=True`` — a chain run
for no handler, in two asyncio tasks of its own — so compaction's route, where
a tenant compacts, is passed untraced, with its narrow view unchanged.
"""

from __future__ import annotations

from typing import Any, cast

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from majlis.compaction import CompactionPolicy
from majlis.culture import SeasonCalendar, ToneProfile
from majlis.graph import GraphDeps, _CompactionView, build_graph
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
def test_the_only_route_is_compactions_untraced_with_its_view(compaction_tokens: int) -> None:
    graph = build_graph(_deps(compaction_tokens), InMemorySaver())
    routes = {(source, name): spec for source, specs in graph.builder.branches.items()
              for name, spec in specs.items()}
    expected = {(end, "route") for end in ("turn", "remember")} if compaction_tokens else set()
    assert set(routes) == expected
    for spec in routes.values():
        assert getattr(spec.path, "trace", True) is False
        assert spec.input_schema is _CompactionView


def test_a_turn_runs_as_one_node() -> None:
    graph = build_graph(_deps(0), InMemorySaver())
    # "remember" alone is reached by no edge (ReleaseHandoff writes as it).
    assert set(graph.builder.nodes) == {"turn", "remember"}
    assert {(a, b) for a, b in graph.builder.edges} == {
        ("__start__", "turn"), ("turn", "__end__"), ("remember", "__end__")}


def test_the_load_bench_anchors_on_the_services_own_node_count() -> None:
    # bench/load.py's bare graph has SERVICE_NODES nodes in a line; it must be
    # the number of nodes a message's turn crosses, or the ratio it prints
    # flatters (or wrongs) the service.
    from bench.load import SERVICE_NODES

    graph = build_graph(_deps(0), InMemorySaver())
    on_path = {b for a, b in graph.builder.edges if a == "__start__"}
    assert len(on_path) == SERVICE_NODES == 1
