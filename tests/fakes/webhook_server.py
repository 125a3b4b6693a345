"""A scripted tenant backend for webhook tools, over real HTTP.

Routes map a path to a :class:`WebhookReply`; unknown paths answer 404.
``requests`` records what the tool sent (method, headers, JSON body).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes._http import LocalHTTPServer, RecordedRequest, send

__all__ = ["WebhookReply", "WebhookServer"]


@dataclass
class WebhookReply:
    status: int = 200
    json_body: Any = None
    raw_body: bytes | None = None  # sent verbatim instead of json_body (invalid JSON)
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


class WebhookServer:
    def __init__(self) -> None:
        self._routes: dict[str, WebhookReply] = {}
        self._http = LocalHTTPServer(self._handle)

    @property
    def url(self) -> str:
        return self._http.url

    @property
    def requests(self) -> list[RecordedRequest]:
        return self._http.requests

    def route(self, path: str, reply: WebhookReply) -> str:
        """Script ``path``; returns its full URL."""
        self._routes[path] = reply
        return f"{self.url}{path}"

    def close(self) -> None:
        self._http.close()

    def _handle(self, request: RecordedRequest, handler: BaseHTTPRequestHandler) -> None:
        reply = self._routes.get(request.path.split("?", 1)[0])
        if reply is None:
            send(handler, 404, b'{"error": "no such route"}')
            return
        if reply.delay_s:
            time.sleep(reply.delay_s)
        body = reply.raw_body
        if body is None:
            body = json.dumps(reply.json_body, ensure_ascii=False).encode()
        send(handler, reply.status, body, headers=reply.headers)
