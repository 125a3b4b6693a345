"""The conversation graph: analyse → phase → recall → respond → remember (→ compact).

Five steps, one LangGraph node a turn (``turn``, :func:`_turn`): a message's
analyse → phase, then recall → respond → remember (hold → remember while
handed off), or an approval's settle → remember, each step still in its own
``graph.node <step>`` span.

While the thread is handed off to a person, phase → hold → remember instead
(an acknowledgement; no knowledge base, no model). An approval enters at
settle → remember: the held tool call runs (or is declined) as a turn of its
own, through the same engine path as a message (lock, deadline, replay, commit).
After remember, at the turn boundary, compact folds the oldest turns into the
thread's summary when the history passed the tenant's budget (majlis.compaction);
a process none of whose tenants compacts builds the graph without that route.
"""

from __future__ import annotations

import inspect
import operator
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, TypedDict, cast

from langgraph._internal._runnable import RunnableCallable
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

import nlp
from majlis.compaction import COMPACT, Compaction
from majlis.nodes import Analyse, Hold, PhaseNode, Recall, Remember, Respond, Settle, handed_off
from majlis.nodes.respond import RegistryFactory
from majlis.records import TurnInput
from majlis.state import ThreadState
from majlis.tenants import Tenants
from majlis.tracing import DeferredTracer
from memory import FactExtractor, MemoryStore

_tracer = DeferredTracer("diwaniya.majlis.graph")


@dataclass(frozen=True)
class GraphDeps:
    """Everything the nodes need; built by the entry point, never read from settings here."""

    identifier: nlp.DialectIdentifier
    tenants: Tenants
    store: MemoryStore
    extractor: FactExtractor
    tools: RegistryFactory
    long_gap: timedelta = timedelta(hours=6)


def _inline(node: Callable[[ThreadState], dict[str, Any]]) -> Callable[..., Any]:
    """A sync node as a coroutine, so LangGraph runs it on the loop, not in a thread.

    LangGraph hands sync nodes to an executor thread. Analyse and PhaseNode
    are a fraction of a millisecond of pure Python: the GIL keeps them serial
    anyway, and the thread hop (submit, wake-up, context copy) cost more CPU
    than the work itself.
    """

    async def run(state: ThreadState) -> dict[str, Any]:
        return node(state)

    return run


def _traced(name: str, node: Callable[[ThreadState], Any]) -> Callable[..., Any]:
    """The node in a span ``graph.node <name>``: model, memory and database spans nest in it.

    A plain coroutine, so the span can be current (node tasks copy the context
    of the run, itself inside the RPC's span). Only the node's name is recorded.
    """

    async def run(state: ThreadState) -> Any:
        with _tracer.start_as_current_span(f"graph.node {name}",
                                           attributes={"diwaniya.node": name}):
            result = node(state)
            # Hold is sync and tiny: run on the loop like _inline's nodes.
            return await result if inspect.isawaitable(result) else result

    return run


def _chained(*steps: tuple[str, Callable[..., Any]]) -> Callable[..., Any]:
    """Steps that always run in sequence as ONE LangGraph node, each in its own span.

    Each step reads the state with the records of the steps before it applied
    and writes its own record (a different channel each, no reducer), so the
    node's update is exactly what the steps would have written one superstep
    at a time. What is saved is LangGraph's per-task cost — preparing the
    task (config, callbacks, ids), running it under the retry wrapper,
    applying its writes and building a checkpoint after it: about 1.8 M
    instructions a step (callgrind, the in-process engine at 8 streams),
    about a seventh of a turn for each step merged.
    """
    traced = [(name, _traced(name, step)) for name, step in steps]

    async def run(state: ThreadState) -> dict[str, Any]:
        update: dict[str, Any] = {}
        view: dict[str, Any] = dict(state)
        for _name, step in traced:
            written = await step(view)
            update.update(written)
            view.update(written)
        return update

    return run


def _turn(settle: Callable[..., Any], analyse: Callable[..., Any], hold: Callable[..., Any],
          recall: Callable[..., Any]) -> Callable[..., Any]:
    """A whole turn as ONE LangGraph node: an approval's ``settle`` (settle →
    remember); a message's ``analyse`` (analyse → phase), then ``hold`` (hold →
    remember) while the thread is handed off, else ``recall`` (recall → respond
    → remember) — each a :func:`_chained` run.

    The choices are the ones two routes made between nodes (at START on the
    input, after phase on the same view, phase's writes applied). What a
    second node cost — LangGraph's task preparation, its callback run (two
    asyncio tasks: the step's context and the shielded end), its writers and
    the superstep's apply, checkpoint bookkeeping and stream waiter, and a
    route's run with its channel reads — is about a tenth of a turn's Python
    calls (bench/cpu_turn.py). The turn's saved state is the same:
    durability="exit" checkpoints only its end.
    """

    async def run(state: ThreadState) -> dict[str, Any]:
        if state["input"].approval is not None:
            return cast(dict[str, Any], await settle(state))
        update: dict[str, Any] = await analyse(state)
        view: dict[str, Any] = {**state, **update}
        rest = hold if handed_off(cast(ThreadState, view)) else recall
        update.update(await rest(view))
        return update

    return run


