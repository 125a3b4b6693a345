"""Optional camel-tools morphology backend (extra ``diwaniya[camel]``).

Selecting it is an operator decision made at startup; it must fail loudly
then, not on the first request, when either the package or its morphology
database is missing.  Nothing here downloads data.
"""

from __future__ import annotations

from pathlib import Path

from diwaniya.errors import ConfigurationError

__all__ = ["require_camel_morphology"]

DEFAULT_DB = "calima-msa-r13"


def require_camel_morphology(db_name: str = DEFAULT_DB, data_dir: Path | None = None) -> object:
    """Load camel-tools' morphology database or raise ConfigurationError.

    Returns the ``camel_tools.morphology.database.MorphologyDB`` so the caller
    can build an analyser for lemma-based search keys.  ``data_dir`` is the
    camel-tools data folder (default ``~/.camel_tools``; pass the operator's
    CAMELTOOLS_DATA if set).  It is checked *before* importing
    ``camel_tools.data``, whose import downloads a catalogue when none is
    present — this service never downloads at run time.

    >>> require_camel_morphology()  # doctest: +SKIP
    <camel_tools.morphology.database.MorphologyDB object at ...>
    """
    folder = data_dir if data_dir is not None else Path.home() / ".camel_tools"
    if not (folder / "catalogue.json").is_file():
        raise ConfigurationError(
            f"morphology backend 'camel' is selected but no camel-tools data is installed in "
            f"{folder}; run `camel_data -i morphology-db-msa-r13` or choose the built-in backend"
        )
    try:
        from camel_tools.morphology.database import MorphologyDB
    except ImportError as exc:
        raise ConfigurationError(
            "morphology backend 'camel' is selected but camel-tools is not installed; "
            "install the extra: pip install 'diwaniya[camel]'"
        ) from exc
    try:
        return MorphologyDB.builtin_db(db_name)
    except Exception as exc:  # camel-tools signals missing data with its own errors
        raise ConfigurationError(
            f"morphology backend 'camel' is selected but its database {db_name!r} is not "
            f"installed; run `camel_data -i morphology-db-msa-r13` (camel-tools data) "
            f"or choose the built-in backend"
        ) from exc
