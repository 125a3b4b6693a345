"""Lucene and CAMeL unit cases from ../shared/data/norm_unit_cases.tsv.

fold() is one combined folding, so CAMeL's single-step normalisers are
compared after folding both sides; documented deviations are listed here.
"""

from __future__ import annotations

import csv
from pathlib import Path

from nlp import fold, search_keys

# test_name → why our output differs from the library's expectation.
EXPECTED_DEVIATIONS = {
    # Latin words are case-folded for matching (Lucene's stem filter leaves case
    # to a separate LowerCaseFilter).
    "testNonArabic": "english (lowercased)",
}


def _cases(shared_data: Path) -> list[dict[str, str]]:
    with (shared_data / "norm_unit_cases.tsv").open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def test_norm_unit_cases(shared_data: Path) -> None:
    failures = {}
    for case in _cases(shared_data):
        op, name, inp, exp = case["operation"], case["test_name"], case["input"], case["expected"]
        if op == "lucene_ArabicNormalizationFilter":
            got, want = fold(inp), exp
        elif op == "lucene_ArabicStemFilter":
            got, want = " ".join(search_keys(inp)), exp
        else:  # CAMeL single-step normalisers: compare in the folded space
            got, want = fold(inp), fold(exp)
        if got != want:
            failures[name] = got
    assert set(failures) == set(EXPECTED_DEVIATIONS), failures
    assert failures["testNonArabic"] == "english"
