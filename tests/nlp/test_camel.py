"""camel-tools: startup check always; folding parity only when installed."""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import unicodedata
from pathlib import Path

import pytest

from diwaniya.errors import ConfigurationError
from nlp import fold, require_camel_morphology


def _camel_db_available() -> bool:
    if importlib.util.find_spec("camel_tools") is None:
        return False
    try:
        require_camel_morphology()
    except ConfigurationError:
        return False
    return True


@pytest.mark.skipif(_camel_db_available(), reason="camel-tools morphology data is installed")
def test_selecting_camel_without_its_data_fails_clearly() -> None:
    with pytest.raises(ConfigurationError, match="camel"):
        require_camel_morphology()


# What fold() does beyond camel-tools' chain, applied to camel's output so the
# rest must match exactly.  Each line is an intentional, documented difference.
_PERSIAN = str.maketrans({"ک": "ك", "ی": "ي", "ې": "ي", "ھ": "ه", "ە": "ه", "ۀ": "ه", "ۃ": "ه"})
_DIGITS = str.maketrans({**{0x0660 + i: str(i) for i in range(10)},
                         **{0x06F0 + i: str(i) for i in range(10)}})
# fold() also removes U+0653–U+065F and Quranic marks that dediac_ar keeps.
_EXTRA_MARKS = re.compile("[\u0610-\u061a\u0653-\u065f\u06d6-\u06ed\u0640]")
# fold() applies NFKC only to text with Arabic presentation forms, Latin-1
# compatibility or fullwidth characters; … ‼ ℓ elsewhere are left alone.
_NFKC_TRIGGER = re.compile("[\ufb50-\ufdff\ufe70-\ufefe\u00a0-\u00bf\uff00-\uffef]")


def _shared_texts(shared_data: Path) -> list[str]:
    texts = [json.loads(x)["text"] for x in (shared_data / "qa_arcd.corpus.jsonl").open()]
    with (shared_data / "dialect_id_combined.tsv").open(encoding="utf-8", newline="") as f:
        texts += [r["text"] for r in csv.DictReader(f, delimiter="\t")]
    return texts


def test_fold_parity_with_camel_tools(shared_data: Path) -> None:
    pytest.importorskip("camel_tools")
    from camel_tools.utils.dediac import dediac_ar
    from camel_tools.utils.normalize import (
        normalize_alef_ar,
        normalize_alef_maksura_ar,
        normalize_teh_marbuta_ar,
        normalize_unicode,
    )

    mismatches = []
    for text in _shared_texts(shared_data):
        # normalize_unicode (NFKC-like: … → ...) only where fold() uses NFKC.
        base = normalize_unicode(text) if _NFKC_TRIGGER.search(text) else text
        camel = dediac_ar(normalize_teh_marbuta_ar(normalize_alef_maksura_ar(
            normalize_alef_ar(base))))
        # Documented differences: Persian/Urdu letters, digits, extra marks and
        # tatweel, Latin case folding, NFKC of other compatibility characters.
        expected = _EXTRA_MARKS.sub("", camel)
        if _NFKC_TRIGGER.search(text):
            expected = unicodedata.normalize("NFKC", expected)
        expected = unicodedata.normalize("NFC", expected)
        expected = expected.translate(_PERSIAN).translate(_DIGITS).casefold()
        expected = normalize_alef_ar(normalize_alef_maksura_ar(normalize_teh_marbuta_ar(expected)))
        if fold(text) != expected:
            mismatches.append((text, fold(text), expected))
    assert not mismatches[:5], f"{len(mismatches)} texts differ"
