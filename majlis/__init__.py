"""The conversation: a LangGraph graph over durable threads, and the Majlis around it.

Public surface: :class:`ConversationEngine` (run turns, approvals, thread
APIs), :func:`build_graph` with :class:`GraphDeps`, the persistence openers,
per-tenant configuration and the typed events. Sub-packages:
``majlis.culture`` (phases, greetings, tone, calendar), ``majlis.models``
(chat models, offline responder), ``majlis.tools`` (built-in and webhook
tools). Attributes load on first use, so importing a sub-package stays cheap.

>>> from majlis import TurnRequest
>>> TurnRequest(tenant="default", user_id="u1", text="السلام عليكم").text
'السلام عليكم'
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from majlis.approvals import ApprovalRequest
    from majlis.engine import ConversationEngine, EngineConfig
    from majlis.events import Envelope, Event
    from majlis.graph import GraphDeps, build_graph
    from majlis.persistence import Persistence, open_postgres, open_sqlite
    from majlis.requests import Limits, TurnRequest
    from majlis.tenants import Tenant, Tenants

_WHERE = {
    "ApprovalRequest": "majlis.approvals",
    "ConversationEngine": "majlis.engine", "EngineConfig": "majlis.engine",
    "Envelope": "majlis.events", "Event": "majlis.events",
    "GraphDeps": "majlis.graph", "build_graph": "majlis.graph",
    "Persistence": "majlis.persistence", "open_postgres": "majlis.persistence",
    "open_sqlite": "majlis.persistence",
    "Limits": "majlis.requests", "TurnRequest": "majlis.requests",
    "Tenant": "majlis.tenants", "Tenants": "majlis.tenants",
}

__all__ = [
    "ApprovalRequest",
    "ConversationEngine",
    "EngineConfig",
    "Envelope",
    "Event",
    "GraphDeps",
    "Limits",
    "Persistence",
    "Tenant",
    "Tenants",
    "TurnRequest",
    "build_graph",
    "open_postgres",
    "open_sqlite",
]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'majlis' has no attribute {name!r}")
