"""The gRPC edge: the only package that imports ``grpc``.

Public surface: :class:`DiwaniyaClient` for callers, :func:`build_app` and
:class:`Server` for embedding the service (tests, other entry points).
"""

from service.app import App, build_app
from service.client import DiwaniyaClient
from service.server import Server, ServerOptions
from service.settings import Settings

__all__ = ["App", "DiwaniyaClient", "Server", "ServerOptions", "Settings", "build_app"]
