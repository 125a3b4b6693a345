"""analyse: what did the user write — script, dialect (pooled over the thread)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import nlp
from majlis.state import ThreadState

# How many past messages' dialect evidence to pool. Recent messages dominate
# because a user who switches to MSA for a formal complaint should be mirrored.
HISTORY = 12

# The caller's country hint (ISO 3166-1) as a region, grouped as in the
# training data (see ../shared/data/SOURCES.md): Yemen with the Gulf, Sudan
# with Egypt.
COUNTRY_REGION: dict[str, str] = {
    **dict.fromkeys(("AE", "BH", "KW", "OM", "QA", "SA", "YE"), "gulf"),
    "IQ": "iraqi",
    **dict.fromkeys(("EG", "SD"), "egyptian"),
    **dict.fromkeys(("JO", "LB", "PS", "SY"), "levantine"),
    **dict.fromkeys(("DZ", "LY", "MA", "TN", "MR"), "maghrebi"),
}
# Weight of the country prior: enough to settle an ambiguous "صباح الخير",
# too little to overrule a message that clearly reads as another dialect
# (an Egyptian customer of a Kuwaiti company is mirrored as Egyptian).
COUNTRY_WEIGHT = 0.35


class Analyse:
    """Reads the message: script (Arabic/Latin/Arabizi/mixed) and dialect region.

    Dialect evidence is pooled across the thread: "شلونك" alone says gulf or
    iraqi; three messages in, the thread's region is stable.
    """

    def __init__(self, identifier: nlp.DialectIdentifier) -> None:
        self._identifier = identifier

    def __call__(self, state: ThreadState) -> dict[str, Any]:
        turn = state["turn"]
        text = turn["text"]
        script = nlp.detect_script(text)
        source = nlp.arabizi_to_arabic(text) if script == nlp.Script.ARABIZI else text
        result = self._identifier.identify(source)
        prior = COUNTRY_REGION.get(turn.get("country") or "")
        if prior is not None:
            result = _with_prior(result, prior)
        history: Sequence[dict[str, Any]] = state.get("dialect_history", [])
        past = [nlp.DialectResult(h["region"], h["confidence"], h["scores"]) for h in history]
        pooled = nlp.pool_dialects([*past, result]) if past else result
        record = {"region": result.region, "confidence": result.confidence,
                  "scores": dict(result.scores)}
        return {
            "turn": {
                "script": str(script),
                "dialect": pooled.region,
                "dialect_confidence": round(float(pooled.confidence), 4),
                "message_dialect": result.region,
                # Committed to the thread by the last node only (see majlis.state).
                "dialect_history": [*history, record][-HISTORY:],
            },
        }


def _with_prior(result: nlp.DialectResult, region: str) -> nlp.DialectResult:
    """Blend the message's scores with a one-hot prior on ``region``.

    >>> r = nlp.DialectResult("maghrebi", 0.32, {"maghrebi": 0.32, "gulf": 0.30, "msa": 0.38})
    >>> _with_prior(r, "gulf").region
    'gulf'
    """
    scores = {k: (1 - COUNTRY_WEIGHT) * v for k, v in result.scores.items()}
    scores[region] = scores.get(region, 0.0) + COUNTRY_WEIGHT
    best = max(scores, key=lambda k: scores[k])
    return nlp.DialectResult(best, scores[best], scores)
