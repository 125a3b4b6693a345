"""Where the test suite's CPU goes: the whole run, each worker's fixed cost, the top tests.

``CI=true .venv/bin/python bench/suite_cpu.py [--workers 8] [--top 10]`` runs
``pytest -q -n WORKERS --dist loadgroup -p tests._cpu`` (as ``make test`` does,
plus the per-test CPU plugin ``tests/_cpu.py``) and reports:

- the run: wall seconds, cases passed/failed/skipped, the CPU seconds of the
  pytest processes and every child they reaped (``getrusage``: workers, ``serve``
  and CLI subprocesses, initdb), and the PostgreSQL server's CPU over the run
  (every ``postgres`` process in /proc, its reaped backends included — on a
  shared server other users' work too, so read it on a quiet machine);
- per process: CPU outside tests (interpreter, plugins, collection; the xdist
  controller runs none);
- the ``--top`` tests and files by CPU (own + reaped children).

The suite is CPU-bound on the 2-core machine, so these CPU seconds, not wall
time, say what a change saved; wall time is printed with the load average.
``--from DIR`` reports an earlier run's files (``DIWANIYA_CPU_DIR``) without
running. Prints tables, writes bench/results/suite_cpu.json; the last line is
one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "suite_cpu.json"
TICKS = os.sysconf("SC_CLK_TCK")


def postgres_cpu_s() -> float:
    """utime+stime of every postgres process, plus what each has reaped (cutime+cstime)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not (entry / "comm").read_text().startswith("postgres"):
                continue
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        total += sum(int(x) for x in fields[11:15])
    return total / TICKS


def run_suite(workers: int, folder: Path) -> dict[str, Any]:
    env = {**os.environ, "DIWANIYA_CPU_DIR": str(folder)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    pg_before, load_before, started = postgres_cpu_s(), os.getloadavg(), time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", str(workers), "--dist", "loadgroup",
         "-p", "tests._cpu"], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-500:]
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|errors?)", summary)}
    return {
        "workers": workers, "returncode": done.returncode, "summary": summary, "counts": counts,
        "wall_s": round(wall, 1),
        "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1),
        "postgres_cpu_s": round(postgres_cpu_s() - pg_before, 1),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in os.getloadavg()],
    }


def read_folder(folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    processes, tests = [], []
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if "process" in row:
                processes.append(row)
            else:
                tests.append({**row, "process": path.stem})
    return processes, tests


def summarise(processes: list[dict[str, Any]], tests: list[dict[str, Any]], top: int
              ) -> dict[str, Any]:
    def cpu(row: dict[str, Any]) -> float:
        return float(row["self"] + row["child"])

    files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in tests:
        entry = files[row["id"].split("::")[0]]
        entry[0] += cpu(row)
        entry[1] += 1
    # The xdist controller ("main" beside gw0…) runs no test: all of it is fixed cost.
    fixed = {p["process"]: round(p["self"] - sum(t["self"] for t in tests_of(tests, p)), 2)
             for p in processes}
    return {
        "cases": len(tests),
        "failed": [t["id"] for t in tests if t.get("failed")],
        "tests_cpu_s": round(sum(map(cpu, tests)), 1),
        "tests_child_cpu_s": round(sum(t["child"] for t in tests), 1),
        "process_cpu_outside_tests_s": fixed,
        "top_tests": [{"id": t["id"], "cpu_s": round(cpu(t), 2), "child_s": t["child"],
                       "wall_s": t["wall"]} for t in sorted(tests, key=cpu, reverse=True)[:top]],
        "top_files": [{"file": f, "cpu_s": round(c, 1), "cases": int(n)}
                      for f, (c, n) in sorted(files.items(), key=lambda kv: -kv[1][0])[:top]],
    }


def tests_of(tests: list[dict[str, Any]], process: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in tests if t.get("process") == process["process"]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=int(os.environ.get("TEST_WORKERS", 8)))
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--from", dest="source", type=Path, default=None,
                        help="report the files of an earlier run instead of running")
    args = parser.parse_args()
    run: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="suite-cpu-") as tmp:
        folder = args.source or Path(tmp)
        if args.source is None:
            run = run_suite(args.workers, folder)
        processes, tests = read_folder(folder)
    result = {**run, **summarise(processes, tests, args.top)}
    if run:
        print(f"{run['summary']}  (workers {run['workers']}, load {run['loadavg_before']}"
              f" → {run['loadavg_after']})")
        print(f"wall {run['wall_s']} s   CPU {run['cpu_s']} s (pytest and reaped children)"
              f"   PostgreSQL server {run['postgres_cpu_s']} s")
    print(f"{result['cases']} cases: {result['tests_cpu_s']} CPU-s in tests "
          f"({result['tests_child_cpu_s']} in their children)")
    print("CPU outside tests per process:", result["process_cpu_outside_tests_s"])
    if result["failed"]:
        print("failed:", *result["failed"], sep="\n  ")
    print(f"\n{'CPU s':>7} {'child':>6} {'wall':>6}  top tests")
    for t in result["top_tests"]:
        print(f"{t['cpu_s']:7.2f} {t['child_s']:6.2f} {t['wall_s']:6.1f}  {t['id']}")
    print(f"\n{'CPU s':>7} {'cases':>6}  top files")
    for f in result["top_files"]:
        print(f"{f['cpu_s']:7.1f} {f['cases']:6d}  {f['file']}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("cases", "tests_cpu_s")} |
                     {k: run[k] for k in ("wall_s", "cpu_s", "postgres_cpu_s") if k in run}))
    return 0 if run.get("returncode", 0) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
