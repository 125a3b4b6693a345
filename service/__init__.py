"""The gRPC edge: the only server package that imports ``grpc`` (the client
distribution's ``diwaniya.client`` is the callers' side of the same wire).

Public surface: :func:`build_app` and :class:`Server` for embedding the service
(tests, other entry points); :class:`DiwaniyaClient`, the raw-call harness that
tests and bench drive it with. Callers use :mod:`diwaniya.client` instead.
Attributes load on first use, so ``diwaniya kb …`` does not pay for the
conversation graph.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from service.app import App, build_app
    from service.client import ClientTls, DiwaniyaClient
    from service.server import Server, ServerOptions
    from service.settings import Settings

_WHERE = {
    "App": "service.app", "build_app": "service.app", "DiwaniyaClient": "service.client",
    "ClientTls": "service.client",
    "Server": "service.server", "ServerOptions": "service.server",
    "Settings": "service.settings",
}

__all__ = ["App", "ClientTls", "DiwaniyaClient", "Server", "ServerOptions", "Settings", "build_app"]


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'service' has no attribute {name!r}")
