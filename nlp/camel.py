"""Optional camel-tools morphology backend (extra ``diwaniya[camel]``).

Selecting it is an operator decision made at startup; it must fail loudly
then, not on the first request, when either the package or its morphology
database is missing.  Nothing here downloads data.

The backend replaces the light stemmer's search keys with *lemmas*: كتاب for
والكتاب، كتابها and also for the broken plural الكتب, which no affix-stripping
stemmer can reach.
"""

from __future__ import annotations

import json
import os
import re
import sys
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nlp.errors import ResourceUnavailable
from nlp.keys import KeyFunction, _counts_as_digits, _hashtag_parts, search_keys
from nlp.lexicon import STOPWORDS
from nlp.normalize import clean, fold
from nlp.tokens import TokenKind, typed_texts

if TYPE_CHECKING:
    from camel_tools.morphology.database import MorphologyDB

__all__ = ["DEFAULT_DB", "camel_lemma_keys", "require_camel_morphology"]

DEFAULT_DB = "calima-msa-r13"
# The camel-tools data package that provides DEFAULT_DB.
_DEFAULT_PACKAGE = "morphology-db-msa-r13"

# Words whose analyses are kept: a process sees a few tens of thousands of
# distinct words; 100k entries of (word, ≤1 key) stay well under 50 MB.
_CACHE_WORDS = 100_000
# Only plain Arabic letters U+0621–U+064A go to the analyser: after fold()
# there are no marks or tatweel, and anything else (پ U+067E, چ U+0686 …)
# would take camel's "foreign" path, whose defaults a database may not define.
_ARABIC_WORD = re.compile("[\u0621-\u064a]+")

def _install_hint(folder: Path) -> str:
    return (f"install it with `CAMELTOOLS_DATA={folder} camel_data -i {_DEFAULT_PACKAGE}` "
            f"(camel-tools' own downloader, run once by the operator)")


def _builtin_db_file(folder: Path, catalogue: dict[str, Any], name: str) -> Path:
    """Where camel-tools' ``MorphologyDB.builtin_db(name)`` would read its file.

    Resolved from catalogue.json ourselves so that a missing database is a
    ResourceUnavailable with instructions, not a camel-tools KeyError.
    """
    datasets = catalogue.get("components", {}).get("MorphologyDB", {}).get("datasets", {})
    if name not in datasets:
        known = ", ".join(sorted(datasets)) or "none"
        raise ResourceUnavailable(
            f"camel_db {name!r} is not a camel-tools morphology database in {folder} "
            f"(known: {known}); give a builtin name or the path of a .db file")
    return folder / "data" / datasets[name]["path"] / "morphology.db"


