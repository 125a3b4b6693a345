"""clean/fold: examples from real dialect text plus hypothesis properties."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nlp import clean, fold, search_keys, tokenize, words

_CONTROLS = (
    "\u200b\u200c\u200d\u200e\u200f\u2060\ufeff"  # zero-width
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"  # bidi
    "\u206a\u206b\u206c\u206d\u206e\u206f"  # deprecated format controls (always removed)
)
# clean() may also insert U+034F (grapheme joiner) into a run of more than 30
# combining marks (UAX #15 stream-safe form): invisible, and not the user's.
_STRIP_ALL = {ord(c): None for c in _CONTROLS + "\u034f"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("شلون\u200cك حبيبي", "شلونك حبيبي"),  # Gulf, ZWNJ inside a word
        ("عايز\u200b اشحن الرصيد", "عايز\u200b اشحن الرصيد"),  # ZWSP between words: kept
        ("\ufeffكيفك؟", "كيفك؟"),  # Levantine, leaked BOM
        ("\u202eواش راك", "واش راك"),  # Maghrebi, unbalanced RLO
        ("السعر \u2067iPhone 15\u2069 غالي", "السعر \u2067iPhone 15\u2069 غالي"),  # RLI…PDI kept
        ("شكو ماكو\u202c", "شكو ماكو"),  # Iraqi, stray PDF
        # Balanced overrides/embeddings are spoofing (a reversed order number): removed.
        ("طلبي رقم \u202e48213\u202c ما وصل", "طلبي رقم 48213 ما وصل"),
        ("\u202bوين الطلب\u202c يا جماعة", "وين الطلب يا جماعة"),
        ("\u2067\u202eabc\u202c\u2069", "\u2067abc\u2069"),  # override inside an isolate
        ("ازيك \u206eيا\u206f باشا", "ازيك يا باشا"),  # deprecated format controls
        ("كَتَبَ الوَلَدُ", "كَتَبَ الوَلَدُ"),  # MSA diacritics are the user's
        ("👨\u200d👩\u200d👧 عيلة", "👨\u200d👩\u200d👧 عيلة"),  # emoji ZWJ sequence intact
    ],
)
def test_clean_examples(raw: str, expected: str) -> None:
    assert clean(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("إِلَى المَدْرَسَةِ", "الي المدرسه"),
        ("أهلاً وسهلاً", "اهلا وسهلا"),
        ("مـــــرحبا", "مرحبا"),
        ("آسف ٱلله", "اسف الله"),
        ("کیف", "كيف"),  # Persian keyboard kaf/yeh
        ("رقمي ٠٥٥١٢٣ و ۰۹۸", "رقمي 055123 و 098"),
        ("iPhone STRASSE", "iphone strasse"),
        ("سؤال رئيس", "سؤال رئيس"),  # seated hamzas kept (documented decision)
        ("ﻻ", "لا"),  # presentation-form ligature
    ],
)
def test_fold_examples(raw: str, expected: str) -> None:
    assert fold(raw) == expected


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_fold_is_idempotent(text: str) -> None:
    once = fold(text)
    assert fold(once) == once


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("كتبالوَُِّْةىأإآـ ٣" + _CONTROLS)))
def test_fold_is_idempotent_on_arabic(text: str) -> None:
    assert fold(fold(text)) == fold(text)


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_clean_only_removes_controls_and_normalises(text: str) -> None:
    out = clean(text)
    # Every character clean() removed is one of the listed controls; all the rest
    # is the user's text up to NFC.
    assert unicodedata.normalize("NFC", out.translate(_STRIP_ALL)) == unicodedata.normalize(
        "NFC", text.translate(_STRIP_ALL)
    )


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("شلونكحبيبي َُ " + _CONTROLS)))
def test_clean_keeps_letters_and_diacritics(text: str) -> None:
    out = clean(text)
    # NFC may reorder stacked marks canonically, nothing else: the same letters
    # and diacritics, in canonically equivalent order.
    nfc = unicodedata.normalize
    assert nfc("NFC", out.translate(_STRIP_ALL)) == nfc("NFC", text.translate(_STRIP_ALL))
    assert sorted(out.translate(_STRIP_ALL)) == sorted(text.translate(_STRIP_ALL))
    assert clean(out) == out


@pytest.mark.parametrize(
    "text",
    [
        "ب" * 100_000,
        "\u200b\u202e\u2066\ufeff" * 25_000,
        "😂👨\u200d👩\u200d👧🇸🇦" * 12_500,
        "\u202a" * 50_000 + "\u202c" * 50_000,
        "كَ\u200c" * 33_000,
        "x" + " " * 100_000,  # a trailing run must not be rescanned per position
        "ب" + "\u200b \u2066" * 33_000,
        "@" * 100_000,
        "#" + "_" * 100_000,
        "\u064e\u0650" * 50_000,  # alternating marks: NFC's insertion sort was O(n²)
        "a." * 50_000,  # e-mail alternative retried from every position was O(n²)
        "ب" * 100_000 + "@",
    ],
)
def test_pathological_inputs_complete(text: str) -> None:
    assert isinstance(fold(clean(text)), str)
    toks = tokenize(text)
    assert all(text[t.start : t.end] == t.text for t in toks)
    assert isinstance(search_keys(text), list)
    assert isinstance(words(text), list)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(min_codepoint=0x0600, max_codepoint=0x06FF)))
def test_fold_equals_the_plain_translation_table(text: str) -> None:
    # fold() applies its table with regex + str.replace for speed; it must be
    # exactly the documented character table.
    from nlp.normalize import _FOLD_TABLE, _stream_safe

    nfc = unicodedata.normalize("NFC", _stream_safe(text))
    assert fold(text) == nfc.translate(_FOLD_TABLE).casefold()


def test_overlong_mark_runs_are_made_stream_safe() -> None:
    # 31+ marks on one letter get U+034F after every 30th (UAX #15): clean keeps
    # every mark the user typed, fold drops them all, both stay idempotent.
    text = "ب" + "\u064e\u0650" * 40
    out = clean(text)
    assert out.replace("\u034f", "").count("\u064e") == 40
    assert out.count("\u034f") == 2
    assert clean(out) == out
    assert fold(text) == "ب" == fold(out)
