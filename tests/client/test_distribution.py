"""diwaniya-client installed ALONE into a fresh venv, then used against a real server.

The venv holds the built wheel and its three requirements, nothing of the
server: if the client imported ``service``, ``majlis``, langgraph or numpy, the
calls below would fail with ModuleNotFoundError. The speed figure is measured
by bench/client_import.py (printed here, never asserted).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from pydantic import SecretStr

from majlis.culture import FixedClock
from service import Settings, build_app
from tests.chaos._pg import DroppingProxy
from tests.client._venv import ROOT, fresh_client_venv, import_seconds
from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import DEFAULT_TIME

# Runs inside the fresh venv: one JSON line per check.
CLIENT_SCRIPT = r'''
import asyncio, json, sys
from diwaniya.client import AsyncClient, Client, RetryPolicy
from diwaniya import errors

target, dead, run, outage, cutting = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
user = f"dist-{run}"
out = []

def described(exc):
    s = exc.rpc_status
    return {"type": type(exc).__name__, "is_domain": isinstance(exc, errors.DiwaniyaError),
            "code": s.code if s else None, "message": exc.message,
            "reason": s.reason if s else "", "domain": s.domain if s else "",
            "field": getattr(exc, "field", None),
            "violations": [[v.field, v.description] for v in (s.field_violations if s else ())],
            "retry_after_s": s.retry_after_s if s else None}

async def streamed():
    async with AsyncClient(target, timeout_s=60) as client:
        turn = client.send("السلام عليكم", user_id=user, country="KW")
        kinds = [e.WhichOneof("event") async for e in turn]
        again = client.send("شلونكم؟", user_id=user, thread_id=turn.thread_id)
        more = await again.collect()
        thread = await client.get_thread(turn.thread_id, user_id=user)
        return {"check": "stream", "kinds": kinds, "request_id": turn.request_id,
                "thread_id": turn.thread_id, "turn_id": turn.turn_id, "last_seq": turn.last_seq,
                "second_request_id": again.request_id, "second_events": len(more),
                "messages": len(thread.messages), "event_type": type(more[-1]).__name__}

out.append(asyncio.run(streamed()))

with Client(target, timeout_s=30) as client:
    turn = client.send("أبي أعرف وين طلبي", user_id=user)
    kinds = [e.WhichOneof("event") for e in turn]
    out.append({"check": "sync_stream", "kinds": kinds, "thread_id": turn.thread_id,
                "threads": [t.thread_id for t in client.list_threads(user_id=user).threads]})
    try:
        client.get_thread(f"t-missing-{run}", user_id=user)
        out.append({"check": "not_found", "raised": False})
    except Exception as exc:
        out.append({"check": "not_found", "raised": True, **described(exc)})
    try:
        list(client.send("مرحبا", user_id="not a valid user id!"))
        out.append({"check": "invalid", "raised": False})
    except Exception as exc:
        out.append({"check": "invalid", "raised": True, **described(exc)})

# Server down: a known thread's turn may be retried (its request_id replays it),
# a new thread's UNAVAILABLE may not (the first try may have created a thread).
policy = RetryPolicy(max_attempts=3, initial_backoff_s=0.05)
with Client(dead, timeout_s=10, retry=policy) as client:
    for thread_id in ("t-known", ""):
        turn = client.send("مرحبا", user_id=user, thread_id=thread_id)
        try:
            turn.collect()
            out.append({"check": "unavailable", "raised": False})
        except Exception as exc:
            out.append({"check": "unavailable", "thread_id": thread_id, "raised": True,
                        "attempts": turn.attempts, **described(exc)})

# A live server whose database is cut off: UNAVAILABLE carrying RetryInfo
# (one attempt, so the raw status is what is described).
with Client(outage, timeout_s=30, retry=RetryPolicy(max_attempts=1)) as client:
    try:
        client.get_thread(f"t-any-{run}", user_id=user)
        out.append({"check": "outage", "raised": False})
    except Exception as exc:
        out.append({"check": "outage", "raised": True, **described(exc)})

# A resumable turn through a proxy that cuts the first connection mid-turn:
# the client rejoins the turn (ResumeTurn from its last seq) by itself.
async def resumed():
    async with AsyncClient(cutting, timeout_s=60) as client:
        stream = client.send("اشرح لي سياسة الاسترجاع", user_id=user, resumable=True)
        events = [e async for e in stream]
        return {"check": "resumed", "resumes": stream.resumes, "seqs": [e.seq for e in events],
                "kinds": [e.WhichOneof("event") for e in events],
                "text": "".join(e.text_delta.text for e in events if e.HasField("text_delta"))}

out.append(asyncio.run(resumed()))

for line in out:
    print(json.dumps(line, ensure_ascii=False))
'''

@pytest.fixture(scope="module")
def client_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One fresh venv per run, even when xdist spreads this module over workers.

    The wheel build writes client/build in the source tree, so two concurrent
    builds collide: the first worker builds under a lock in the run's shared
    temp folder (the parent of each worker's own), the others wait and reuse it.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    where, done = root / "client-dist", root / "client-dist.python"
    with (root / "client-dist.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(where, ignore_errors=True)
            where.mkdir()
            done.write_text(str(fresh_client_venv(where)), encoding="utf-8")
    return Path(done.read_text(encoding="utf-8"))


def _in_venv(python: Path, code: str) -> Any:
    proc = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                          check=True, timeout=60, cwd="/")
    return json.loads(proc.stdout)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_dependencies_are_grpcio_protobuf_grpcio_status_only(client_python: Path) -> None:
    requires = _in_venv(client_python, "import json; from importlib import metadata; "
                        "print(json.dumps(metadata.requires('diwaniya-client')))")
    names = {req.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0].strip()
             for req in requires}
    assert names == {"grpcio", "protobuf", "grpcio-status"}, requires
    # Every installed requirement is satisfied inside the venv, and nothing else came along.
    check = subprocess.run([sys.executable, "-m", "pip", "--python", str(client_python), "check"],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    installed = _in_venv(client_python, "import json; from importlib import metadata; "
                         "print(json.dumps(sorted(d.metadata['Name'].lower() "
                         "for d in metadata.distributions())))")
    assert "diwaniya" not in installed and "langgraph" not in installed, installed
    print(f"\nfresh venv distributions: {installed}")


def test_installs_one_top_level_name_and_ships_the_proto(client_python: Path) -> None:
    files = _in_venv(client_python, "import json; from importlib import metadata; "
                     "d = metadata.distribution('diwaniya-client'); "
                     "print(json.dumps({'top': d.read_text('top_level.txt'), "
                     "'record': [str(f) for f in d.files]}))")
    assert files["top"].split() == ["diwaniya"]
    roots = {Path(f).parts[0] for f in files["record"]}
    assert {r for r in roots if not r.endswith(".dist-info")} == {"diwaniya"}, roots
    shipped = _in_venv(client_python, "import json; from importlib import resources; "
                       "print(json.dumps((resources.files('diwaniya.v1') / "
                       "'conversations.proto').read_text('utf-8')))")
    source = (ROOT / "proto" / "diwaniya" / "v1" / "conversations.proto").read_text("utf-8")
    assert shipped == source  # proto/ stays the single source; the package carries a copy
    assert "diwaniya/v1/conversations_pb2.pyi" in files["record"]
    assert "diwaniya/py.typed" in files["record"]


def test_import_time_is_printed(client_python: Path) -> None:
    """The figure itself is bench/client_import.py's (a table + JSON); here it is shown."""
    seconds = import_seconds(client_python)
    print(f"\nimport diwaniya.client in the fresh venv: {seconds:.3f} s (-X importtime)")
    assert seconds > 0


