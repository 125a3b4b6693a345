"""Fixtures for the client tests: the scripted language model (the only fake)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes import ScriptedOpenAIServer


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    server = ScriptedOpenAIServer()
    yield server
    server.close()