def require_camel_morphology(db: str = DEFAULT_DB, data_dir: Path | None = None) -> MorphologyDB:
    """Load camel-tools' morphology database or raise ResourceUnavailable.

    ``db`` is a builtin database name (``calima-msa-r13``) or the path of a
    morphology ``.db`` file in camel-tools' text format.  ``data_dir`` is the
    camel-tools data folder (default ``~/.camel_tools``; the composition root
    passes the operator's setting or CAMELTOOLS_DATA).

    camel-tools reads ``catalogue.json`` from its data folder when
    ``camel_tools.data`` is first imported and *downloads* one when it is
    missing; this service never downloads at run time, so the folder is
    checked before that import and camel-tools is pointed at it.

    >>> require_camel_morphology("calima-msa-r13")  # doctest: +SKIP
    <camel_tools.morphology.database.MorphologyDB object at ...>
    """
    folder = data_dir if data_dir is not None else Path.home() / ".camel_tools"
    catalogue_file = folder / "catalogue.json"
    if not catalogue_file.is_file():
        raise ResourceUnavailable(
            f"camel-tools data is not installed in {folder} (no catalogue.json); "
            + _install_hint(folder))
    try:
        catalogue = json.loads(catalogue_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ResourceUnavailable(f"cannot read camel-tools {catalogue_file}: {exc}") from exc
    if db.endswith(".db") or os.sep in db or "/" in db:
        db_file = Path(db)
        if not db_file.is_file():
            raise ResourceUnavailable(f"camel_db {db!r}: no such morphology database file")
    else:
        db_file = _builtin_db_file(folder, catalogue, db)
        if not db_file.is_file():
            raise ResourceUnavailable(
                f"camel-tools morphology database {db!r} is not installed ({db_file} is "
                f"missing); " + _install_hint(folder))
    if "camel_tools.data" not in sys.modules:
        # camel-tools takes its data folder from the environment at import time.
        os.environ["CAMELTOOLS_DATA"] = str(folder)
    try:
        from camel_tools.morphology.database import MorphologyDB
    except ImportError as exc:
        raise ResourceUnavailable(
            "camel-tools is not installed; install the extra: pip install 'diwaniya[camel]'"
        ) from exc
    except OSError as exc:  # camel-tools creates ~/.camel_tools on import (read-only home)
        raise ResourceUnavailable(f"camel-tools cannot start: {exc}") from exc
    try:
        return MorphologyDB(str(db_file), "a")
    except Exception as exc:  # camel-tools' DatabaseParseError, KeyError on bad files
        raise ResourceUnavailable(
            f"cannot load camel-tools morphology database {db_file}: {exc!r}") from exc


def _logprob(analysis: dict[str, Any]) -> float:
    try:
        return float(analysis.get("pos_lex_logprob", -99.0))
    except (TypeError, ValueError):
        return -99.0


def camel_lemma_keys(db: MorphologyDB) -> KeyFunction:
    """Search keys from camel-tools lemmas, drop-in for ``nlp.search_keys``.

    Text goes through the product's own clean → fold → tokenize path.  Each
    Arabic word (and each Arabic part of a hashtag) is analysed over ``db``;
    its key is the folded lemma of the analysis with the highest
    ``pos_lex_logprob`` (ties: the alphabetically first folded lemma, so the
    choice never depends on database order).  A word with no analysis keeps
    ``nlp.search_keys``' stem.  Stopwords are dropped, before analysis and as
    lemmas (وهو → هو is dropped as search_keys drops it).  Latin, Arabizi and
    number tokens are keyed by ``nlp.search_keys`` itself, in one call so that
    its Arabizi-or-English decision sees the same Latin words; their keys are
    placed where the first of them stood.  Analyses are memoised per word.

    >>> keys = camel_lemma_keys(require_camel_morphology())  # doctest: +SKIP
    >>> keys("والكتاب الجديد، كتابها والكتب في المكتبة 3 Routers")  # doctest: +SKIP
    ['كتاب', 'جديد', 'كتاب', 'كتاب', 'مكتبه', '3', 'router']
    """
    try:
        from camel_tools.morphology.analyzer import Analyzer

        analyzer = Analyzer(db)
    except Exception as exc:  # AnalyzerError: not a MorphologyDB, or opened without 'a'
        raise ResourceUnavailable(f"camel-tools cannot analyse with {db!r}: {exc}") from exc

    def best_lemma(word: str) -> str | None:
        best: tuple[float, str] | None = None
        for analysis in analyzer.analyze(word):
            lemma = fold(str(analysis.get("lex", "")))
            if lemma:
                candidate = (-_logprob(analysis), lemma)
                if best is None or candidate < best:
                    best = candidate
        return best[1] if best else None

    @lru_cache(maxsize=_CACHE_WORDS)
    def word_keys(word: str) -> tuple[str, ...]:
        if word in STOPWORDS:
            return ()
        lemma = best_lemma(word) if _ARABIC_WORD.fullmatch(word) else None
        if lemma is None:
            return tuple(search_keys(word))
        return () if lemma in STOPWORDS else (lemma,)

    def keys(text: str) -> list[str]:
        out: list[str] = []
        others: list[str] = []  # Latin, Arabizi, numbers, non-Arabic hashtag parts
        slot = 0
        # Counts as digits, as in search_keys («ثلاثة أيام» → 3 ايام), so the
        # two backends agree on numbers; Arabizi counts are left to search_keys.
        for kind, tok in _counts_as_digits(typed_texts(fold(clean(text))), False):
            if kind is TokenKind.WORD:
                out.extend(word_keys(tok))
                continue
            pieces: list[str] = []
            if kind is TokenKind.HASHTAG:
                for part in _hashtag_parts(tok):
                    if _ARABIC_WORD.fullmatch(part):
                        out.extend(word_keys(part))
                    else:
                        pieces.append("#" + part)
            elif kind in (TokenKind.LATIN, TokenKind.NUMBER):
                pieces.append(tok)
            if pieces and not others:
                slot = len(out)
            others.extend(pieces)
        if others:
            out[slot:slot] = search_keys(" ".join(others))
        return out

    return keys
