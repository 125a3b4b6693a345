"""``diwaniya chat``: a streaming REPL, or one turn as JSON lines (``--once … --json``)."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from datetime import datetime
from typing import TextIO

import grpc
from google.protobuf.json_format import MessageToDict

from diwaniya.v1 import conversations_pb2 as pb
from service.client import DiwaniyaClient


def event_json(event: pb.TurnEvent) -> str:
    """One event as one JSON line, Arabic kept readable (not \\u-escaped)."""
    data = MessageToDict(event, preserving_proto_field_name=True,
                         always_print_fields_with_no_presence=False)
    return json.dumps(data, ensure_ascii=False, sort_keys=False)


async def run_once(
    client: DiwaniyaClient, text: str, *, user_id: str, thread_id: str, country: str,
    timezone: str, client_time: datetime | None, as_json: bool, out: TextIO,
) -> int:
    call = client.send(text, user_id=user_id, thread_id=thread_id, country=country,
                       timezone=timezone, client_time=client_time,
                       request_id=uuid.uuid4().hex)
    try:
        async for event in call:
            _show(event, as_json, out)
    except grpc.aio.AioRpcError as exc:
        if as_json:
            print(json.dumps({"status": exc.code().name, "message": exc.details()},
                             ensure_ascii=False), file=out)
        else:
            print(f"\n[{exc.code().name}] {exc.details()}", file=sys.stderr)
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


async def repl(client: DiwaniyaClient, *, user_id: str, thread_id: str, country: str,
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
        call = client.send(text, user_id=user_id, thread_id=thread_id, country=country,
                           timezone=timezone, request_id=uuid.uuid4().hex)
        try:
            async for event in call:
                thread_id = _show(event, False, sys.stdout) or thread_id
        except grpc.aio.AioRpcError as exc:
            print(f"\n[{exc.code().name}] {exc.details()}")
