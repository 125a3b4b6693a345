"""The recall node: a dialect question gets more knowledge-base candidates than an MSA one
(the gRPC side is in tests/service/test_support_kb.py)."""

from __future__ import annotations

import nlp
from majlis.nodes.recall import Recall


def test_documents_k_follows_the_dialect_cue() -> None:
    node = Recall(None, dialect_cue=lambda text: "وش" in text)  # type: ignore[arg-type]
    assert node.documents_k("وش رسوم التوصيل؟") == 5
    assert node.documents_k("ما رسوم التوصيل؟") == 3


def test_the_default_cue_is_the_bridge_lexicon() -> None:
    node = Recall(None)  # type: ignore[arg-type]
    assert node.documents_k("بتوصلوا يوم الجمعة؟") == 5 and nlp.has_dialect_words("بتوصلوا")
    assert node.documents_k("متى يفتح الفرع الرئيسي؟") == 3
