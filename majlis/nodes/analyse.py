"""analyse: what did the user write — script, dialect (pooled over the thread)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import nlp
from majlis.state import ThreadState

# How many past messages' dialect evidence to pool. Recent messages dominate
# because a user who switches to MSA for a formal complaint should be mirrored.
HISTORY = 12


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
