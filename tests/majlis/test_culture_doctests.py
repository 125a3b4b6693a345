"""The Arabic examples in the culture docstrings are run, so they cannot drift."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["majlis.culture", "majlis.culture.calendar", "majlis.culture.clock",
           "majlis.culture.compose", "majlis.culture.cues", "majlis.culture.greetings",
           "majlis.culture.phases", "majlis.culture.phrases", "majlis.culture.tone"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no example"
    assert result.failed == 0
