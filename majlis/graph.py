"""The conversation graph: analyse → phase → recall → respond → remember."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

import nlp
from majlis import culture
from majlis.models import ChatModel, Pricing
from majlis.nodes import Analyse, PhaseNode, Recall, Remember, Respond
from majlis.nodes.respond import RegistryFactory
from majlis.state import ThreadState
from memory import FactExtractor, MemoryStore


@dataclass(frozen=True)
class GraphDeps:
    """Everything the nodes need; built by the entry point, never read from settings here."""

    identifier: nlp.DialectIdentifier
    calendar: culture.SeasonCalendar
    profile: culture.ToneProfile
    store: MemoryStore
    extractor: FactExtractor
    model: ChatModel
    tools: RegistryFactory
    long_gap: timedelta = timedelta(hours=6)
    prices: Pricing | None = None


def build_graph(
    deps: GraphDeps, checkpointer: BaseCheckpointSaver[Any]
) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph = StateGraph(ThreadState)
    graph.add_node("analyse", Analyse(deps.identifier))
    graph.add_node("phase", PhaseNode(deps.calendar, deps.profile, long_gap=deps.long_gap))
    graph.add_node("recall", Recall(deps.store))
    graph.add_node("respond", Respond(deps.model, deps.tools, persona=deps.profile.persona_name,
                                         prices=deps.prices))
    graph.add_node("remember", Remember(deps.store, deps.extractor))
    graph.add_edge(START, "analyse")
    graph.add_edge("analyse", "phase")
    graph.add_edge("phase", "recall")
    graph.add_edge("recall", "respond")
    graph.add_edge("respond", "remember")
    graph.add_edge("remember", END)
    return graph.compile(checkpointer=checkpointer)
