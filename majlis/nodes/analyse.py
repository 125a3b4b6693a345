"""analyse: what did the user write — script, cues, the message's dialect, the thread's."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import nlp
from majlis import culture
from majlis.culture import load_greetings
from majlis.records import Analysis
from majlis.state import ThreadState
from nlp.dialect_thread import ThreadDialect, message_evidence, shared_words

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


def shared_greeting_phrases() -> Iterable[str]:
    """The greeting table's phrases every region says (السلام عليكم، مرحبا، شكرا …)."""
    for entry in load_greetings().entries.values():
        yield from entry.match.get("common", ())


class Analyse:
    """Reads the message: script (Arabic/Latin/Arabizi/mixed), cues, its dialect, the thread's.

    The thread's dialect is a posterior accumulated over its turns
    (:class:`nlp.dialect_thread.ThreadDialect`) with the caller's country as a
    prior; a message without regional evidence leaves it where it was:
    "ابي اعرف وين طلبي" then "السلام عليكم" is still gulf, and "السلام عليكم"
    alone is no dialect at all ("msa", confidence 0) rather than iraqi.
    """

    def __init__(self, identifier: nlp.DialectIdentifier,
                 shared: Iterable[str] | None = None) -> None:
        self._identifier = identifier
        self._shared = shared_words(shared_greeting_phrases() if shared is None else shared)

    def __call__(self, state: ThreadState) -> dict[str, Any]:
        inp = state["input"]
        text = inp.text
        evidence = message_evidence(self._identifier, text, shared=self._shared)
        thread = ThreadDialect.from_dict(state.get("dialect_thread")).observe(evidence)
        seen = thread.with_prior(COUNTRY_REGION.get(inp.country or ""))
        message = evidence.message
        regional = message is not None and bool(evidence.weight)
        return {"analysis": Analysis(
            script=str(nlp.detect_script(text)),
            dialect=seen.region,
            dialect_confidence=round(float(seen.confidence), 4),
            dialect_backed=seen.backed,
            cues=culture.read_cues(text),
            # "" when the message carries no regional evidence (a shared
            # greeting, a number, an order id).
            message_dialect=message.region if message is not None and regional else "",
            message_dialect_confidence=(
                round(float(message.confidence), 4) if message is not None and regional
                else 0.0),
            dialect_weight=evidence.weight,
            # Committed to the thread by the last node only (see majlis.state);
            # stored without the prior, which follows each turn's country.
            dialect_thread=thread.to_dict(),
        )}
