"""The ``diwaniya`` command line: kb --direct ingest / search / delete, as an operator runs it
(the server-client path: tests/service/test_knowledge_cli.py).

The commands run in-process (``service.cli.main``); one subprocess test runs
the real entry point and checks that ``diwaniya kb`` stays light.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.service._cli import CliRun, run_cli, run_probe

POLICY = """# سياسة الاسترجاع

يمكن إرجاع المنتج خلال ١٤ يوماً من تاريخ الاستلام بشرط أن يكون بحالته الأصلية.

## الشحن

التوصيل داخل الكويت خلال يومين عمل، والشحن مجاني للطلبات فوق ١٠ دنانير.
"""


def test_kb_ingest_search_reingest_delete(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def _run(tmp_path: Path, *args: str) -> CliRun:
        return run_cli(monkeypatch, capsys, {"DIWANIYA_DATA_DIR": str(tmp_path / "data")}, *args)

    doc = tmp_path / "policy.md"
    doc.write_text(POLICY, encoding="utf-8")
    assert _run(tmp_path, "migrate").returncode == 0
    first = _run(tmp_path, "kb", "ingest", "--direct", "--tenant", "shop", str(doc))
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["documents"] == 1 and report["chunks"] >= 2

    found = _run(tmp_path, "kb", "search", "--direct", "--tenant", "shop",
                 "كم يوم عندي لإرجاع المنتج؟")
    hits = [json.loads(line) for line in found.stdout.splitlines()]
    assert hits and "١٤" in hits[0]["snippet"]
    other = _run(tmp_path, "kb", "search", "--direct", "--tenant", "another", "إرجاع المنتج")
    assert other.returncode == 0 and other.stdout.strip() == ""  # tenants never mix

    again = _run(tmp_path, "kb", "ingest", "--direct", "--tenant", "shop", str(doc))
    assert json.loads(again.stdout)["chunks"] == report["chunks"]  # replaced, not doubled
    listed = _run(tmp_path, "kb", "list", "--direct", "--tenant", "shop")
    assert [json.loads(line)["id"] for line in listed.stdout.splitlines()] == ["policy.md"]
    got = json.loads(_run(tmp_path, "kb", "get", "--direct", "--tenant", "shop",
                          "policy.md").stdout)
    assert got["text"] == POLICY and got["chunk_count"] == report["chunks"]

    assert hits[0]["doc_id"] in report["doc_ids"]
    gone = _run(tmp_path, "kb", "delete", "--direct", "--tenant", "shop", hits[0]["doc_id"])
    assert gone.returncode == 0, gone.stderr
    assert json.loads(gone.stdout) == {"deleted": 1, "missing": []}
    after = _run(tmp_path, "kb", "search", "--direct", "--tenant", "shop", "إرجاع المنتج")
    assert after.stdout.strip() == ""


# The kb commands must not pay for the conversation graph or the gRPC server
# (issue #12: `diwaniya kb search` imported the whole server, 3.7 s).
_PROBE = """
import sys
from service.cli import main
code = main(["kb", "search", "--direct", "--tenant", "t", "كتاب"])
heavy = sorted(m for m in ("majlis", "grpc", "langgraph", "service.app", "service.server")
               if m in sys.modules)
print("heavy:", ",".join(heavy), "code:", code)
"""


def test_the_real_kb_entry_point_imports_memory_and_nlp_only(tmp_path: Path) -> None:
    done = run_probe(_PROBE, tmp_path / "data")
    assert done.returncode == 0, done.stderr
    # No store there: refused with status 2, after importing memory and nlp only.
    assert done.stdout.strip() == "heavy:  code: 2"


def test_kb_direct_refuses_to_create_an_empty_store(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"DIWANIYA_DATA_DIR": str(tmp_path / "data")}
    done = run_cli(monkeypatch, capsys, env, "kb", "search", "--direct", "--tenant", "shop",
                   "الاسترجاع")
    assert done.returncode == 2
    assert "no knowledge base at" in done.stderr and "diwaniya migrate" in done.stderr
    assert not (tmp_path / "data").exists()  # nothing was created


def test_kb_tenant_without_direct_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {"DIWANIYA_DATA_DIR": str(tmp_path / "data")}
    done = run_cli(monkeypatch, capsys, env, "kb", "search", "--tenant", "shop", "الاسترجاع")
    assert done.returncode == 2 and "--tenant needs --direct" in done.stderr
