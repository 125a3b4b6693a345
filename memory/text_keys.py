"""What a record contributes to the index: its title's keys, then its text's.

The title (a KB document's name and heading path) is indexed with the body
because questions name their subject ("متى ولد خاشقجي؟") while a paragraph
often says only "ولد في …".
"""

from __future__ import annotations

from memory.terms import KeyFunction, indexable_terms

__all__ = ["record_terms"]


def record_terms(title: str, text: str, keys: KeyFunction) -> list[str]:
    """Index terms for one record, duplicates kept (BM25 needs term frequency).

    >>> from memory.terms import whitespace_keys
    >>> record_terms("الاسترجاع", "سياسة الاسترجاع", whitespace_keys)
    ['الاسترجاع', 'سياسة', 'الاسترجاع']
    """
    head = indexable_terms(keys(title)) if title else []
    return head + indexable_terms(keys(text))
