"""Key composition, term sanitising and snippets: original text in, keys only for matching."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memory.snippet import highlight_snippet
from memory.terms import MAX_QUERY_TERMS, query_terms, whitespace_keys
from nlp import key_function

KEYS = key_function("builtin")


def test_default_keys_match_clitic_and_inflected_forms_on_both_paths() -> None:
    # Index and query meet on the stem: "والكتابات" (doc) vs "كتاب" (query).
    assert set(KEYS("كتاب")) & set(KEYS("قرأت والكتابات القديمة"))
    # ...and keep the whole word too, so an exact form can score higher.
    assert "كتابات" in KEYS("والكتابات")


def test_default_keys_drop_stopwords_from_both_forms() -> None:
    assert KEYS("في من على الى عن") == []


def test_query_terms_strip_every_query_operator() -> None:
    terms = query_terms(["\"سياسة\"", "(الاسترجاع)", "a&b", "x:*", "'", "!!"])
    assert terms == ["سياسة", "الاسترجاع", "a", "b", "x"]


@given(st.lists(st.text(), max_size=200))
def test_query_terms_are_bounded_word_runs(keys: list[str]) -> None:
    terms = query_terms(keys)
    assert len(terms) <= MAX_QUERY_TERMS and len(set(terms)) == len(terms)
    assert all(t and all(ch.isalnum() or ch == "_" for ch in t) for t in terms)


def test_snippet_highlights_original_words_matched_through_keys() -> None:
    text = "وبالنسبة للاسترجاع: يُمكنكم إرجاع المنتجات خلال ١٤ يوماً."
    snippet = highlight_snippet(text, set(KEYS("استرجاع منتج")), KEYS)
    assert "[[للاسترجاع]]" in snippet and "[[المنتجات]]" in snippet
    assert snippet.replace("[[", "").replace("]]", "") == text  # original, diacritics kept


def test_snippet_windows_around_the_densest_match() -> None:
    words = [f"حشو{i}" for i in range(200)]
    words[150:152] = ["رقم", "الطلب"]
    snippet = highlight_snippet(" ".join(words), {"رقم", "الطلب"}, whitespace_keys, window=20)
    assert "[[رقم]] [[الطلب]]" in snippet
    assert snippet.startswith("…") and snippet.endswith("…")
    assert "حشو0 " not in snippet
