"""Choosing the key function: the Arabic pipeline's, unless told otherwise.

The default indexes and queries each word twice over: its light stem
(``nlp.search_keys``: كتاب for والكتابات) and its whole folded form with only
proclitics removed (``nlp.words``: كتابات).  Stems give recall across
inflections; the whole form lets an exact-form match outrank a mere shared
stem.  Measured on ARCD with BM25 (bench/retrieval.py): +0.2 pt recall@1 and
+0.8 pt recall@5 over stems alone.
"""

from __future__ import annotations

import importlib
from typing import cast

from diwaniya.errors import ConfigurationError
from memory.expansion import Expander
from memory.terms import KeyFunction

__all__ = ["default_expander", "default_keys", "stem_and_surface_keys"]


def stem_and_surface_keys(
    stems: KeyFunction, surface: KeyFunction, stopwords: frozenset[str]
) -> KeyFunction:
    """Compose stem keys with whole-word keys (stopwords dropped from the latter).

    >>> stems, whole = (lambda t: ["كتاب"]), (lambda t: ["في", "كتابات"])
    >>> keys = stem_and_surface_keys(stems, whole, frozenset({"في"}))
    >>> keys("في الكتابات")
    ['كتاب', 'كتابات']
    """

    def keys(text: str) -> list[str]:
        out = stems(text)
        out.extend(w for w in surface(text) if w not in stopwords)
        return out

    return keys


def default_keys() -> KeyFunction:
    """Stems plus surface forms from the Arabic pipeline, same on index and query.

    Imported lazily so ``memory`` can be imported (and tested with an injected
    key function) without loading the Arabic pipeline's resources.

    >>> default_keys()("والكتابات في المكتبة")
    ['كتاب', 'مكتب', 'كتابات', 'مكتبه']
    """
    try:
        nlp = importlib.import_module("nlp")
        lexicon = importlib.import_module("nlp.lexicon")
    except ImportError as exc:
        raise ConfigurationError(f"the Arabic pipeline (nlp) is not importable: {exc}") from exc
    return stem_and_surface_keys(
        cast(KeyFunction, nlp.search_keys),
        cast(KeyFunction, nlp.words),
        frozenset(lexicon.STOPWORDS),
    )


def default_expander() -> Expander:
    """The dialect → MSA search bridge (``nlp.dialect_to_msa``), imported lazily.

    >>> default_expander()("وين فروعكم؟")
    ['أين', 'فرع', 'فروع']
    """
    try:
        bridge = importlib.import_module("nlp.bridge")
    except ImportError as exc:
        raise ConfigurationError(f"the Arabic pipeline (nlp) is not importable: {exc}") from exc
    return cast(Expander, bridge.dialect_to_msa)
