"""French loans keep their accents in Maghrebi Arabizi; the bridge reads them (issue 10).

«réclamation», «la fièvre», «pièce» were cut by the Latin word pattern [a-z0-9']
at the accent («r» + «clamation»), so the lexicon's «reclamation» or «fièvre»
entries never met them.  Accents are folded for matching only (nlp.normalize.
latin_lower).  Sentences written for these tests, not taken from bench/data.
"""

from __future__ import annotations

import pytest

import nlp
from nlp.bridge import parse_bridge
from nlp.normalize import latin_lower


def test_accents_and_ligatures_fold_and_arabic_is_untouched() -> None:
    assert latin_lower("Réclamation À LA Caisse, sœur") == "reclamation a la caisse, soeur"
    assert latin_lower("الفاتورة أرخص؟ é") == "الفاتورة أرخص؟ e"


@pytest.mark.parametrize(("message", "msa"), [
    ("3andi réclamation 3la la facture", "شكوى"),  # a complaint about the bill
    ("weldi 3ando la fièvre, n9der njibo?", "حمى"),  # my son has a fever
    ("RÉCLAMATION", "شكوى"),
])
def test_an_accented_loan_meets_its_entry(message: str, msa: str) -> None:
    assert msa in nlp.dialect_to_msa(message)


def test_an_entry_written_with_its_accent_matches_the_plain_spelling_too() -> None:
    bridge = parse_bridge("dépôt\tإيداع\tarabizi")
    assert "إيداع" in bridge.expand("fin ndir le depot?")
    assert "إيداع" in bridge.expand("fin ndir le dépôt?")
