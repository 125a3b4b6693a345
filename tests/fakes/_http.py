"""A threaded HTTP/1.1 server on 127.0.0.1:0 that hands each request to a callback.

Thread-based on purpose: it is independent of whichever event loop the test
(or a gRPC server under test) runs, and ``close()`` never waits for a handler
that is deliberately sleeping to simulate a slow backend.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class _State:
    handle: Callable[[RecordedRequest, BaseHTTPRequestHandler], None]
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    state: _State


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        return

    def _dispatch(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        request = RecordedRequest(
            self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
        )
        with self.server.state.lock:
            self.server.state.requests.append(request)
        try:
            self.server.state.handle(request, self)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout test); nothing to answer

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch


class LocalHTTPServer:
    """Start with ``handle(request, handler)``; ``url`` is ``http://127.0.0.1:<port>``."""

    def __init__(self, handle: Callable[[RecordedRequest, BaseHTTPRequestHandler], None]) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = _State(handle)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._server.state.lock:
            return list(self._server.state.requests)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def send(
    handler: BaseHTTPRequestHandler,
    status: int,
    body: bytes,
    *,
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)
    handler.wfile.flush()
