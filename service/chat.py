"""``diwaniya chat``: a streaming REPL, or one turn as JSON lines (``--once … --json``).

Imports only the light client (``diwaniya.client``: grpcio + protobuf), never the
conversation graph or the stores, so ``chat --once`` costs one round trip, not
seconds of imports.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import datetime
from typing import Any, TextIO

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.json_format import MessageToDict

from diwaniya.client import AsyncClient
from diwaniya.errors import DiwaniyaError
from diwaniya.v1 import conversations_pb2 as pb

# Proto3 JSON writes 64-bit integers as strings (JavaScript doubles lose
# precision past 2**53); a JSON line for a shell or a backend wants numbers.
_INT64 = frozenset({FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_UINT64,
                    FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_FIXED64,
                    FieldDescriptor.TYPE_SFIXED64})


def _typed(data: dict[str, Any], descriptor: Descriptor) -> dict[str, Any]:
    for field in descriptor.fields:
        if field.name not in data:
            continue
        if field.type in _INT64:
            value = data[field.name]
            data[field.name] = [int(v) for v in value] if isinstance(value, list) else int(value)
        elif field.message_type is not None and isinstance(data[field.name], dict):
            _typed(data[field.name], field.message_type)
        elif field.message_type is not None and isinstance(data[field.name], list):
            for item in data[field.name]:
                if isinstance(item, dict):
                    _typed(item, field.message_type)
    return data


def event_json(event: pb.TurnEvent) -> str:
    """One event as one JSON line, Arabic kept readable (not \\u-escaped), numbers as numbers.

    >>> event_json(pb.TurnEvent(seq=9, usage=pb.Usage(model="m", prompt_tokens=812)))
    '{"seq": 9, "usage": {"model": "m", "prompt_tokens": 812}}'
    """
    data = MessageToDict(event, preserving_proto_field_name=True,
                         always_print_fields_with_no_presence=False)
    return json.dumps(_typed(data, event.DESCRIPTOR), ensure_ascii=False, sort_keys=False)


def error_json(exc: DiwaniyaError) -> str:
    """A failed turn as one JSON line: status, message and the status's details.

    >>> error_json(NotFound("لا توجد محادثة"))   # doctest: +SKIP
    '{"status": "NOT_FOUND", "message": "لا توجد محادثة"}'
    """
    status = exc.rpc_status
    data: dict[str, Any] = {"status": status.code if status else type(exc).__name__,
                            "message": exc.message}
    if status and status.reason:
        data["reason"] = status.reason
    if status and status.field_violations:
        data["field_violations"] = [{"field": v.field, "description": v.description}
                                    for v in status.field_violations]
    if status and status.retry_after_s is not None:
        data["retry_after_s"] = status.retry_after_s
    return json.dumps(data, ensure_ascii=False)


def _status(exc: DiwaniyaError) -> str:
    return exc.rpc_status.code if exc.rpc_status else type(exc).__name__


async def run_once(
    client: AsyncClient, text: str, *, user_id: str, thread_id: str, country: str,
    timezone: str, client_time: datetime | None, as_json: bool, out: TextIO,
) -> int:
    turn = client.send(text, user_id=user_id, thread_id=thread_id, country=country,
                       timezone=timezone, client_time=client_time)
    try:
        async for event in turn:
            _show(event, as_json, out)
    except DiwaniyaError as exc:
        if as_json:
            print(error_json(exc), file=out)
        else:
            print(f"\n[{_status(exc)}] {exc.message}", file=sys.stderr)
        return 1
    return 0


def _show(event: pb.TurnEvent, as_json: bool, out: TextIO) -> str:
    kind = event.WhichOneof("event")
    if as_json:
        print(event_json(event), file=out, flush=True)
    elif kind == "text_delta":
        out.write(event.text_delta.text)
        out.flush()
    elif kind == "phase_changed":
        print(f"[{event.phase_changed.previous or '-'} → {event.phase_changed.current}]", file=out)
    elif kind == "memory_cited":
        print(f"[مصدر: {event.memory_cited.title or event.memory_cited.memory_id}]", file=out)
    elif kind == "turn_completed":
        done = event.turn_completed
        print(f"\n  ({done.phase} · {done.dialect} · thread {event.thread_id})", file=out)
    elif kind == "error":
        print(f"\n[{event.error.code}] {event.error.message}", file=out)
    return event.thread_id


async def repl(client: AsyncClient, *, user_id: str, thread_id: str, country: str,
               timezone: str) -> int:
    print("ديوانية — اكتب رسالتك (Ctrl-D للخروج)")
    while True:
        try:
            text = await asyncio.to_thread(input, "› ")
        except EOFError:
            print()
            return 0
        if not text.strip():
            continue
        turn = client.send(text, user_id=user_id, thread_id=thread_id, country=country,
                           timezone=timezone)
        try:
            async for event in turn:
                thread_id = _show(event, False, sys.stdout) or thread_id
        except DiwaniyaError as exc:
            print(f"\n[{_status(exc)}] {exc.message}")
