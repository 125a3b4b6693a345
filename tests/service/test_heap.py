"""service.heap: what ``diwaniya serve`` does to the collector once the app is built.

Run in a child interpreter, which starts with CPython's defaults: the test
processes have settled their own heaps after collection (tests/conftest.py).
"""

from __future__ import annotations

import json
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
