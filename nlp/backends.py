"""The one place that chooses the search-key backend.

``builtin`` is the light stemmer plus whole words
(:func:`nlp.keys.stem_and_surface_keys`); ``camel`` is camel-tools lemmas
(:func:`nlp.camel.camel_lemma_keys`, extra ``diwaniya[camel]``).  The
composition root calls :func:`key_function` once and injects the result into
the memory store (and the ``diwaniya kb`` CLI does the same, so documents it
indexes are found by the server).  Loading camel-tools takes seconds: call
this off the event loop.

>>> keys = key_function("builtin")
>>> keys("والكتابات في المكتبة")
['كتاب', 'مكتب', 'كتابات', 'مكتبه']
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal

from nlp.camel import DEFAULT_DB, camel_lemma_keys, require_camel_morphology
from nlp.keys import KEYS_VERSION, KeyFunction, register_fingerprint, stem_and_surface_keys

__all__ = ["KEY_BACKENDS", "KeyBackend", "key_function"]

KeyBackend = Literal["builtin", "camel"]
KEY_BACKENDS: tuple[KeyBackend, ...] = ("builtin", "camel")


def key_function(backend: KeyBackend = "builtin", *, camel_db: str = DEFAULT_DB,
                 camel_data_dir: Path | None = None) -> KeyFunction:
    """The key function of ``backend``, named for ``nlp.keys_fingerprint``.

    Raises :class:`nlp.errors.ResourceUnavailable` when camel-tools or its data
    is missing, ``ValueError`` for an unknown backend name (a programmer error:
    settings validate the operator's choice first).

    >>> key_function("spacy")
    Traceback (most recent call last):
    ...
    ValueError: unknown search-key backend 'spacy' (known: builtin, camel)
    """
    if backend == "builtin":
        return stem_and_surface_keys
    if backend == "camel":
        return _camel_keys(camel_db, camel_data_dir)
    raise ValueError(f"unknown search-key backend {backend!r} (known: {', '.join(KEY_BACKENDS)})")


@functools.cache
def _camel_keys(camel_db: str, camel_data_dir: Path | None) -> KeyFunction:
    """One loaded morphology database per (database, folder) and process.

    A start with migrate-on-start asks for the key function twice (the re-key
    before serving, then ``build_app``); the database takes seconds and tens of
    MB to load and is read-only once loaded, so both share it.  A failed load
    raises and is not cached: the next call tries again.
    """
    # The database is part of the name: another one lemmatises differently.
    return register_fingerprint(
        camel_lemma_keys(require_camel_morphology(camel_db, camel_data_dir)),
        f"camel/{camel_db}/{KEYS_VERSION}")
