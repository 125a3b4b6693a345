"""Letter-level grounding features (majlis/models/grounding.py) on dialect questions
over a policy in a domain the bridge lexicon has no entries for (visas)."""

from __future__ import annotations

import nlp
from majlis.models.grounding import FEATURES, gate_features, gram_features, question_words
from majlis.models.types import Recalled

KEYS = nlp.search_keys
STOP = nlp.stop_keys_for(KEYS)
VISA = Recalled("visa.md#0", "document", "visa › التأشيرة",
                "تصدر التأشيرة السياحية خلال 5 أيام عمل. لا تصدر التأشيرة للمقيمين خارج المملكة.",
                "", 4.0)
FLIGHTS = Recalled("flights.md#0", "document", "flights › الرحلات",
                   "يسمح لكل مسافر بحقيبة واحدة وزنها 23 كيلوغراما.", "", 1.0)
ANSWER = ("تصدر التأشيرة السياحية خلال 5 أيام عمل.",)


def _features(question: str) -> dict[str, float]:
    return gram_features(question, ANSWER, VISA, [VISA, FLIGHTS], keys=KEYS, stop=STOP,
                         expand=nlp.dialect_to_msa)


def test_clitics_and_spelling_variants_are_found() -> None:
    # «بالتأشيرة» (proclitic ب+ال) and «السياحيه» (ه for ة) are the policy's words.
    f = _features("بالتأشيرة السياحيه اقدر اشتغل؟")
    assert f["best_word"] == 1.0
    assert f["sent_gram"] > 0.5
    assert f["specific"] > 0.5  # not in the flights policy


def test_new_domain_question_scores_above_unrelated_one() -> None:
    # Gulf: the visa question's subject is in the chunk; «خصم لكبار السن» is not.
    asked = _features("شكد تاخذ التأشيرة السياحية عشان تطلع؟")
    other = _features("عندكم خصم لكبار السن؟")
    assert asked["doc_gram"] > other["doc_gram"]
    assert asked["missing"] < other["missing"] == 1.0
    assert asked["kb_missing"] < other["kb_missing"]


def test_dialect_function_words_are_not_content() -> None:
    words = question_words("وش رسوم التوصيل عندكم؟", KEYS, STOP, nlp.dialect_to_msa)
    assert words == ["رسوم", "التوصيل"]


def test_all_features_with_lead_and_strength() -> None:
    f = gate_features("امتى تطلع التأشيرة؟", ANSWER, VISA, [VISA, FLIGHTS], lead=10.0,
                      strength=1.0, keys=KEYS, stop=STOP, expand=nlp.dialect_to_msa)
    assert set(f) == set(FEATURES)
    assert f["lead"] == 1.0 and f["strength"] == 1.0
    tie = gate_features("امتى تطلع التأشيرة؟", ANSWER, VISA, [VISA], lead=1.0, strength=0.0,
                        keys=KEYS, stop=STOP, expand=nlp.dialect_to_msa)
    assert tie["lead"] == 0.0
