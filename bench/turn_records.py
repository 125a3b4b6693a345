"""Checkpoint serde cost of a turn's records, against the same values as plain dicts.

``.venv/bin/python bench/turn_records.py [--repeat 300] [--history 80]``

A turn's checkpoint holds its records (majlis.records: input, analysis,
setting, recollection, reply, outcome — 30 text deltas, 3 recalled chunks) and
the thread history (``--history`` messages). Each is written once per turn and
read back when the next turn starts. The records go through LangGraph's
Python ext hooks; dicts are packed natively — this prints what that costs per
turn, and why the history stays in its dict form (majlis.state). CPU time
(``time.process_time``), so a loaded machine slows it less than wall time.

Prints a table, writes bench/results/turn_records.json; the last line is one JSON object.
"""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.insert(0, str(_HERE.parent))

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from datetime import UTC, datetime  # noqa: E402
from typing import Any  # noqa: E402

from majlis.culture import read_cues  # noqa: E402
from majlis.models import Recalled  # noqa: E402
from majlis.persistence import checkpoint_serde  # noqa: E402
from majlis.records import (  # noqa: E402
    Analysis,
    CompletedTurn,
    HeldCall,
    ModelUsage,
    Recollection,
    Reply,
    Setting,
    ThreadMessage,
    TurnInput,
)

RESULTS = _HERE / "results" / "turn_records.json"
AT = datetime(2026, 11, 1, 7, 30, tzinfo=UTC)


def turn_records() -> dict[str, Any]:
    deltas = tuple({"text": "كلمة ", "kind": "text_delta"} for _ in range(30))
    text = "هلا والله، وين طلبي رقم 4411؟"
    return {
        "input": TurnInput("t" * 32, "default", "u1", "th" * 16, AT, "Asia/Kuwait", text=text,
                           request_id="r-1"),
        "analysis": Analysis("arabic", "gulf", 0.8, cues=read_cues(text),
                             dialect_thread={"log": {"gulf": 1.2, "iraqi": 0.1}, "weight": 2.0}),
        "setting": Setting("transaction", "greeting", False, 0, "gulf", "dialect",
                           "tone directive " * 20, "neutral", opening="هلا والله",
                           hijri=(1448, 5, 10), local_time=AT.isoformat(),
                           events=({"kind": "phase_changed", "previous": "greeting",
                                    "current": "transaction", "new_cycle": False},)),
        "recollection": Recollection(recalled=tuple(
            Recalled(f"id{i}", "document", "سياسة الإرجاع", "نص " * 50, "مقتطف " * 10, 0.5)
            for i in range(3))),
        "reply": Reply("ردّ " * 30, events=deltas, usage=ModelUsage("offline"),
                       held={"c1": HeldCall("cancel_order", '{"order_id": "4411"}', "t")}),
        "outcome": CompletedTurn("t" * 32, "ردّ " * 30, "transaction", "gulf", events=deltas),
    }


def plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value.isoformat() if isinstance(value, datetime) else value


def measure(values: dict[str, Any], repeat: int) -> dict[str, float]:
    serde = checkpoint_serde()
    started = time.process_time()
    for _ in range(repeat):
        blobs = [serde.dumps_typed(v) for v in values.values()]
    dump = (time.process_time() - started) / repeat
    started = time.process_time()
    for _ in range(repeat):
        back = [serde.loads_typed(b) for b in blobs]
    load = (time.process_time() - started) / repeat
    if back != list(values.values()):
        raise SystemExit("the serde did not give the values back")
    return {"dump_ms": round(dump * 1000, 3), "load_ms": round(load * 1000, 3),
            "bytes": sum(len(b[1]) for b in blobs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=300)
    ap.add_argument("--history", type=int, default=80)
    args = ap.parse_args()
    records = turn_records()
    history = [ThreadMessage("user" if i % 2 == 0 else "assistant", "هلا والله وين طلبي",
                             "t" * 32, "transaction", "gulf", AT) for i in range(args.history)]
    rows = {
        "turn records": measure(records, args.repeat),
        "turn as dicts": measure({k: plain(v) for k, v in records.items()}, args.repeat),
        f"history x{args.history} records": measure({"m": history}, args.repeat),
        f"history x{args.history} dicts": measure(
            {"m": [m.to_state() for m in history]}, args.repeat),
    }
    print(f"{'values':24s} {'dump ms':>9s} {'load ms':>9s} {'bytes':>8s}")
    for name, row in rows.items():
        print(f"{name:24s} {row['dump_ms']:9.3f} {row['load_ms']:9.3f} {row['bytes']:8d}")
    result = {"benchmark": "turn_records", "repeat": args.repeat, "history": args.history,
              "rows": rows}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, ensure_ascii=False, indent=2) + "\n", "utf-8")
    print(json.dumps(result, ensure_ascii=False))


if __name__ == "__main__":
    main()
