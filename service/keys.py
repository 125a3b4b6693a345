"""The text layer's startup resources, as the composition root loads them.

Light on purpose: ``diwaniya kb`` imports this module and the memory store,
not the conversation graph or the gRPC server, and still chooses the same key
function as the server (documents it indexes are found there).  ``nlp``'s
own errors become :class:`~diwaniya.errors.ConfigurationError` here, with
the settings to change.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import nlp
from diwaniya.errors import ConfigurationError
from service.settings import Settings

__all__ = ["dialect_identifier", "search_key_function"]


def search_key_function(settings: Settings,
                        environ: Mapping[str, str] | None = None) -> nlp.KeyFunction:
    """The memory key function the operator chose (``DIWANIYA_SEARCH_KEYS``).

    Selecting camel-tools without its package or data fails here, at startup,
    with what to install and which setting to change.  Loading a full
    morphology database takes seconds: call it off the event loop.
    """
    data_dir = settings.camel_data_dir
    env_dir = (environ or {}).get("CAMELTOOLS_DATA")
    if data_dir is None and env_dir:
        data_dir = Path(env_dir).expanduser()
    try:
        return nlp.key_function(settings.search_keys, camel_db=settings.camel_db,
                                camel_data_dir=data_dir)
    except nlp.ResourceUnavailable as exc:
        raise ConfigurationError(
            f"DIWANIYA_SEARCH_KEYS=camel cannot start: {exc.message}. Install the extra "
            f"(pip install 'diwaniya[camel]') and its data, point DIWANIYA_CAMEL_DATA_DIR / "
            f"DIWANIYA_CAMEL_DB at installed data, or set DIWANIYA_SEARCH_KEYS=builtin"
        ) from exc


def dialect_identifier() -> nlp.DialectIdentifier:
    """The packaged dialect model; a broken or missing artefact is a ConfigurationError."""
    try:
        return nlp.load_dialect_identifier()
    except nlp.ResourceUnavailable as exc:
        raise ConfigurationError(f"the dialect model cannot load: {exc.message}") from exc
