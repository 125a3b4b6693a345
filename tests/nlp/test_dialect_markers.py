"""The regional evidence lexicon (nlp/data/dialect_markers.tsv) and the backing of a mirror.

A word several regions say counts for each of them; a reply mirrors a region
only when no other region has more of the thread's marker words (the country
counting as one lean word): the identifier's read of words every region says
may break a tie, never overrule them.
"""

from __future__ import annotations

import pytest

from majlis.culture import MIRROR_THRESHOLD
from majlis.nodes.analyse import shared_greeting_phrases
from nlp import load_dialect_identifier
from nlp.dialect import MARKERS, dialect_words
from nlp.dialect_thread import (
    _MARKERS,
    _SHARED,
    DIALECTS,
    LEAN_LOGIT,
    STRONG_LOGIT,
    ThreadDialect,
    message_evidence,
    parse_markers,
    shared_words,
)

IDENT = load_dialect_identifier()
SHARED = shared_words(shared_greeting_phrases())


def test_every_marker_of_the_identifier_is_listed_with_its_regions() -> None:
    # An unlisted classifier marker would count for the identifier's one region.
    missing = [(region, word) for region, words in MARKERS.items() if region != "msa"
               for word in words for w in dialect_words(word)
               if w not in _MARKERS and w not in _SHARED]
    assert not missing


@pytest.mark.parametrize(("word", "regions"), [
    ("بغيت", {"maghrebi", "gulf"}),           # Moroccan "I want", Gulf "I wanted"
    ("وين", {"gulf", "iraqi", "levantine"}),
    ("امتى", {"egyptian", "levantine", "maghrebi"}),
    ("لحد", {"egyptian", "levantine", "iraqi"}),
    ("كتير", {"levantine", "egyptian"}),
    ("شنو", {"iraqi", "gulf", "maghrebi"}),
])
def test_a_word_several_regions_say_counts_for_each(word: str, regions: set[str]) -> None:
    (folded,) = dialect_words(word)
    assert set(_MARKERS[folded]) == regions
    assert set(_MARKERS[folded].values()) == {LEAN_LOGIT}  # equal: no region owns it
    evidence = message_evidence(IDENT, f"{word} الطلب", shared=SHARED)
    assert {r for r, v in evidence.marker_logits.items() if v} == regions


@pytest.mark.parametrize(("text", "error"), [
    ("وين\tgulf\nوين\tiraqi\n", "listed twice"),
    ("وين\tsyrian\n", "unknown region"),
    ("وين\tgulf:weak\n", "unknown region"),
    ("وين\n", "expected"),
    ("وين كده\tgulf\n", "expected"),
])
def test_malformed_rows_are_refused(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_markers(text)


def test_strengths() -> None:
    shared, markers = parse_markers("# c\nهلا\tshared\nهسه\tiraqi,levantine:lean\n")
    assert shared == {"هلا"}
    assert markers == {"هسه": {"iraqi": STRONG_LOGIT, "levantine": LEAN_LOGIT}}


def test_shared_words_alone_back_no_region_over_the_country() -> None:
    # «وين» is Iraqi as much as Gulf: the identifier's gulf read of the rest
    # (0.8+) crosses the threshold, but nothing backs gulf over Iraq's country.
    thread = ThreadDialect().observe(
        message_evidence(IDENT, "وين أحط كود الخصم بالضبط؟", shared=SHARED))
    seen = thread.with_prior("iraqi")
    assert seen.region == "gulf" and seen.confidence >= MIRROR_THRESHOLD
    assert not seen.backed
    assert thread.with_prior("gulf").backed  # a Gulf caller: the tie goes to its country


def test_a_lean_word_never_outweighs_the_country_but_a_strong_one_does() -> None:
    # Moroccan Arabizi: the French «de» transliterates to «دي», an Egyptian lean.
    lean = ThreadDialect().observe(
        message_evidence(IDENT, "ch7al taman de l'abonnement?", shared=SHARED))
    seen = lean.with_prior("maghrebi")
    assert seen.region == "egyptian" and seen.confidence >= MIRROR_THRESHOLD
    assert not seen.backed
    strong = ThreadDialect().observe(
        message_evidence(IDENT, "عايز اعرف الطلب بتاعي فين", shared=SHARED))
    assert strong.with_prior("gulf").region == "egyptian" and strong.with_prior("gulf").backed


def test_marker_evidence_survives_the_checkpoint_and_old_checkpoints_stay_backed() -> None:
    thread = ThreadDialect().observe(message_evidence(IDENT, "شكد سعر التوصيل؟", shared=SHARED))
    again = ThreadDialect.from_dict(thread.to_dict())
    assert again.marker_evidence == pytest.approx(thread.marker_evidence)
    assert again.with_prior("gulf").backed and again.with_prior("gulf").region == "iraqi"
    # Written before marker evidence was kept: the posterior alone decides, as it did.
    legacy = {"log_evidence": dict(thread.to_dict()["log_evidence"]), "weight": thread.weight}
    assert ThreadDialect.from_dict(legacy).backed
    # Nothing observed yet (greetings only): a fresh tally, not the legacy pass.
    fresh = ThreadDialect.from_dict({"log_evidence": dict.fromkeys(DIALECTS, 0.0), "weight": 0})
    assert fresh.marker_evidence == dict.fromkeys(DIALECTS, 0.0)
    assert not fresh.backed  # no evidence and no country: nothing to mirror


def test_without_a_country_the_identifier_breaks_a_tie_of_shared_words() -> None:
    # «ليش» is Gulf, Iraqi and Levantine; «تردون» (the Gulf plural) no row lists.
    thread = ThreadDialect().observe(
        message_evidence(IDENT, "ليش ما تردون على الاتصال؟", shared=SHARED))
    assert thread.region == "gulf" and thread.backed
    assert not thread.with_prior("levantine").backed  # a Levantine caller: not overruled
