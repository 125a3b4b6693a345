"""``diwaniya kb`` as a client of a running server (no --direct), on both stores.

The first call runs in a fresh interpreter (what it imports is process-wide);
the rest call the CLI's own ``main`` in a thread of this process (its
``asyncio.run`` beside the server's loop), as the console script does, with
the same environment: each subprocess cost ~1.2 CPU-s of start-up (issue #12).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.service._cli import run_cli_in_thread

REFUNDS = """# سياسة الاسترجاع

يحق للعميل إرجاع المنتج خلال أربعة عشر يوماً من تاريخ الاستلام.
"""

# Runs the CLI in a fresh interpreter, then reports which heavy packages it loaded.
_PROBE = """
import json, sys
from service.cli import main
code = main(sys.argv[1:])
heavy = sorted(m for m in ("langgraph", "majlis", "langchain_core") if m in sys.modules)
print(json.dumps({"exit": code, "heavy": heavy}))
"""


async def _kb(env: dict[str, str], *args: str) -> tuple[int, list[Any], str, list[str]]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _PROBE, "kb", *args, env=env, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    lines = out.decode().splitlines()
    probe = json.loads(lines[-1])
    return probe["exit"], [json.loads(x) for x in lines[:-1]], err.decode(), probe["heavy"]


def _in_process(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                env: dict[str, str]) -> Callable[..., Awaitable[tuple[int, list[Any], str]]]:
    """``diwaniya kb …`` through ``main(argv)``: exit status, JSON lines out, stderr."""

    async def kb(*args: str) -> tuple[int, list[Any], str]:
        done = await run_cli_in_thread(monkeypatch, capsys, env, "kb", *args)
        return done.returncode, [json.loads(x) for x in done.stdout.splitlines()], done.stderr

    return kb


async def test_kb_cli_talks_to_the_server_with_the_tenants_key(
    run_service: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = uuid.uuid4().hex[:8]
    key_a, key_b = f"ka-{run}", f"kb-{run}"
    policy = tmp_path / "refunds.md"
    policy.write_text(REFUNDS, encoding="utf-8")
    async with run_service(api_keys={key_a: f"a-{run}", key_b: f"b-{run}"}) as svc:
        # An empty folder and no DATABASE_URL: the CLI must not need the database.
        env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
        env.update(DIWANIYA_DATA_DIR=str(tmp_path / "elsewhere"), DIWANIYA_API_KEY=key_a)
        target = ("--target", svc.target)

        code, out, err, heavy = await _kb(env, "ingest", *target, str(policy))
        assert code == 0, err
        assert out == [{"documents": 1, "chunks": out[0]["chunks"], "doc_ids": ["refunds.md"]}]
        assert heavy == []  # the client path never loads the conversation graph

        kb = _in_process(monkeypatch, capsys, env)
        code, out, err = await kb("search", *target, "كم يوم عندي لإرجاع المنتج؟")
        assert code == 0 and out[0]["doc_id"] == "refunds.md" and "[[إرجاع]]" in out[0]["snippet"]
        code, out, _ = await kb("search", *target, "--api-key", key_b, "إرجاع المنتج")
        assert code == 0 and out == []  # tenant B's key sees nothing of A's

        code, out, _ = await kb("list", *target)
        assert [d["id"] for d in out] == ["refunds.md"]
        code, out, _ = await kb("get", *target, "refunds.md")
        assert out[0]["text"] == REFUNDS and out[0]["chunk_count"] == 1

        code, out, err = await kb("get", *target, "--api-key", "wrong", "refunds.md")
        assert code == 2 and "UNAUTHENTICATED" in err
        code, out, err = await kb("get", *target, "missing.md")
        assert code == 2 and "NOT_FOUND" in err and "missing.md" in err

        code, out, _ = await kb("delete", *target, "refunds.md")
        assert out == [{"deleted": 1, "missing": []}]
        code, out, _ = await kb("search", *target, "إرجاع المنتج")
        assert code == 0 and out == []
    assert not (tmp_path / "elsewhere").exists()
