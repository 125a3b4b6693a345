"""Choosing the key function: the Arabic pipeline's, unless told otherwise."""

from __future__ import annotations

import importlib
from typing import cast

from diwaniya.errors import ConfigurationError
from memory.terms import KeyFunction

__all__ = ["default_keys"]


def default_keys() -> KeyFunction:
    """``nlp.search_keys``: THE key function for indexing and querying alike.

    Imported lazily so ``memory`` can be imported (and tested with an injected
    key function) without loading the Arabic pipeline's resources.
    """
    nlp = importlib.import_module("nlp")
    keys = getattr(nlp, "search_keys", None)
    if keys is None:
        raise ConfigurationError("nlp.search_keys is missing: the Arabic pipeline is not installed")
    return cast(KeyFunction, keys)