class _CutAfter:
    """TCP proxy that aborts its FIRST connection once ``limit`` bytes came back from
    the server (a connection lost mid-turn); later connections pass untouched."""

    def __init__(self, upstream_port: int, limit: int) -> None:
        self._upstream, self._limit, self.cuts = upstream_port, limit, 0
        self._server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> _CutAfter:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first, self._first_taken = not getattr(self, "_first_taken", False), True
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._upstream)

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, *, down: bool
                       ) -> None:
            seen = 0
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await src.read(4096):
                    dst.write(data)
                    await dst.drain()
                    seen += len(data)
                    if down and first and seen >= self._limit:
                        self.cuts += 1
                        writer.transport.abort()
                        up_writer.transport.abort()
                        return
            dst.close()

        await asyncio.gather(pipe(reader, up_writer, down=False),
                             pipe(up_reader, writer, down=True))

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


async def test_streamed_turn_and_typed_errors_against_a_real_server(
    client_python: Path, tmp_path: Path, pg_dsn: str, openai_server: ScriptedOpenAIServer,
) -> None:
    settings = Settings(data_dir=tmp_path / "data", listen="127.0.0.1:0", drain_grace_s=1.0)
    app = await build_app(settings, clock=FixedClock(DEFAULT_TIME))
    server = app.server()
    await server.start()
    # A third server whose scripted model speaks slowly, so the cut lands mid-turn.
    words = ["كلمة"] * 12
    openai_server.push(ScriptedReply.text(" ".join(words), event_delay_s=0.2))
    slow_app = await build_app(Settings(
        data_dir=tmp_path / "slow", listen="127.0.0.1:0", drain_grace_s=1.0,
        model_base_url=openai_server.base_url), clock=FixedClock(DEFAULT_TIME))
    slow_server = slow_app.server()
    await slow_server.start()
    # Past the HTTP/2 preface, settings and the first events, well before the end.
    cutting = await _CutAfter(slow_server.port, limit=400).start()
    # A second server on PostgreSQL through a proxy, then the proxy cut: its
    # reads answer UNAVAILABLE with RetryInfo (a real outage, not a stub).
    proxy = await DroppingProxy(int(urlsplit(pg_dsn).port or 5432)).start()
    cut_dsn = urlunsplit(urlsplit(pg_dsn)._replace(
        netloc=f"{urlsplit(pg_dsn).username}@127.0.0.1:{proxy.port}"))
    outage_app = await build_app(Settings(
        data_dir=tmp_path / "outage", listen="127.0.0.1:0", drain_grace_s=1.0,
        database_url=SecretStr(cut_dsn), pg_connect_timeout_s=1.0, pg_checkout_timeout_s=1.0,
        pg_command_timeout_s=2.0, pg_reconnect_timeout_s=1.0), clock=FixedClock(DEFAULT_TIME))
    outage_server = outage_app.server()
    await outage_server.start()
    proxy.drop()
    script = tmp_path / "use_client.py"
    script.write_text(CLIENT_SCRIPT, encoding="utf-8")
    dead = f"127.0.0.1:{_free_port()}"
    try:
        proc = await asyncio.create_subprocess_exec(
            str(client_python), str(script), f"127.0.0.1:{server.port}", dead,
            uuid.uuid4().hex[:10], f"127.0.0.1:{outage_server.port}",
            f"127.0.0.1:{cutting.port}", cwd="/",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), timeout=180)
    finally:
        await server.drain(0, delay=0)
        await app.close()
        await outage_server.drain(0, delay=0)
        await outage_app.close()
        await proxy.close()
        await cutting.close()
        await slow_server.drain(0, delay=0)
        await slow_app.close()
    assert proc.returncode == 0, err.decode()
    results = [json.loads(line) for line in out.decode().splitlines()]
    by_check: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_check.setdefault(r["check"], []).append(r)
    print("\n" + "\n".join(json.dumps(r, ensure_ascii=False) for r in results))

    (stream,) = by_check["stream"]
    assert stream["kinds"][0] in {"turn_started", "queued"}
    assert "text_delta" in stream["kinds"] and stream["kinds"][-1] == "turn_completed"
    assert len(stream["request_id"]) == 32 and stream["request_id"] != stream["second_request_id"]
    assert stream["thread_id"] and stream["turn_id"] and stream["last_seq"] == len(stream["kinds"])
    assert stream["messages"] == 4 and stream["event_type"] == "TurnEvent"

    (sync,) = by_check["sync_stream"]
    assert sync["kinds"][-1] == "turn_completed" and "text_delta" in sync["kinds"]
    assert {stream["thread_id"], sync["thread_id"]} <= set(sync["threads"])

    (missing,) = by_check["not_found"]
    assert missing["raised"] and missing["is_domain"]
    assert (missing["type"], missing["code"]) == ("NotFound", "NOT_FOUND")

    (invalid,) = by_check["invalid"]
    assert invalid["raised"] and invalid["is_domain"]
    assert invalid["type"] == "InvalidRequest" and invalid["code"] == "INVALID_ARGUMENT"
    assert invalid["message"]
    # ErrorInfo (stable reason) and a BadRequest field violation naming the field.
    assert invalid["domain"] == "diwaniya.v1" and invalid["reason"] == "INVALID_USER_ID"
    assert [v[0] for v in invalid["violations"]] == ["user_id"]
    assert invalid["field"] == "user_id"

    known, new = by_check["unavailable"]
    for down in (known, new):
        assert down["raised"] and down["is_domain"]
        assert (down["type"], down["code"]) == ("Unavailable", "UNAVAILABLE")
    assert known["attempts"] == 3  # bounded retries: the request_id makes them safe
    assert new["attempts"] == 1    # a new thread's turn is never retried blindly

    (outage,) = by_check["outage"]
    assert outage["raised"] and outage["is_domain"]
    assert (outage["type"], outage["code"]) == ("StoreUnavailable", "UNAVAILABLE"), outage
    assert outage["retry_after_s"] and outage["retry_after_s"] > 0  # RetryInfo, decoded
    assert outage["reason"] and outage["domain"] == "diwaniya.v1"

    (resumed,) = by_check["resumed"]
    assert cutting.cuts == 1 and resumed["resumes"] >= 1, resumed  # it was cut, and rejoined
    assert resumed["seqs"] == list(range(1, len(resumed["seqs"]) + 1))  # no gap, no duplicate
    assert resumed["kinds"][-1] == "turn_completed"
    assert resumed["text"].split() == words
