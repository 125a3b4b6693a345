"""SIGTERM with a grace period shorter than the turns, and SIGKILL, on real processes.

``diwaniya serve`` runs as a subprocess on the embedded SQLite store, with a
scripted model slow enough that every turn outlives the grace period. Clients
must get clean statuses (a finished turn, or UNAVAILABLE / CANCELLED — never
INTERNAL or UNKNOWN), and no thread lease may outlive the process: a new
process takes a new turn on every one of those threads at once, instead of
answering ABORTED "busy" until the leases lapse.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from diwaniya.v1 import conversations_pb2 as pb
from service import DiwaniyaClient
from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import collect

CLEAN = {grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED}
SLOW_REPLY = " ".join(["لحظة"] * 40)  # 40 words × 0.25 s: a 10 s turn


class Serve:
    """One ``diwaniya serve`` process on ``data_dir``."""

    def __init__(self, data_dir: Path, model_url: str, log: Path, **env: str) -> None:
        # One serving process, as when this test was written: since `serve`
        # defaults to a worker per CPU, an unset DIWANIYA_WORKERS made it a
        # supervisor and two children here (three start-ups, ~4 CPU-s instead
        # of ~1.3), and the signals went to the supervisor. The supervisor's
        # SIGTERM and SIGKILL are tests/service/test_workers.py's.
        environ = {**os.environ, "DIWANIYA_DATA_DIR": str(data_dir),
                   "DIWANIYA_LISTEN": "127.0.0.1:0", "DIWANIYA_MODEL_BASE_URL": model_url,
                   "DIWANIYA_MODEL_TIMEOUT_S": "30", "DIWANIYA_WORKERS": "1", **env}
        environ.pop("DATABASE_URL", None)
        environ.pop("DIWANIYA_DATABASE_URL", None)
        self._log = log.open("a", encoding="utf-8")
        self.proc = subprocess.Popen([sys.executable, "-m", "service", "serve"], env=environ,
                                     stdout=subprocess.PIPE, stderr=self._log, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        assert "listening on" in line, log.read_text(encoding="utf-8")[-3000:]
        self.target = line.strip().rsplit(" ", 1)[-1]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._log.close()


@pytest.fixture
def model() -> Iterator[ScriptedOpenAIServer]:
    server = ScriptedOpenAIServer()
    yield server
    server.close()


async def _start_turns(client: DiwaniyaClient, n: int) -> tuple[list[str], list[asyncio.Task]]:
    """Start ``n`` turns on new threads; return their thread ids once each has started."""
    calls = [client.send(f"السلام عليكم، عندي سؤال رقم {i}", user_id=f"u{i}", timeout_s=60)
             for i in range(n)]

    async def started(call: object) -> pb.TurnEvent:
        event = await call.read()  # type: ignore[attr-defined]
        # Sent at once, the turns behind others still starting say so first
        # (queued, reason "starting"), truthfully; then they start.
        while event.HasField("queued"):
            event = await call.read()  # type: ignore[attr-defined]
        return event

    firsts = [await started(call) for call in calls]
    assert all(f.HasField("turn_started") for f in firsts)

    async def finish(call: object) -> grpc.StatusCode:
        try:
            while await call.read() is not grpc.aio.EOF:  # type: ignore[attr-defined]
                pass
        except grpc.aio.AioRpcError as err:
            return err.code()
        return grpc.StatusCode.OK

    return [f.thread_id for f in firsts], [asyncio.create_task(finish(c)) for c in calls]


async def _turns_run_at_once(target: str, threads: list[str]) -> list[str]:
    """One turn on each thread, reject policy: ABORTED here would mean a leaked lease."""
    async with DiwaniyaClient(target, timeout_s=30) as client:
        outcomes = []
        for i, thread_id in enumerate(threads):
            try:
                events = await collect(client.send("رجعت، كمل معي", user_id=f"u{i}",
                                                   thread_id=thread_id))
                outcomes.append(events[-1].WhichOneof("event") or "")
            except grpc.aio.AioRpcError as err:
                outcomes.append(f"{err.code().name}: {err.details()}")
        return outcomes


async def test_sigterm_shorter_grace_than_turns_leaves_clean_statuses_and_no_lease(
    tmp_path: Path, model: ScriptedOpenAIServer
) -> None:
    n = 4
    model.push(*[ScriptedReply.text(SLOW_REPLY, event_delay_s=0.25) for _ in range(n)])
    log = tmp_path / "serve.log"
    first = Serve(tmp_path / "data", model.base_url, log, DIWANIYA_DRAIN_GRACE_S="1",
                  DIWANIYA_DRAIN_DELAY_S="0")
    try:
        async with DiwaniyaClient(first.target) as client:
            threads, finishing = await _start_turns(client, n)
            first.proc.send_signal(signal.SIGTERM)
            codes = await asyncio.gather(*finishing)
        exit_code = await asyncio.to_thread(first.proc.wait, 30)
    finally:
        first.stop()
    model.push(*[ScriptedReply.text("أهلين، تفضل") for _ in range(n)])
    second = Serve(tmp_path / "data", model.base_url, log)
    try:
        outcomes = await _turns_run_at_once(second.target, threads)
    finally:
        second.stop()
    assert set(codes) <= CLEAN, codes
    assert exit_code == 0
    assert outcomes == ["turn_completed"] * n


async def test_sigkill_mid_turn_leaves_no_lease_for_the_next_process(
    tmp_path: Path, model: ScriptedOpenAIServer
) -> None:
    model.push(ScriptedReply.text(SLOW_REPLY, event_delay_s=0.25))
    log = tmp_path / "serve.log"
    first = Serve(tmp_path / "data", model.base_url, log)
    try:
        async with DiwaniyaClient(first.target) as client:
            threads, finishing = await _start_turns(client, 1)
            first.proc.send_signal(signal.SIGKILL)
            codes = await asyncio.gather(*finishing)
    finally:
        first.stop()
    model.push(ScriptedReply.text("أهلين، تفضل"))
    second = Serve(tmp_path / "data", model.base_url, log)
    try:
        outcomes = await _turns_run_at_once(second.target, threads)
    finally:
        second.stop()
    assert codes == [grpc.StatusCode.UNAVAILABLE]
    assert outcomes == ["turn_completed"]
