"""DIWANIYA_SEARCH_KEYS: the operator's choice of memory key function, checked at startup."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from diwaniya.errors import ConfigurationError
from service import Settings, build_app
from tests.nlp.test_camel import write_tiny_camel_data
from tests.service._cli import run_cli


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env}
    full.pop("DATABASE_URL", None)
    full.pop("DIWANIYA_DATABASE_URL", None)
    return subprocess.run([sys.executable, "-m", "service", *args], env=full,
                          capture_output=True, text=True, timeout=120)


def test_builtin_is_the_default_and_unknown_backends_are_rejected() -> None:
    assert Settings().search_keys == "builtin"
    with pytest.raises(ValidationError):
        Settings(search_keys="snowball")


async def test_camel_without_data_fails_before_anything_is_opened(tmp_path: Path) -> None:
    empty = tmp_path / "camel_data"
    empty.mkdir()
    settings = Settings(data_dir=tmp_path / "data", search_keys="camel", camel_data_dir=empty)
    with pytest.raises(ConfigurationError) as err:
        await build_app(settings)
    message = err.value.message
    assert "DIWANIYA_SEARCH_KEYS=camel" in message
    assert f"CAMELTOOLS_DATA={empty} camel_data -i morphology-db-msa-r13" in message
    assert "DIWANIYA_SEARCH_KEYS=builtin" in message
    assert not (tmp_path / "data").exists()  # no database was created, nothing leaked


def _camel_nowhere(tmp_path: Path) -> dict[str, str]:
    return {"DIWANIYA_DATA_DIR": str(tmp_path / "data"), "DIWANIYA_SEARCH_KEYS": "camel",
            "DIWANIYA_CAMEL_DATA_DIR": str(tmp_path / "nowhere")}


def test_serve_exits_non_zero_with_the_message(tmp_path: Path) -> None:
    # A real process: the exit status an operator (or k8s) sees.  One worker:
    # on a 2-CPU host the default is a supervisor plus two children, each
    # importing the server; a failing child stopping the supervisor with its
    # message and code is test_workers.py's case.
    done = _run({**_camel_nowhere(tmp_path), "DIWANIYA_WORKERS": "1"},
                "serve", "--listen", "127.0.0.1:0")
    assert done.returncode == 2
    assert "diwaniya: DIWANIYA_SEARCH_KEYS=camel cannot start" in done.stderr
    assert "camel_data -i morphology-db-msa-r13" in done.stderr


def test_kb_exits_non_zero_with_the_message(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    done = run_cli(monkeypatch, capsys, _camel_nowhere(tmp_path),
                   "kb", "search", "--direct", "--tenant", "t", "كتاب")
    assert done.returncode == 2
    assert "diwaniya: DIWANIYA_SEARCH_KEYS=camel cannot start" in done.stderr
    assert "camel_data -i morphology-db-msa-r13" in done.stderr
    assert not (tmp_path / "data").exists()  # failed before opening the store


def test_kb_ingest_and_search_share_the_camel_keys(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data, db_file = write_tiny_camel_data(tmp_path)
    doc = tmp_path / "stock.md"
    doc.write_text("# المخزن\n\nوصلت الكتب إلى المخزن صباح اليوم.\n", encoding="utf-8")
    env = {"HOME": str(tmp_path), "DIWANIYA_DATA_DIR": str(tmp_path / "data"),
           "DIWANIYA_SEARCH_KEYS": "camel", "DIWANIYA_CAMEL_DATA_DIR": str(data),
           "DIWANIYA_CAMEL_DB": str(db_file),
           # camel-tools reads its data folder from here (require_camel_morphology
           # sets it); set by the test so monkeypatch restores it.
           "CAMELTOOLS_DATA": str(data)}
    assert run_cli(monkeypatch, capsys, env, "migrate").returncode == 0
    ingested = run_cli(monkeypatch, capsys, env, "kb", "ingest", "--direct", "--tenant", "shop",
                       str(doc))
    assert ingested.returncode == 0, ingested.stderr
    # والكتاب and الكتب share only their lemma كتاب (the light stems differ).
    found = run_cli(monkeypatch, capsys, env, "kb", "search", "--direct", "--tenant", "shop",
                    "والكتاب")
    assert found.returncode == 0, found.stderr
    hits = [json.loads(line) for line in found.stdout.splitlines()]
    assert hits and "الكتب" in hits[0]["snippet"]
