"""The bridge's per-word work is cached: what a cache hands out must not be changeable.

A word's forms and verb stems are computed once and shared by every later
turn that says the word (issue #11: Python calls per turn); a caller that
mutated a shared set would change the expansion of every later message.
"""

from __future__ import annotations

from nlp.bridge import load_bridge
from nlp.bridge_forms import arabic_forms, verb_stems


def test_shared_word_results_are_frozen() -> None:
    assert isinstance(verb_stems("ترجعولي"), frozenset)
    assert isinstance(arabic_forms("والحين"), frozenset)
    assert verb_stems("ترجعولي") is verb_stems("ترجعولي")


def test_expansion_is_the_same_when_the_words_come_again() -> None:
    b = load_bridge()
    text = "شلونك؟ وين وصل طلبي؟ بغيت نبدل العنوان ديال التوصيل"
    first = b.expand(text)
    assert first  # dialect words with MSA equivalents
    assert b.expand(text) == first
    assert b.expand(f"{text} والحين") [: len(first)] == first
