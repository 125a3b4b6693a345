"""The one check the shipped-lexicon cases of tests/nlp/test_bridge_*.py share.

Each such test is parametrised over ``(question, expected)``: a customer's
question and the policy words its bridge expansion must hold. The files keep
their own case tables (one per session's vocabulary); the assertion, and what
a failure prints (the question and the words it missed), is this one.
"""

from __future__ import annotations

import nlp


def assert_expands_to(question: str, expected: set[str]) -> None:
    """``nlp.dialect_to_msa(question)`` holds every word of ``expected``.

    >>> assert_expands_to("الباتري خلصت", {"بطارية"})
    >>> assert_expands_to("الباتري خلصت", {"بطارية", "مصعد"})
    Traceback (most recent call last):
    AssertionError: ('الباتري خلصت', ['مصعد'])
    """
    words = set(nlp.dialect_to_msa(question))
    assert expected <= words, (question, sorted(expected - words))
