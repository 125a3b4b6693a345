"""What a record contributes to the index: its title's keys, then its text's.

The title (a KB document's name and heading path) is indexed with the body,
counted ``TITLE_WEIGHT`` times: questions name their subject ("متى ولد
خاشقجي؟") while the paragraph that answers often says only "ولد في …", and
a subject named in the title is stronger evidence than one in passing.
Measured on ARCD (BM25, stem+surface keys): title absent → recall@1 0.676,
once → 0.695, twice → 0.698–0.701, three times → 0.702–0.703 (ranges: two
revisions of nlp.search_keys).  The gain from 2 to 3 is a few queries; more
is not tried, to avoid fitting one data set.
"""

from __future__ import annotations

from memory.terms import KeyFunction, indexable_terms

__all__ = ["TITLE_WEIGHT", "record_terms"]

TITLE_WEIGHT = 3


def record_terms(title: str, text: str, keys: KeyFunction) -> list[str]:
    """Index terms for one record, duplicates kept (BM25 needs term frequency).

    >>> from memory.terms import whitespace_keys
    >>> record_terms("الاسترجاع", "سياسة الاسترجاع", whitespace_keys)
    ['الاسترجاع', 'الاسترجاع', 'الاسترجاع', 'سياسة', 'الاسترجاع']
    """
    head = indexable_terms(keys(title)) * TITLE_WEIGHT if title else []
    return head + indexable_terms(keys(text))
