"""The Arabic examples in the support and handoff docstrings are run, so they cannot drift."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["majlis.models.support", "majlis.nodes.handoff", "memory.facts",
           "majlis.models.phrases", "majlis.records", "majlis.reply_text", "majlis.turns"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0
