"""The ``diwaniya`` command line: kb --direct ingest / search / delete, as an operator runs it
(the server-client path: tests/service/test_knowledge_cli.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

POLICY = """# سياسة الاسترجاع

يمكن إرجاع المنتج خلال ١٤ يوماً من تاريخ الاستلام بشرط أن يكون بحالته الأصلية.

## الشحن

التوصيل داخل الكويت خلال يومين عمل، والشحن مجاني للطلبات فوق ١٠ دنانير.
"""


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DIWANIYA_DATA_DIR": str(tmp_path / "data")}
    env.pop("DATABASE_URL", None)
    return subprocess.run([sys.executable, "-m", "service", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def test_kb_direct_ingest_search_reingest_delete(tmp_path: Path) -> None:
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


def test_kb_direct_refuses_to_create_an_empty_store(tmp_path: Path) -> None:
    done = _run(tmp_path, "kb", "search", "--direct", "--tenant", "shop", "الاسترجاع")
    assert done.returncode == 2
    assert "no knowledge base at" in done.stderr and "diwaniya migrate" in done.stderr
    assert not (tmp_path / "data").exists()  # nothing was created


def test_kb_tenant_without_direct_is_refused(tmp_path: Path) -> None:
    done = _run(tmp_path, "kb", "search", "--tenant", "shop", "الاسترجاع")
    assert done.returncode == 2 and "--tenant needs --direct" in done.stderr
