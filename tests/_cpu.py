"""A pytest plugin: the CPU seconds of every test, for bench/suite_cpu.py.

``-p tests._cpu`` with ``DIWANIYA_CPU_DIR`` set: each process (an xdist worker,
or the one serial process) writes ``<worker>.jsonl`` there at exit — one line
for the process itself (all its CPU: start-up and collection included), then
one line per test: CPU of this process during the test's
setup, call and teardown (``self``) and of the children it reaped meanwhile
(``child``: ``serve``/CLI subprocesses, initdb, kubectl), the wall seconds, and
whether it failed.

A child is counted when it is waited for. A process that its parent never
reaps — a worker left behind when its supervisor is SIGKILLed — is counted
nowhere, and neither is the PostgreSQL server's work (bench/suite_cpu.py
samples that from /proc).
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_ROWS: list[dict[str, Any]] = []
_START: list[float] = []
_FAILED: set[str] = set()


def _now() -> tuple[float, float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, kids.ru_utime + kids.ru_stime, time.monotonic()


def pytest_configure(config: pytest.Config) -> None:
    _START[:] = list(_now())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    before = _now()
    yield
    after = _now()
    _ROWS.append({"id": item.nodeid, "self": round(after[0] - before[0], 4),
                  "child": round(after[1] - before[1], 4),
                  "wall": round(after[2] - before[2], 4), "failed": item.nodeid in _FAILED})


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.failed:
        _FAILED.add(report.nodeid)


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = os.environ.get("DIWANIYA_CPU_DIR")
    if not folder or not _START:
        return
    own, kids, now = _now()
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    lines = [{"process": worker, "self": round(own, 3), "child": round(kids, 3),
              "wall": round(now - _START[2], 3), "self_at_configure": round(_START[0], 3)},
             *_ROWS]
    Path(folder).mkdir(parents=True, exist_ok=True)
    with (Path(folder) / f"{worker}.jsonl").open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(line) + "\n" for line in lines)