def nodes(deps: GraphDeps) -> dict[str, Callable[..., Any]]:
    """Every step of the graph by name — the one place they are made (a wrapper, e.g.
    a tracing span per step, goes around this mapping; :func:`build_graph` runs
    the steps that follow each other as one LangGraph node)."""
    return {
        "analyse": _inline(Analyse(deps.identifier)),
        "phase": _inline(PhaseNode(deps.tenants, long_gap=deps.long_gap)),
        "recall": Recall(deps.store),
        "respond": Respond(deps.tenants, deps.tools),
        "hold": _inline(Hold()),
        "settle": Settle(deps.tools),
        "remember": Remember(deps.store, deps.extractor),
        COMPACT: Compaction(deps.tenants),
    }


def build_graph(
    deps: GraphDeps, checkpointer: BaseCheckpointSaver[Any]
) -> CompiledStateGraph[Any, Any, Any, Any]:
    graph = StateGraph(ThreadState)
    compaction = Compaction(deps.tenants)
    steps = nodes(deps)
    remember = ("remember", steps["remember"])
    # A turn's steps run as one LangGraph node (:func:`_turn`, :func:`_chained`),
    # each in its own span as before (``graph.node phase`` …): a message's
    # analyse → phase → recall → respond → remember (hold → remember while
    # handed off), an approval's settle → remember.
    graph.add_node("turn", _untraced(_turn(
        _chained(("settle", steps["settle"]), remember),
        _chained(("analyse", steps["analyse"]), ("phase", steps["phase"])),
        hold=_chained(("hold", steps["hold"]), remember),
        recall=_chained(("recall", steps["recall"]), ("respond", steps["respond"]), remember)),
        "turn"))
    # ``remember`` alone is reached by no edge: ReleaseHandoff writes its
    # change as this node (``aupdate_state(as_node="remember")``).
    graph.add_node("remember", _untraced(_traced(*remember), "remember"))
    graph.add_edge(START, "turn")
    ends = ("turn", "remember")
    if compaction.enabled:
        graph.add_node(COMPACT, _untraced(_traced(COMPACT, steps[COMPACT]), COMPACT))
        # At the turn boundary: fold the oldest turns when the history passed the budget.
        for name in ends:
            graph.add_conditional_edges(name, _untraced(_compaction_route(compaction)),
                                        {COMPACT: COMPACT, END: END})
        graph.add_edge(COMPACT, END)
    else:
        # No tenant compacts (the tenants are fixed for the process): the route
        # would answer END every turn, and LangGraph would still run it as a
        # task, reading a copy of the whole history (``messages``) to do so.
        for name in ends:
            graph.add_edge(name, END)
    return graph.compile(checkpointer=checkpointer)


def _untraced(route: Callable[..., Any], name: str | None = None) -> Any:
    """``route`` (or a node) as LangGraph's own runnable without langchain callbacks
    (``trace=False``).

    ``add_node`` and ``add_conditional_edges`` wrap a plain function with
    ``trace=True``: every node and route then configures a callback manager
    (its metadata merged twice), starts a chain run (a uuid4) nested in the
    node's own, runs the function in a task of its own (to set the config's
    context) and ends the run in a shielded task — for no handler at all
    (about 140 Python calls and one task a turn for the ``turn`` node,
    bench/cpu_turn.py): the service passes none, and its spans are its own
    (``graph.node <step>``). No node reads LangGraph's config context
    (``get_config``, ``get_stream_writer``): a turn's events go to its
    majlis.graph_run.GraphRun. The one route left is compaction's, where a
    tenant compacts (a turn's other choices are made inside :func:`_turn`).
    The function is still the runnable's ``afunc``, so LangGraph reads its
    input schema (the narrow view below, the whole state for a node) from its
    annotation as before.
    """
    return RunnableCallable(None, route, name=name or route.__name__, trace=False)


# The route below is a coroutine and reads a narrow view of the state, both for
# the turn's CPU: LangGraph runs a sync route in its thread pool (a submit, a
# thread wake-up and a context copy), and a route's reader copies every channel
# its first parameter's annotation names (with the node's writes applied) —
# the whole ThreadState, history included, for a route annotated
# ``ThreadState``. The view lists only what the route reads.
class _CompactionView(TypedDict, total=False):
    # Declared exactly as in ThreadState (same reducer): one channel, not two.
    messages: Annotated[list[dict[str, Any]], operator.add]
    input: TurnInput


def _compaction_route(compaction: Compaction) -> Callable[[_CompactionView], Any]:
    async def route(state: _CompactionView) -> str:
        return compaction.route(cast(ThreadState, state))

    return route
