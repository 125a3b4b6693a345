"""A scripted OpenAI-compatible ``/v1/chat/completions`` server over real HTTP + SSE.

Each test pushes the replies it wants, in order; every request is recorded so
tests can assert on what the client sent (e.g. that tools were dropped)::

    server.push(ScriptedReply.text("أهلاً وسهلاً بك", usage=(12, 4)))
    server.push(ScriptedReply.error(429, headers={"Retry-After": "2"}))

An exhausted script answers 500 with a message saying so, which fails the
test loudly rather than hanging it.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes._http import LocalHTTPServer, RecordedRequest, send

__all__ = ["ScriptedOpenAIServer", "ScriptedReply"]


def _chunk(delta: dict[str, Any], *, finish: str | None = None, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _usage_chunk(prompt: int, completion: int, *, model: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": model,
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


@dataclass
class ScriptedReply:
    """One HTTP reply. ``events`` are SSE data payloads: dicts are JSON-encoded,
    strings are sent verbatim (to script malformed chunks)."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    events: list[dict[str, Any] | str] = field(default_factory=list)
    body: dict[str, Any] | None = None  # for non-200 replies
    delay_s: float = 0.0  # before the status line
    event_delay_s: float = 0.0  # between SSE events
    # Set: the stream stops after its first two events until the test sets it
    # (a turn held in flight, without guessing how long it takes).
    hold: threading.Event | None = None

    @classmethod
    def text(
        cls,
        text: str,
        *,
        usage: tuple[int, int] | None = (10, 5),
        model: str = "fake-model",
        event_delay_s: float = 0.0,
    ) -> ScriptedReply:
        """Streams ``text`` word by word (each delta keeps its trailing space)."""
        words = text.split(" ")
        deltas = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
        events: list[dict[str, Any] | str] = [
            _chunk({"role": "assistant", "content": ""}, model=model)
        ]
        events += [_chunk({"content": d}, model=model) for d in deltas if d]
        events.append(_chunk({}, finish="stop", model=model))
        if usage is not None:
            events.append(_usage_chunk(*usage, model=model))
        return cls(events=events, event_delay_s=event_delay_s)

    @classmethod
    def tool_call(
        cls,
        name: str,
        arguments: dict[str, Any] | str,
        *,
        call_id: str = "call_1",
        usage: tuple[int, int] | None = (20, 8),
        model: str = "fake-model",
    ) -> ScriptedReply:
        """A tool call whose JSON arguments arrive split over two deltas."""
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        half = len(raw) // 2
        first = {
            "index": 0,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": raw[:half]},
        }
        second = {"index": 0, "function": {"arguments": raw[half:]}}
        events: list[dict[str, Any] | str] = [
            _chunk({"role": "assistant", "content": None, "tool_calls": [first]}, model=model),
            _chunk({"tool_calls": [second]}, model=model),
            _chunk({}, finish="tool_calls", model=model),
        ]
        if usage is not None:
            events.append(_usage_chunk(*usage, model=model))
        return cls(events=events)

    @classmethod
    def empty(cls, *, usage: tuple[int, int] | None = (10, 0)) -> ScriptedReply:
        """A well-formed stream that says nothing at all."""
        events: list[dict[str, Any] | str] = [
            _chunk({"role": "assistant", "content": ""}, model="fake-model"),
            _chunk({}, finish="stop", model="fake-model"),
        ]
        if usage is not None:
            events.append(_usage_chunk(*usage, model="fake-model"))
        return cls(events=events)

    @classmethod
    def malformed(cls, before: str = "") -> ScriptedReply:
        """Some valid text (``before``), then a chunk that is not JSON."""
        events: list[dict[str, Any] | str] = []
        if before:
            events.append(_chunk({"role": "assistant", "content": before}, model="fake-model"))
        events.append('{"id": "chatcmpl-test", "choices": [{"delta": {"content": "نص')
        return cls(events=events)

    @classmethod
    def error(
        cls, status: int, message: str = "error", *, headers: dict[str, str] | None = None
    ) -> ScriptedReply:
        return cls(
            status=status,
            headers=headers or {},
            body={"error": {"message": message, "type": "error", "code": status}},
        )


class ScriptedOpenAIServer:
    """Serves pushed :class:`ScriptedReply` objects in order; records requests."""

    def __init__(self) -> None:
        self._script: deque[ScriptedReply] = deque()
        self._http = LocalHTTPServer(self._handle)

    @property
    def base_url(self) -> str:
        return f"{self._http.url}/v1"

    @property
    def requests(self) -> list[RecordedRequest]:
        return [r for r in self._http.requests if r.path.endswith("/chat/completions")]

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [r.json() for r in self.requests]

    def push(self, *replies: ScriptedReply) -> None:
        self._script.extend(replies)

    @property
    def pending(self) -> int:
        return len(self._script)

    def close(self) -> None:
        self._http.close()

    def _handle(self, request: RecordedRequest, handler: BaseHTTPRequestHandler) -> None:
        if not self._script:
            body = {"error": {"message": "scripted server: no reply left in the script"}}
            send(handler, 500, json.dumps(body).encode())
            return
        reply = self._script.popleft()
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.status != 200:
            send(
                handler, reply.status, json.dumps(reply.body or {}).encode(), headers=reply.headers
            )
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.send_header("Connection", "close")
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        for n, event in enumerate(reply.events):
            data = event if isinstance(event, str) else json.dumps(event, ensure_ascii=False)
            handler.wfile.write(f"data: {data}\n\n".encode())
            handler.wfile.flush()
            if n == 1 and reply.hold is not None:
                reply.hold.wait(timeout=120)
            if reply.event_delay_s:
                time.sleep(reply.event_delay_s)
        handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()
        handler.close_connection = True
