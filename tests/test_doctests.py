"""Every docstring example in nlp, memory, majlis and service runs, so none can drift.

One case per module that has examples (``+SKIP`` ones need a live store or
data and are shown, not run).  A module without examples is not a failure;
the total is, if it ever falls to a handful: the collector itself broke.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

PACKAGES = ("nlp", "memory", "majlis", "service")


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        names.append(package)
        root = importlib.import_module(package)
        names.extend(m.name for m in pkgutil.walk_packages(root.__path__, package + ".")
                     if m.name != "service.__main__")
    return sorted(names)


def _examples(name: str) -> int:
    finder = doctest.DocTestFinder()
    return sum(len(t.examples) for t in finder.find(importlib.import_module(name)))


WITH_EXAMPLES = [name for name in _modules() if _examples(name)]


def test_the_collector_finds_the_examples() -> None:
    assert len(WITH_EXAMPLES) > 50
    assert {"majlis.requests", "majlis.culture.greetings", "nlp.keys", "memory.terms"} <= set(
        WITH_EXAMPLES)


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name),
                             optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples failed"
