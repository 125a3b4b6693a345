"""service.heap: what ``diwaniya serve`` does to the collector once the app is built.

Run in a child interpreter, which starts with CPython's defaults: the test
processes have settled their own heaps after collection (tests/conftest.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = """
import gc, json
from service import heap
survivors = [[i] for i in range(5000)]  # start-up's long-lived containers
before = (gc.get_freeze_count(), gc.get_threshold())
heap.settle()
after = (gc.get_freeze_count(), gc.get_threshold())
tracked = {id(x) for x in gc.get_objects()}
print(json.dumps({"before": before, "after": after,
                  "survivors_walked": sum(id(s) in tracked for s in survivors)}))
"""


def test_settle_freezes_startup_objects_and_raises_generation_zero() -> None:
    out = subprocess.run([sys.executable, "-c", CHILD], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["before"][0] == 0 and got["before"][1][0] == 700  # CPython's defaults
    assert got["after"][0] >= 5000
    assert got["after"][1] == [10_000, *got["before"][1][1:]]
    # Frozen objects are out of every generation the collector walks.
    assert got["survivors_walked"] == 0


SERVE = """
import sys
from service import cli, heap, server
statuses = []  # readiness as the health servicer was told it (SERVING = 1)
set_ready, settle = server.Server._set_ready, heap.settle

async def recorded(self, status):
    statuses.append(int(status))
    await set_ready(self, status)

def settled():
    print("settled; readiness:", statuses[-1] if statuses else "none", flush=True)
    settle()

server.Server._set_ready, heap.settle = recorded, settled
sys.exit(cli.main(["serve"]))
"""


def test_serve_settles_the_heap_before_it_is_ready_and_says_so(tmp_path: Path) -> None:
    # The one full collection of a settle (~100 ms of a blocked loop on the
    # start-up heap) came after "listening on": the first requests waited for it.
    env = {**os.environ, "DIWANIYA_DATA_DIR": str(tmp_path), "DIWANIYA_LISTEN": "127.0.0.1:0",
           "DIWANIYA_WORKERS": "1", "DIWANIYA_METRICS_LISTEN": "",
           "DIWANIYA_DRAIN_DELAY_S": "0"}
    env.pop("DATABASE_URL", None)
    env.pop("DIWANIYA_MODEL_BASE_URL", None)
    proc = subprocess.Popen([sys.executable, "-c", SERVE], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = proc.stdout.readline() if proc.stdout else ""
        second = proc.stdout.readline() if proc.stdout else ""
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert first.startswith("settled;"), (first, second)
    # Not SERVING yet when it settled (NOT_SERVING = 2 while opening, or none set).
    assert first.split("readiness:")[1].strip() in ("none", "2"), first
    assert "listening on" in second, second
