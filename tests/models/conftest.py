"""Fixtures for the model layer; the lead may lift them into the root conftest."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# `tests` is not a package on sys.path under pytest's default import mode; put
# the repository root there so `tests.fakes` imports the same way everywhere.
# (Drop this once pyproject sets `pythonpath = ["."]`.)
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.fakes import ScriptedOpenAIServer, WebhookServer  # noqa: E402


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    server = ScriptedOpenAIServer()
    yield server
    server.close()


@pytest.fixture
def webhook_server() -> Iterator[WebhookServer]:
    server = WebhookServer()
    yield server
    server.close()
