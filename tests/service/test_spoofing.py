"""Display spoofing over gRPC, on both stores: bidi overrides and embeddings never stored
or echoed; balanced isolates kept (the rule: docs/nlp.md, nlp/normalize.py).

U+202A LRE, U+202B RLE, U+202D LRO, U+202E RLO and their closer U+202C PDF are
removed, balanced or not («طلبي \u202e48213\u202c» would show the order number
reversed to a human agent). U+2066 LRI / U+2067 RLI / U+2068 FSI … U+2069 PDI
stay when balanced (an English name inside Arabic), an unbalanced one goes.
Checked in what the client sees (``turn_started``, the reply, ``GetThread``) and
in the database itself (every SQLite file byte, every PostgreSQL row).
"""

from __future__ import annotations

import uuid
from typing import Any

from tests.fakes import ScriptedOpenAIServer, ScriptedReply
from tests.service.conftest import collect
from tests.service.test_pii_storage import _scan_postgres, _scan_sqlite

OVERRIDES = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e"]
ISOLATED = "\u2067iPhone 15\u2069"  # RLI … PDI, balanced: kept
TYPED = (f"طلبي رقم \u202e48213\u202c ما وصل، \u202bمرحبا\u202c و\u202dABC\u202c "
         f"والسعر {ISOLATED} و\u2066بلا إغلاق")
STORED = f"طلبي رقم 48213 ما وصل، مرحبا وABC والسعر {ISOLATED} وبلا إغلاق"
MODEL_REPLY = f"طلبك رقم \u202e48213\u202c في الطريق مع {ISOLATED} \u202aاليوم"


def _forms() -> list[str]:
    # As stored bytes, and as a JSON escape (a store writing ensure_ascii JSON).
    return [*OVERRIDES, *(f"\\u{ord(c):04x}" for c in OVERRIDES)]


def _scan(svc: Any, backend: str, forms: list[str] | None = None) -> list[str]:
    if backend == "postgres":
        return _scan_postgres(svc.settings.database_dsn(), forms or _forms())
    return _scan_sqlite(svc.settings.data_dir, forms or _forms())


def _has_override(text: str) -> bool:
    return any(c in text for c in OVERRIDES)


async def test_overrides_are_removed_isolates_kept_offline(run_service, backend: str) -> None:
    user = f"bidi-{uuid.uuid4().hex[:8]}"
    async with run_service() as svc:
        events = await collect(svc.client.send(TYPED, user_id=user))
        view = await svc.client.get_thread(events[-1].thread_id, user_id=user)
        leaks = _scan(svc, backend)
        kept = _scan(svc, backend, [ISOLATED])
    assert kept == [ISOLATED]  # the balanced isolate is in the stored rows, as typed
    assert events[0].turn_started.user_text == STORED
    assert view.messages[0].text == STORED
    reply = events[-1].turn_completed.text
    assert reply and not _has_override(reply) and not _has_override(str(events))
    assert leaks == []


async def test_a_model_reply_loses_its_overrides_too(
    run_service, backend: str, openai_server: ScriptedOpenAIServer,
) -> None:
    """The model may echo spoofing (from a document, a tool): the reply streamed, the
    reply completed and the reply stored carry no override; the balanced isolate stays."""
    user = f"bidi-m-{uuid.uuid4().hex[:8]}"
    openai_server.push(ScriptedReply.text(MODEL_REPLY))
    async with run_service(model_base_url=openai_server.base_url) as svc:
        events = await collect(svc.client.send(TYPED, user_id=user))
        view = await svc.client.get_thread(events[-1].thread_id, user_id=user)
        leaks = _scan(svc, backend)
    sent = openai_server.bodies[0]["messages"][-1]["content"]
    assert sent == STORED  # the model got the cleaned text
    streamed = "".join(e.text_delta.text for e in events if e.HasField("text_delta"))
    done = events[-1].turn_completed.text
    assert streamed == done == f"طلبك رقم 48213 في الطريق مع {ISOLATED} اليوم"
    assert [m.text for m in view.messages] == [STORED, done]
    assert leaks == []
