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


@pytest.mark.parametrize("command", [["serve", "--listen", "127.0.0.1:0"],
                                     ["kb", "search", "--direct", "--tenant", "t", "كتاب"]])
def test_cli_exits_non_zero_with_the_message(tmp_path: Path, command: list[str]) -> None:
    done = _run({"DIWANIYA_DATA_DIR": str(tmp_path / "data"), "DIWANIYA_SEARCH_KEYS": "camel",
                 "DIWANIYA_CAMEL_DATA_DIR": str(tmp_path / "nowhere")}, *command)
    assert done.returncode == 2
    assert "diwaniya: DIWANIYA_SEARCH_KEYS=camel cannot start" in done.stderr
    assert "camel_data -i morphology-db-msa-r13" in done.stderr


def test_kb_ingest_and_search_share_the_camel_keys(tmp_path: Path) -> None:
    data, db_file = write_tiny_camel_data(tmp_path)
    doc = tmp_path / "stock.md"
    doc.write_text("# المخزن\n\nوصلت الكتب إلى المخزن صباح اليوم.\n", encoding="utf-8")
    env = {"HOME": str(tmp_path), "DIWANIYA_DATA_DIR": str(tmp_path / "data"),
           "DIWANIYA_SEARCH_KEYS": "camel", "DIWANIYA_CAMEL_DATA_DIR": str(data),
           "DIWANIYA_CAMEL_DB": str(db_file)}
    assert _run(env, "migrate").returncode == 0
    ingested = _run(env, "kb", "ingest", "--direct", "--tenant", "shop", str(doc))
    assert ingested.returncode == 0, ingested.stderr
    # والكتاب and الكتب share only their lemma كتاب (the light stems differ).
    found = _run(env, "kb", "search", "--direct", "--tenant", "shop", "والكتاب")
    assert found.returncode == 0, found.stderr
    hits = [json.loads(line) for line in found.stdout.splitlines()]
    assert hits and "الكتب" in hits[0]["snippet"]
