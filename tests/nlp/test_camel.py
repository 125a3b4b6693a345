"""camel-tools: startup checks always; folding parity and lemma keys when installed.

The lemma-key tests build a tiny morphology database in camel-tools' own text
format, so they need the package but none of its (downloaded) data.  Under CI
(CI=true, which installs the extra) a missing camel-tools fails them.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import unicodedata
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memory import Kind, NewRecord, SqliteMemoryStore
from nlp import (
    KEYS_VERSION,
    KeyFunction,
    ResourceUnavailable,
    camel_lemma_keys,
    fold,
    key_function,
    keys_fingerprint,
    require_camel_morphology,
    search_keys,
    stem_and_surface_keys,
)
from tests.conftest import IN_CI


def _camel_tools() -> ModuleType:
    if IN_CI and importlib.util.find_spec("camel_tools") is None:
        pytest.fail("camel-tools is not installed (CI=true: `make camel` installs the extra)")
    return pytest.importorskip("camel_tools")


def test_selecting_camel_without_its_data_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(ResourceUnavailable, match="camel_data -i morphology-db-msa-r13"):
        require_camel_morphology(data_dir=tmp_path)


def test_an_unknown_database_name_or_missing_file_fails_clearly(tmp_path: Path) -> None:
    (tmp_path / "catalogue.json").write_text(json.dumps(_CATALOGUE), encoding="utf-8")
    with pytest.raises(ResourceUnavailable, match="not installed"):
        require_camel_morphology("calima-msa-r13", data_dir=tmp_path)
    with pytest.raises(ResourceUnavailable, match="known: calima-msa-r13"):
        require_camel_morphology("calima-xyz", data_dir=tmp_path)
    with pytest.raises(ResourceUnavailable, match="no such morphology database file"):
        require_camel_morphology(str(tmp_path / "missing.db"), data_dir=tmp_path)


# The shape of camel-tools' catalogue.json, with one database entry and no packages.
_CATALOGUE: dict[str, Any] = {
    "version": "1.6", "packages": {},
    "components": {"MorphologyDB": {"default": "calima-msa-r13", "datasets": {
        "calima-msa-r13": {"path": "morphology_db/calima-msa-r13"}}}},
}

# A morphology database in camel-tools' text format (see
# camel_tools/morphology/database.py): one noun كِتاب with its broken plural
# كُتُب, the verb كَتَب (more probable than the plural for bare كتب), the article
# ال / وال and the possessive suffix ها.  Prefix, stem and suffix categories
# combine only as the three compatibility tables allow.
_TINY_DB = """###DEFINES###
DEFINE pos pos:noun pos:verb
DEFINE lex lex:*open*
DEFINE diac diac:*open*
DEFINE bw bw:*open*
DEFINE gloss gloss:*open*
DEFINE pos_lex_logprob pos_lex_logprob:*open*
###DEFAULTS###
DEFAULT pos:noun lex:* diac:* bw:* gloss:* pos_lex_logprob:*
###ORDER###
ORDER pos diac lex bw gloss pos_lex_logprob
###TOKENIZATIONS###
TOKENIZATION diac
###STEMBACKOFF###
###PREFIXES###
\tPref-0\tdiac: bw: gloss:
ال\tNPref-Al\tdiac:ال bw:Al/DET gloss:the
وال\tNPref-wAl\tdiac:وَال bw:wa/CONJ+Al/DET gloss:and+the
###SUFFIXES###
\tSuff-0\tdiac: bw: gloss:
ها\tNSuff-hA\tdiac:ها bw:hA/POSS_PRON gloss:her
###STEMS###
كتاب\tN-sg\tdiac:كِتاب lex:كِتاب_1 pos:noun bw:kitAb/NOUN gloss:book pos_lex_logprob:-4.0
كتب\tN-pl\tdiac:كُتُب lex:كِتاب_1 pos:noun bw:kutub/NOUN gloss:books pos_lex_logprob:-4.0
كتب\tV-pv\tdiac:كَتَب lex:كَتَب-u_1 pos:verb bw:katab/PV gloss:write pos_lex_logprob:-3.5
###TABLE AB###
Pref-0 N-sg
Pref-0 N-pl
Pref-0 V-pv
NPref-Al N-sg
NPref-Al N-pl
NPref-wAl N-sg
NPref-wAl N-pl
###TABLE BC###
N-sg Suff-0
N-pl Suff-0
V-pv Suff-0
N-sg NSuff-hA
N-pl NSuff-hA
###TABLE AC###
Pref-0 Suff-0
Pref-0 NSuff-hA
NPref-Al Suff-0
NPref-wAl Suff-0
"""


def write_tiny_camel_data(tmp_path: Path) -> tuple[Path, Path]:
    """(camel-tools data folder with a catalogue, tiny morphology .db file) under tmp_path."""
    _camel_tools()
    data = tmp_path / "camel_data"
    data.mkdir()
    (data / "catalogue.json").write_text(json.dumps(_CATALOGUE), encoding="utf-8")
    db_file = tmp_path / "tiny.db"
    db_file.write_text(_TINY_DB, encoding="utf-8")
    return data, db_file


@pytest.fixture
def lemma_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KeyFunction:
    data, db_file = write_tiny_camel_data(tmp_path)
    # camel-tools creates ~/.camel_tools on import and reads CAMELTOOLS_DATA:
    # keep both inside tmp_path (require_camel_morphology sets the latter).
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CAMELTOOLS_DATA", str(data))
    return camel_lemma_keys(require_camel_morphology(str(db_file), data_dir=data))


def test_lemma_keys_meet_across_clitics_and_broken_plurals(lemma_keys: KeyFunction) -> None:
    assert lemma_keys("والكتاب") == lemma_keys("كتابها") == lemma_keys("الكتب") == ["كتاب"]
    # The built-in light stemmer cannot reach the broken plural.
    assert search_keys("الكتب") == ["كتب"]
    # Bare كتب is ambiguous (plural noun / verb): the higher pos_lex_logprob wins.
    assert lemma_keys("كتب") == ["كتب"]
    assert lemma_keys("والكتاب في الكتب") == ["كتاب", "كتاب"]  # stopword في dropped


def test_words_without_analysis_keep_the_builtin_key(lemma_keys: KeyFunction) -> None:
    for word in ("قلم", "والأقلام", "كتابه", "المكتبة"):
        assert lemma_keys(word) == search_keys(word), word
    assert lemma_keys("#الكتب_الجديدة") == ["كتاب", *search_keys("الجديدة")]


@pytest.mark.parametrize("text", [
    "3 Routers and the access point", "shlonak 7abibi", "#covid_19 2024",
    "wallah el ktab 7elo", "o'neil 3,000",
])
def test_latin_arabizi_and_numbers_are_keyed_as_search_keys_does(
        lemma_keys: KeyFunction, text: str) -> None:
    assert lemma_keys(text) == search_keys(text)


def test_mixed_text_keeps_word_order_around_latin(lemma_keys: KeyFunction) -> None:
    assert lemma_keys("الكتب 3 Routers كتابها") == ["كتاب", "3", "router", "كتاب"]


async def test_store_finds_a_passage_by_another_inflection(
        lemma_keys: KeyFunction, tmp_path: Path) -> None:
    passage = NewRecord(tenant="shop", kind=Kind.DOCUMENT, id="d1#0", doc_id="d1",
                        text="وصلت الكتب إلى المخزن")
    other = NewRecord(tenant="shop", kind=Kind.DOCUMENT, id="d2#0", doc_id="d2",
                      text="مواعيد التوصيل داخل المدينة")
    found: dict[str, list[str]] = {}
    for name, keys in (("camel", lemma_keys), ("builtin", search_keys)):
        store = SqliteMemoryStore(tmp_path / f"{name}.sqlite3", keys=keys)
        await store.setup()
        try:
            await store.put([passage, other])
            found[name] = [h.record.id for h in await store.search("shop", "والكتاب")]
        finally:
            await store.close()
    assert found["camel"] == ["d1#0"]
    assert found["builtin"] == []  # كتاب vs كتب: only the lemma makes them meet


async def test_switching_to_camel_rekeys_a_store_keyed_by_builtin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, db_file = write_tiny_camel_data(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("CAMELTOOLS_DATA", str(data))
    camel = key_function("camel", camel_db=str(db_file), camel_data_dir=data)
    # The database is part of the fingerprint: another one lemmatises differently.
    assert keys_fingerprint(camel) == f"camel/{db_file}/{KEYS_VERSION}"
    assert keys_fingerprint(key_function("builtin")) == f"builtin/{KEYS_VERSION}"
    path = tmp_path / "memory.sqlite3"
    builtin_store = SqliteMemoryStore(path, keys=stem_and_surface_keys)
    await builtin_store.setup()
    await builtin_store.put([NewRecord(tenant="shop", kind=Kind.DOCUMENT, id="d1#0",
                                       doc_id="d1", text="وصلت الكتب إلى المخزن")])
    await builtin_store.close()
    store = SqliteMemoryStore(path, keys=camel)
    await store.setup()
    try:
        assert await store.search("shop", "والكتاب") == []  # builtin keys: كتب, not كتاب
        report = await store.rekey()
        assert report.ran and (report.before, report.after) == (
            f"builtin/{KEYS_VERSION}", keys_fingerprint(camel))
        assert [h.record.id for h in await store.search("shop", "والكتاب")] == ["d1#0"]
    finally:
        await store.close()


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
    _camel_tools()
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


def test_counts_are_digits_as_in_the_builtin_keys(lemma_keys: KeyFunction) -> None:
    # «ثلاثة أيام» and «يومين» (no analysis in the tiny database) key as digits,
    # so a question with «3 ايام» meets a policy that spells the count out.
    assert "3" in lemma_keys("يعاد المبلغ خلال ثلاثة أيام")
    assert "2" in lemma_keys("بعد يومين")
