"""``diwaniya chat --once`` is a light client: one turn, no server packages imported."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path

from diwaniya.v1 import conversations_pb2 as pb
from majlis.culture import FixedClock
from service import Settings, build_app
from service.chat import event_json
from tests.service.conftest import DEFAULT_TIME

SERVER_ONLY = ("service.app", "service.settings", "majlis", "memory", "nlp", "langgraph",
               "langchain_core", "numpy", "psycopg", "asyncpg", "pydantic")


async def test_chat_once_streams_a_turn_without_importing_the_server(tmp_path: Path) -> None:
    app = await build_app(Settings(data_dir=tmp_path / "data", listen="127.0.0.1:0",
                                   drain_grace_s=1.0), clock=FixedClock(DEFAULT_TIME))
    server = app.server()
    await server.start()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-X", "importtime", "-m", "service", "chat", "--once",
            "السلام عليكم", "--json", "--country", "KW", "--user", f"cli-{uuid.uuid4().hex[:8]}",
            "--target", f"127.0.0.1:{server.port}",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
        missing = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "service", "chat", "--once", "مرحبا", "--json",
            "--thread", f"t-missing-{uuid.uuid4().hex[:8]}", "--target",
            f"127.0.0.1:{server.port}",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        missing_out, _ = await asyncio.wait_for(missing.communicate(), timeout=120)
    finally:
        await server.drain(0, delay=0)
        await app.close()
    assert proc.returncode == 0, err.decode()[-3000:]
    events = [json.loads(line) for line in out.decode().splitlines()]
    assert events[0]["seq"] == 1 and "turn_started" in events[0]
    assert events[-1]["turn_completed"]["text"].startswith("وعليكم السلام")
    assert all(isinstance(e["seq"], int) for e in events)
    imported = {line.rsplit("|", 1)[-1].strip() for line in err.decode().splitlines()
                if line.startswith("import time:")}
    assert "diwaniya.client" in imported
    server_side = sorted(m for m in imported if m in SERVER_ONLY or m.split(".")[0] in SERVER_ONLY)
    assert server_side == [], server_side
    # A failed turn is one JSON line with the status, typed by the light client.
    assert missing.returncode == 1
    (failure,) = [json.loads(line) for line in missing_out.decode().splitlines()]
    assert failure["status"] in {"NOT_FOUND", "INVALID_ARGUMENT"} and failure["message"]


def test_json_lines_carry_token_counts_as_numbers() -> None:
    event = pb.TurnEvent(thread_id="t1", turn_id="u1", seq=16, usage=pb.Usage(
        model="gpt", prompt_tokens=812, completion_tokens=64, cost_usd=0.0012))
    assert json.loads(event_json(event))["usage"] == {
        "model": "gpt", "prompt_tokens": 812, "completion_tokens": 64, "cost_usd": 0.0012}
    thread_line = json.loads(event_json(pb.TurnEvent(turn_completed=pb.TurnCompleted(
        text="تم. رقم طلبك ١٢٣")))).get("turn_completed")
    assert thread_line == {"text": "تم. رقم طلبك ١٢٣"}
