"""docs/api.md names every RPC and every TurnEvent case the .proto defines."""

from __future__ import annotations

from pathlib import Path

from diwaniya.v1 import conversations_pb2 as pb

DOC = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text(encoding="utf-8")


def test_every_rpc_has_a_section_with_a_grpcurl_command() -> None:
    service = pb.DESCRIPTOR.services_by_name["Conversations"]
    missing = [m.name for m in service.methods if f"### {m.name}" not in DOC
               or f"diwaniya.v1.Conversations/{m.name}" not in DOC]
    assert missing == [], f"docs/api.md lacks a section or grpcurl line for {missing}"


def test_every_event_case_is_listed_with_example_json() -> None:
    cases = [f.name for f in pb.TurnEvent.DESCRIPTOR.oneofs_by_name["event"].fields]
    missing = [c for c in cases if f"| `{c}`" not in DOC and f"`{c}` /" not in DOC
               and f"/ `{c}`" not in DOC]
    assert missing == [], f"docs/api.md's event table lacks {missing}"
    no_example = [c for c in cases if f'"{c}": {{' not in DOC]
    assert no_example == [], f"docs/api.md has no example JSON line for {no_example}"
