"""CPU cost of the closing interceptor (service.closing) per streamed response.

``.venv/bin/python bench/closing.py [--responses 20000] [--repeats 5]``

Every streaming RPC's handler now runs in a task of its own, advanced one
response at a time when grpc asks (a future and a queue hand-off per
response), and every turn's events are produced ahead of the writes
(service.servicer.ahead: a queue hand-off per event). This measures, in one
process and without gRPC, the CPU time per response of iterating a plain
async generator directly, through ``stepped`` (the interceptor's wrapper),
and through ``ahead`` then ``stepped`` (a turn's path) — the added cost is
the difference; a turn streams ~5–10 events (turn_started, phase, deltas,
usage, turn_completed). Machine load inflates every row alike; the best of
``--repeats`` is reported.

Prints a table, writes bench/results/closing.json; the last line is one JSON object.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from collections.abc import AsyncGenerator, AsyncIterator, Callable  # noqa: E402
from typing import Any  # noqa: E402

from service.closing import stepped  # noqa: E402
from service.servicer import ahead  # noqa: E402


class _Context:
    """The one servicer-context call ``stepped`` makes."""

    def add_done_callback(self, callback: Callable[[Any], None]) -> None:
        self.callback = callback


async def _responses(n: int) -> AsyncGenerator[Any, None]:
    for i in range(n):
        yield i


async def _drain(stream: AsyncIterator[Any]) -> int:
    count = 0
    async for _ in stream:
        count += 1
    return count


async def _cpu_us(make: Callable[[], AsyncIterator[Any]], n: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        assert await _drain(make()) == n
        best = min(best, time.process_time() - started)
    return best / n * 1e6


async def main(n: int, repeats: int) -> dict[str, Any]:
    def through_stepped(inner: Callable[[], AsyncGenerator[Any, None]]) -> AsyncIterator[Any]:
        handler = stepped(lambda _request, _context: inner())
        return handler(None, _Context())

    rows = {
        "plain": await _cpu_us(lambda: _responses(n), n, repeats),
        "stepped": await _cpu_us(lambda: through_stepped(lambda: _responses(n)), n, repeats),
        "ahead+stepped": await _cpu_us(
            lambda: through_stepped(lambda: ahead(_responses(n))), n, repeats),
    }
    return {"benchmark": "closing", "responses": n, "repeats": repeats,
            "cpu_us_per_response": {k: round(v, 2) for k, v in rows.items()},
            "added_us_per_response": {k: round(v - rows["plain"], 2)
                                      for k, v in rows.items() if k != "plain"}}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--responses", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=_HERE / "results" / "closing.json")
    args = ap.parse_args()
    result = asyncio.run(main(args.responses, args.repeats))
    print(f"{'path':<16} {'CPU µs/response':>16} {'added µs':>10}")
    for name, us in result["cpu_us_per_response"].items():
        added = result["added_us_per_response"].get(name, 0.0)
        print(f"{name:<16} {us:>16.2f} {added:>10.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result))
