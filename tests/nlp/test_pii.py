"""nlp.pii on the labelled corpus (tests/nlp/pii_corpus.tsv + a seeded generator).

Per kind precision and recall are asserted and printed (``pytest -s``; the same
table is ``bench/pii.py``). Every hand-written row is also its own test: a
valid value vanishes from ``mask(text)`` and is reported with its detail; a
near miss stays as typed. Rows noted «KNOWN LIMIT» are scored, not asserted
one by one: they are there so the figures show the limits.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.facts import RuleFactExtractor, thread_facts
from nlp import pii
from tests.nlp import pii_corpus

HAND = pii_corpus.load()
CHECKED = [c for c in HAND if not c.note.startswith("KNOWN LIMIT")]
# Per kind, over the hand-written and generated rows (issue #15: the must-show).
MIN_PRECISION, MIN_RECALL, MIN_DETAIL = 0.97, 0.97, 0.97
# What the corpus must hold, valid and near miss, per detail (country and kind).
REQUIRED = {
    "card": {"visa", "mastercard", "amex", "mada"},
    "iban": {f"{c}_iban" for c in ("kw", "sa", "ae", "qa", "bh", "om", "eg", "jo", "ma")},
    "national_id": {"kw_civil_id", "sa_national_id", "sa_iqama", "ae_emirates_id",
                    "eg_national_id", "qa_id", "bh_cpr", "om_civil_id"},
    "phone": {"kw_phone", "sa_phone", "ae_phone", "qa_phone", "bh_phone", "om_phone",
              "eg_phone", "sa_ae_phone", "gulf_phone"},
    "email": {"email"},
}


@pytest.mark.parametrize("case", CHECKED, ids=[f"{i}-{c.detail}-{'mask' if c.mask else 'keep'}"
                                               for i, c in enumerate(CHECKED)])
def test_hand_written_row(case: pii_corpus.Case) -> None:
    found = [f for f in pii.find(case.text)
             if f.start < case.text.index(case.raw) + len(case.raw)
             and case.text.index(case.raw) < f.end]
    masked = pii.mask(case.text)
    if not case.mask:
        assert found == [], (case.note, found)
        assert masked == case.text  # a near miss stays exactly as typed
        return
    assert [f.detail for f in found] == [case.detail], (case.note, found)
    assert case.raw not in masked
    # The masked form keeps the last characters so the customer recognises it.
    assert found[0].masked in masked and pii.is_masked(found[0].masked)


def test_the_corpus_covers_every_country_and_kind() -> None:
    for want, rows in ((True, HAND), (False, HAND)):
        have = {(c.kind, c.detail) for c in rows if c.mask is want}
        for kind, details in REQUIRED.items():
            missing = {d for d in details if (kind, d) not in have}
            assert not missing, (kind, want, missing)
    generated = pii_corpus.generated()
    assert {c.detail for c in generated} >= {d for ds in REQUIRED.values() for d in ds} \
        - {"sa_ae_phone", "gulf_phone", "qa_id", "bh_cpr", "om_civil_id"}
    # Phones and IDs are typed in all three digit scripts.
    for kind in ("phone", "national_id"):
        texts = " ".join(c.raw for c in HAND if c.kind == kind and c.mask)
        assert any(ch in texts for ch in "٠١٢٣٤٥٦٧٨٩"), kind  # Arabic-Indic U+0660–0669
        assert any(ch in texts for ch in "۰۱۲۳۴۵۶۷۸۹"), kind  # Persian U+06F0–06F9
        assert any(ch in texts for ch in "0123456789"), kind


def test_precision_and_recall_per_kind() -> None:
    """Over the corpus, each kind's precision, recall and detail accuracy (printed with -s)."""
    scores = pii_corpus.score(pii_corpus.corpus())
    print("\n" + pii_corpus.table(scores))
    for kind, s in scores.items():
        assert s.valid >= 15 and s.near_misses >= 10, (kind, s)
        assert s.precision >= MIN_PRECISION, (kind, s.precision, s.misses)
        assert s.recall >= MIN_RECALL, (kind, s.recall, s.misses)
        assert s.detail_accuracy >= MIN_DETAIL, (kind, s.misses)


def test_masking_is_idempotent_and_keeps_the_rest() -> None:
    text = "السلام عليكم، بطاقتي ٤١١١ ١١١١ ١١١١ ١١١١ وجوالي 0501234567 والطلب 48213 ما وصل"
    once = pii.mask(text)
    assert once == "السلام عليكم، بطاقتي ****1111 وجوالي ****4567 والطلب 48213 ما وصل"
    assert pii.mask(once) == once


def test_fact_extractor_never_keeps_a_raw_value() -> None:
    facts = RuleFactExtractor().extract(
        "رقم جوالي 0501234567 وايميلي sara.k@example.com وبطاقتي 4111111111111111")
    stored = " ".join(f.text + f.value for f in facts)
    for raw in ("0501234567", "sara.k@example.com", "4111111111111111"):
        assert raw not in stored
    assert ("phone_number", "****4567") in [(f.slot, f.value) for f in facts]
    assert ("email", "s***@example.com") in [(f.slot, f.value) for f in facts]


def test_masked_input_still_gives_facts() -> None:
    """The engine masks before the extractor runs: masked forms are facts too."""
    facts = RuleFactExtractor().extract("رقم جوالي ****4567 وايميلي s***@example.com")
    assert [(f.slot, f.value) for f in facts] == [("phone_number", "****4567"),
                                                 ("email", "s***@example.com")]
    assert thread_facts("رقم جوالي ****4567") == {"phone_number": "****4567"}
    assert thread_facts("اسمي احمد ورقم طلبي ٤٨٢١٣") == {"name": "احمد", "order_number": "48213"}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789٠١٢٣٤٥٦٧٨٩ -+جوالي@a.", max_size=80))
def test_mask_is_idempotent_on_digit_soup(text: str) -> None:
    once = pii.mask(text)
    assert pii.mask(once) == once


def test_hostile_digit_runs_are_left_alone() -> None:
    """«1 1 1 …» has no personal data; the window budget keeps it cheap (bench-free check:
    the answer, not the time)."""
    text = ("1 " * 2000)[:4000]
    assert pii.mask(text) == text
