"""What the offline responder's knowledge-base tests share (test_answer_concepts,
test_answer_candidates, test_framing_words): a recalled policy chunk, the responder
with the shipped bridge and dialect cue, and its knowledge-base answer.

A plain module, not a fixture: the case tables are module constants built with
:func:`doc` at import, and a reply holds no state a test would need set up or
torn down.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import nlp
from majlis.models import Citation, OfflineResponder, Recalled, ResponderContext


def doc(name: str, title: str, text: str, score: float) -> Recalled:
    """A recalled policy chunk ``<name>.md#0`` titled ``<name> › <title>``."""
    return Recalled(id=f"{name}.md#0", kind="document", title=f"{name} › {title}", text=text,
                    snippet="", score=score)


def responder(**options: Any) -> OfflineResponder:
    """The offline responder on the shipped search keys, bridge and dialect cue."""
    return OfflineResponder(keys=nlp.search_keys, expand=nlp.dialect_to_msa,
                            dialect_cue=nlp.has_dialect_words, **options)


def kb_reply(question: str, kb: Sequence[Recalled], *,
             region: str = "gulf") -> tuple[str, list[Citation]]:
    """The knowledge-base part of compose (``_answer``) for ``question`` over ``kb``:
    the reply and the chunks it cites, e.g. «يصير اجيب ضيف معاي؟» over a guests
    policy → ("…ضيف واحد مجانا…", [Citation(guests.md#0)])."""
    extras: list[Any] = []
    ctx = ResponderContext(user_text=question, region=region, is_request=True,
                           recalled=tuple(kb))
    out = responder()._answer(ctx, extras)
    return out, [e for e in extras if isinstance(e, Citation)]
