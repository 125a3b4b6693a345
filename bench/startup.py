"""What one process of ours costs to start: ``--help``, ``import service.app``, ``serve`` to ready.

``.venv/bin/python bench/startup.py [--runs 5]``

Every ``serve``, ``migrate``, CLI subprocess and pytest-xdist worker of the test
suite pays this start-up, so it is most of the suite's CPU. Five rows, run
interleaved ``--runs`` times each in fresh interpreters:

- ``help``: ``python -m service --help`` (the CLI parser; no server imports);
- ``import_app``: ``python -c "import service.app"`` (the composition root);
- ``serve_ready``: ``python -m service serve --workers 1 --listen 127.0.0.1:0``
  (one process, as in a pod and in most tests) on the embedded default (SQLite
  in a temporary folder, offline responder) until it prints ``diwaniya
  listening on``; then SIGTERM;
- ``serve_to_exit``: the same process's CPU from start to exit (drain, close,
  interpreter shutdown), which is what a test that starts one pays;
- ``serve_default_to_exit``: ``serve`` without ``--workers``: a supervisor and
  one worker per CPU (two here), start to exit, all three processes.

Each row gives wall seconds and the child's CPU seconds (user+sys: from
``/proc/<pid>/stat`` at the ready line for ``serve_ready``, ``getrusage`` for
the others). On this shared 2-core machine wall time mostly measures the other
tenants; CPU seconds are what the change is about. ``serve_ready`` also lists
the heavy third-party packages loaded by then (``-X importtime`` of one more
run), so a regression that imports the model client again shows by name.

Prints a table, writes bench/results/startup.json; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "startup.json"
# Packages a serve on the embedded default has no use for (the model client,
# the OTLP exporters, the optional morphology backend) — or needs only later.
WATCHED = ("openai", "langchain_openai", "opentelemetry.exporter", "camel_tools", "torch",
           "asyncpg", "psycopg", "numpy", "langgraph", "langchain_core", "grpc", "pydantic")
READY = "diwaniya listening on "
TICKS = os.sysconf("SC_CLK_TCK")


def _env(data_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("DIWANIYA_") and k not in {"DATABASE_URL", "OTEL_TRACES_EXPORTER"}}
    env.update(DIWANIYA_DATA_DIR=data_dir, DIWANIYA_METRICS_LISTEN="127.0.0.1:0")
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _proc_cpu(pid: int) -> float:
    """utime + stime of a live process, from /proc (fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def _run_once(argv: list[str]) -> tuple[float, float]:
    before, start = _children_cpu(), time.perf_counter()
    subprocess.run(argv, cwd=ROOT, env=_env(tempfile.mkdtemp(prefix="startup-")),
                   check=True, capture_output=True, timeout=300)
    return time.perf_counter() - start, _children_cpu() - before


def _serve_once(extra: tuple[str, ...] = (), workers: tuple[str, ...] = ("--workers", "1")
                ) -> tuple[float, float, float, str]:
    """(wall to ready, CPU to ready, CPU to exit after SIGTERM, stderr) of one ``serve``
    on a fresh SQLite folder."""
    # stderr to a file: -X importtime writes more than a pipe holds before ready.
    with tempfile.TemporaryDirectory(prefix="startup-") as data_dir, \
            tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        before, start = _children_cpu(), time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, *extra, "-m", "service", "serve", *workers,
             "--listen", "127.0.0.1:0"],
            cwd=ROOT, env=_env(data_dir), stdout=subprocess.PIPE, stderr=err, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(READY):
                break
        else:
            proc.wait(timeout=60)
            err.seek(0)
            raise RuntimeError(f"serve exited before ready:\n{err.read()[-3000:]}")
        wall, cpu = time.perf_counter() - start, _proc_cpu(proc.pid)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        err.seek(0)
        return wall, cpu, _children_cpu() - before, err.read()


def _loaded(importtime: str) -> dict[str, float]:
    """Import seconds (the sum of the modules' own times) of each WATCHED package loaded."""
    out: dict[str, float] = {}
    for match in re.finditer(r"import time:\s+(\d+) \|\s+\d+ \| *(\S+)$", importtime, re.M):
        name = match.group(2)
        for watched in WATCHED:
            if name == watched or name.startswith(watched + "."):
                out[watched] = out.get(watched, 0.0) + int(match.group(1)) / 1e6
    return out


def _stats(samples: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(samples), 3), "min": round(min(samples), 3),
            "max": round(max(samples), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    py = sys.executable
    rows: dict[str, dict[str, list[float]]] = {
        name: {"wall": [], "cpu": []}
        for name in ("help", "import_app", "serve_ready", "serve_to_exit",
                     "serve_default_to_exit")}
    for _ in range(args.runs):  # interleaved: a burst of load hits every row alike
        for name, argv in (("help", [py, "-m", "service", "--help"]),
                           ("import_app", [py, "-c", "import service.app"])):
            wall, cpu = _run_once(argv)
            rows[name]["wall"].append(wall)
            rows[name]["cpu"].append(cpu)
        wall, cpu, total, _ = _serve_once()
        rows["serve_ready"]["wall"].append(wall)
        rows["serve_ready"]["cpu"].append(cpu)
        rows["serve_to_exit"]["wall"].append(wall)  # wall to ready; CPU: the whole process
        rows["serve_to_exit"]["cpu"].append(total)
        wall, _, total, _ = _serve_once(workers=())
        rows["serve_default_to_exit"]["wall"].append(wall)
        rows["serve_default_to_exit"]["cpu"].append(total)
    *_, importtime = _serve_once(("-X", "importtime"))
    loaded = _loaded(importtime)
    load = os.getloadavg()
    result: dict[str, Any] = {
        "runs": args.runs, "loadavg": [round(x, 2) for x in load],
        **{name: {"wall_s": _stats(r["wall"]), "cpu_s": _stats(r["cpu"])}
           for name, r in rows.items()},
        "serve_loaded": {k: round(v, 3) for k, v in loaded.items()},
    }
    print(f"{'row':22} {'wall median':>12} {'cpu median':>11} {'cpu min':>8} {'cpu max':>8}")
    for name in rows:
        w, c = result[name]["wall_s"], result[name]["cpu_s"]
        print(f"{name:22} {w['median']:12.3f} {c['median']:11.3f} {c['min']:8.3f} {c['max']:8.3f}")
    print("serve loaded by ready (cumulative import s, -X importtime):",
          ", ".join(f"{k} {v:.2f}" for k, v in loaded.items()) or "none watched")
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
