"""What a caller pays to use Diwaniya: the client's import time, and ``diwaniya chat --once``.

``nice -n 10 .venv/bin/python bench/client_import.py [--runs 15]``

1. Builds diwaniya-client and installs it ALONE into a fresh venv
   (tests/client/_venv.py), then times ``import diwaniya.client`` there with
   ``python -X importtime`` (cumulative µs of the module, a fresh interpreter
   per run) and counts the modules it loads. Goal: under 0.3 s.
2. Starts a real server (SQLite, offline responder) on 127.0.0.1:0 and times
   ``python -m service chat --once … --json`` end to end (wall clock of the
   whole process: interpreter, imports, connect, one streamed turn), and checks
   that the chat path loaded no server package. Goal: under 1 s.
   Both rows also give the child's CPU seconds (user+sys, ``getrusage``): on
   this shared 2-core machine wall time mostly measures the other tenants. Before
   (issue #14): 3–6 s per call, almost all of it imports.

Prints a table, writes bench/results/client_import.json; the last line is one JSON object.
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
import os  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from typing import Any  # noqa: E402

from service import Settings, build_app  # noqa: E402
from tests.client._venv import fresh_client_venv, import_seconds  # noqa: E402

ROOT = _HERE.parent
RESULTS = ROOT / "bench" / "results" / "client_import.json"
SERVER_PACKAGES = ("service.app", "majlis", "memory", "nlp", "langgraph", "langchain_core",
                   "numpy", "psycopg", "asyncpg", "pydantic")


def _stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {"median_s": round(statistics.median(ordered), 3),
            "p90_s": round(ordered[int(0.9 * (len(ordered) - 1))], 3),
            "min_s": round(ordered[0], 3), "max_s": round(ordered[-1], 3)}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _import_cpu(python: Path) -> float:
    """CPU seconds (user+sys) of a fresh interpreter importing diwaniya.client, startup
    included: on a shared, loaded machine this moves far less than wall time."""
    before = _children_cpu()
    subprocess.run([str(python), "-c", "import diwaniya.client"], check=True, cwd="/")
    return _children_cpu() - before


def _module_count(python: Path, code: str) -> int:
    proc = subprocess.run([str(python), "-c", f"{code}; import sys; print(len(sys.modules))"],
                          capture_output=True, text=True, check=True, cwd="/")
    return int(proc.stdout.split()[-1])


async def _chat_runs(runs: int, data_dir: Path) -> dict[str, Any]:
    settings = Settings(data_dir=data_dir, listen="127.0.0.1:0", drain_grace_s=1.0)
    app = await build_app(settings)
    server = app.server()
    await server.start()
    target = f"127.0.0.1:{server.port}"
    env = {**os.environ, "DIWANIYA_LOG_LEVEL": "WARNING"}
    samples: list[float] = []
    cpu: list[float] = []
    loaded: list[str] = []
    try:
        for i in range(runs + 1):  # the first run warms the page cache and .pyc files
            argv = [sys.executable, "-m", "service", "chat", "--once", "السلام عليكم",
                    "--json", "--target", target, "--user", f"bench-{uuid.uuid4().hex[:8]}"]
            if i == 0:
                argv[1:1] = ["-X", "importtime"]
            start, cpu_before = time.perf_counter(), _children_cpu()
            proc = await asyncio.create_subprocess_exec(
                *argv, env=env, cwd=str(ROOT), stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE)
            out, err = await proc.communicate()
            elapsed = time.perf_counter() - start
            if proc.returncode != 0 or b"turn_completed" not in out:
                raise SystemExit(f"chat --once failed: {err.decode()[-2000:]}")
            if i == 0:
                names = {line.rsplit("|", 1)[-1].strip() for line in err.decode().splitlines()
                         if line.startswith("import time:")}
                loaded = sorted(n for n in names if n in SERVER_PACKAGES
                                or n.split(".")[0] in SERVER_PACKAGES)
                continue
            samples.append(elapsed)
            cpu.append(_children_cpu() - cpu_before)
    finally:
        await server.drain(0, delay=0)
        await app.close()
    return {"runs": runs, **_stats(samples),
            "cpu_median_s": round(statistics.median(cpu), 3), "server_modules_loaded": loaded}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        python = fresh_client_venv(Path(tmp))
        import_seconds(python)  # warm: .pyc and page cache
        imports = [import_seconds(python) for _ in range(args.runs)]
        import_cpu = [_import_cpu(python) for _ in range(args.runs)]
        modules = _module_count(python, "import diwaniya.client")
        baseline = _module_count(python, "pass")
        chat = await _chat_runs(args.runs, Path(tmp) / "data")
    rows = [
        {"what": "import diwaniya.client (fresh venv, -X importtime)", "goal_s": 0.3,
         **_stats(imports), "cpu_median_s": round(statistics.median(import_cpu), 3),
         "modules": modules - baseline},
        {"what": "diwaniya chat --once --json (whole process, wall)", "goal_s": 1.0,
         **{k: v for k, v in chat.items() if k != "server_modules_loaded"}},
    ]
    print(f"{'what':<52} {'min s':>6} {'median s':>9} {'p90 s':>7} {'cpu s':>6} {'goal s':>7}")
    for r in rows:
        print(f"{r['what']:<52} {r['min_s']:>6} {r['median_s']:>9} {r['p90_s']:>7} "
              f"{r['cpu_median_s']:>6} {r['goal_s']:>7}")
    print(f"modules loaded by import diwaniya.client: {modules - baseline}; "
          f"server packages loaded by chat --once: {chat['server_modules_loaded'] or 'none'}")
    result = {"bench": "client_import", "runs": args.runs,
              "note": "2-core machine shared with other work (load average printed)",
              "load_average": [round(x, 2) for x in os.getloadavg()],
              "rows": rows, "chat_server_modules_loaded": chat["server_modules_loaded"]}
    RESULTS.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    asyncio.run(main())
